//! `zkcheck sim` (not implemented yet).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct SimArgs {}

pub fn run(_args: SimArgs) -> ExitCode {
    eprintln!("zkcheck sim: not implemented yet");
    ExitCode::from(2)
}
