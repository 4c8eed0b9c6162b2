//! `zkcheck replay` (not implemented yet).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ReplayArgs {}

pub fn run(_args: ReplayArgs) -> ExitCode {
    eprintln!("zkcheck replay: not implemented yet");
    ExitCode::from(2)
}
