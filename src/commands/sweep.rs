//! `zkcheck sweep` (not implemented yet).

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct SweepArgs {}

pub fn run(_args: SweepArgs) -> ExitCode {
    eprintln!("zkcheck sweep: not implemented yet");
    ExitCode::from(2)
}
