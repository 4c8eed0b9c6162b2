//! `zkcheck`: the command line of the ZooKeeper recipe checker.
//!
//! Exit status, in order of precedence:
//! - 1: a property was violated (also a non-deterministic run under
//!   `--check-determinism`); an output error after a violation was found
//!   (an unwritable `--json` file, say) is reported but never hides it;
//! - 2: bad input (file, line and key named), a run that could not have
//!   failed (no workload made progress), or an output file that cannot be
//!   written;
//! - 0: every property holds.

mod commands;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "zkcheck",
    version,
    about = "Deterministic simulation and model checking of ZooKeeper recipes"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one seeded simulation of a scenario.
    Sim(commands::sim::SimArgs),
    /// Run a scenario over a range of seeds on all cores.
    Sweep(commands::sweep::SweepArgs),
    /// Print the full trace of one seeded run.
    Replay(commands::replay::ReplayArgs),
    /// Model-check a recipe exhaustively with stateright.
    Check(commands::check::CheckArgs),
    /// Serve stateright's explorer for a recipe model on 127.0.0.1.
    Explore(commands::explore::ExploreArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Sim(args) => commands::sim::run(args),
        Command::Sweep(args) => commands::sweep::run(args),
        Command::Replay(args) => commands::replay::run(args),
        Command::Check(args) => commands::check::run(args),
        Command::Explore(args) => commands::explore::run(args),
    }
}
