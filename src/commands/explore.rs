//! `zkcheck explore` (not implemented yet).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ExploreArgs {}

pub fn run(_args: ExploreArgs) -> ExitCode {
    eprintln!("zkcheck explore: not implemented yet");
    ExitCode::from(2)
}
