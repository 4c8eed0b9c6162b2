//! `zkcheck check` (not implemented yet).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct CheckArgs {}

pub fn run(_args: CheckArgs) -> ExitCode {
    eprintln!("zkcheck check: not implemented yet");
    ExitCode::from(2)
}
