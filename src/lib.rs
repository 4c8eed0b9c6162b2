//! zkcheck as a library: the command line on any set of recipes, and a
//! test API for a user's own `cargo test`.
//!
//! - [`main_with`] runs every subcommand (`sim`, `sweep`, `merge`, `replay`,
//!   `check`, `explore`, `herd`, `live`) on the recipes of a [`Registry`]:
//!   the built-in ones, a user's own ([`RecipeEntry`]), or both. `zkcheck`
//!   itself is `main_with(Registry::builtin())`.
//! - [`testing`] sweeps seeds or model-checks a small case inside a
//!   `#[test]`, failing with the seed and the exact command that
//!   reproduces it.
//!
//! The simulator exists only with `--cfg madsim`, which `.cargo/config.toml`
//! sets. A build without it (a RUSTFLAGS override: what `zkcheck live` needs
//! for an async recipe, whose tokio and `zookeeper-client` must then be the
//! real ones) is live-only: it offers `live`, `check`, `explore`, `recipes`
//! and `report`, but neither `testing` nor `bench`; naming a simulator
//! command (`sim`, `sweep`, `merge`, `replay`, `bugs`, `herd`, `bench`)
//! exits 2 saying it needs the simulator, and so does `live --vs-sim`.
//!
//! A recipe is a sans-IO machine ([`recipes::Recipe`]); register it with
//! its name, kind, default directory and variants, and scenario files and
//! `check` name it like a built-in (docs/own-recipe.md walks through it).
//! Or it is the application's own async code against the `zookeeper-client`
//! crate, unchanged ([`asynchronous`], docs/async-recipe.md).
//!
//! Exit status of the command line, in order of precedence:
//! - 1: a property was violated (also a non-deterministic run under
//!   `--check-determinism`); an output error after a violation was found
//!   (an unwritable `--json` file, say) is reported but never hides it;
//! - 3: zkcheck itself failed, never the recipe: a panic inside a run
//!   (with its seed and replay command), or a `replay` of a schedule the
//!   simulator disagrees with;
//! - 2: bad input (file, line and key named), a run that could not have
//!   failed (no workload made progress, or the faults left it less than
//!   3% of its planned goals), or an output file that cannot be written;
//! - 4: a bounded search found nothing (`check` stopped by `--depth`,
//!   `--timeout`, a memory budget or its lasso limits, random walks, a
//!   `--clients` range with a count not searched exhaustively): not a pass;
//! - 0: every property holds, and every search was exhaustive.

pub mod asynchronous;
#[cfg(madsim)]
pub mod bench;
mod commands;
/// A sweep's result as `sweep --json` writes it and `merge` reads it
/// (docs/report-schema.md), with its `digest`: for tools that read or
/// write shard files.
#[cfg(madsim)]
pub use commands::sweep_result::SweepJson;
#[cfg(madsim)]
pub mod testing;

/// The model checker (`zk-models`): stateright models, schedules.
pub use zk_models as models;
pub use zk_models::registry::shapes;
pub use zk_models::registry::VariantTable;
pub use zk_models::{observe_calls, observe_outcomes};
pub use zk_models::{
    stateright, BarrierCalls, ClientContext, HoldCalls, QueueCalls, RecipeEntry, RecipeKind,
    Registry, Variant,
};
/// The recipe contract and ZooKeeper vocabulary (`zk-recipes`).
pub use zk_recipes as recipes;
/// The simulator (`zk-sim`): scenarios, the madsim world, the oracles.
pub use zk_sim as sim;
pub use zk_sim::oracles::{CallObservation, ObserveCall};

use clap::{Parser, Subcommand};
use commands::Harness;
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
    #[cfg(madsim)]
    Sim(commands::sim::SimArgs),
    /// Run a scenario over a range of seeds on all cores.
    #[cfg(madsim)]
    Sweep(commands::sweep::SweepArgs),
    /// Search a scenario's world guided by coverage: mutate the draw tapes of runs that reached new states.
    #[cfg(madsim)]
    Fuzz(commands::fuzz::FuzzArgs),
    /// Merge the JSON results of a sweep's shards (`sweep --shard K/N --json`) into one.
    #[cfg(madsim)]
    Merge(commands::merge::MergeArgs),
    /// Print the full trace of one seeded run.
    #[cfg(madsim)]
    Replay(commands::replay::ReplayArgs),
    /// Model-check a recipe exhaustively with stateright.
    Check(Box<commands::check_args::CheckArgs>),
    /// Serve stateright's explorer for a recipe model on 127.0.0.1.
    Explore(commands::explore::ExploreArgs),
    /// List the registered recipes, their kinds and variants.
    Recipes,
    /// Run the bug catalog: every known bug by simulation and model checking, and its fix.
    #[cfg(madsim)]
    Bugs(commands::bugs::BugsArgs),
    /// Render a saved report (`--report DIR`'s JSON) as HTML, Markdown or JUnit XML.
    Report(commands::report::ReportArgs),
    /// The herd-effect figure: notifications per release and reads per acquisition against clients.
    #[cfg(madsim)]
    Herd(commands::herd::HerdArgs),
    /// The simulator's speed: requests per core and on all cores, cost against clients and cycles.
    #[cfg(madsim)]
    Bench(commands::bench::BenchArgs),
    /// Run a scenario against a real ZooKeeper 3.x with real faults.
    Live(commands::live::LiveArgs),
    /// Any other name: a simulator command this build lacks, or a typo.
    #[cfg(not(madsim))]
    #[command(external_subcommand)]
    Other(Vec<String>),
}

/// The commands that run the simulator: built only with `--cfg madsim`.
#[cfg(not(madsim))]
const SIMULATOR_COMMANDS: [&str; 8] = [
    "sim", "sweep", "fuzz", "merge", "replay", "bugs", "herd", "bench",
];

/// The `zkcheck` command line on the recipes of `registry`: parses the
/// process's arguments, runs the subcommand, returns its exit status.
/// Printed replay commands start with the program as it was started.
pub fn main_with(registry: Registry) -> ExitCode {
    quit_quietly_on_closed_pipe();
    let cli = Cli::parse();
    let harness = Harness::new(registry, std::env::args().next());
    match cli.command {
        #[cfg(madsim)]
        Command::Sim(args) => commands::sim::run(&harness, args),
        #[cfg(madsim)]
        Command::Sweep(args) => commands::sweep::run(&harness, args),
        #[cfg(madsim)]
        Command::Fuzz(args) => commands::fuzz::run(&harness, args),
        #[cfg(madsim)]
        Command::Merge(args) => commands::merge::run(&harness, args),
        #[cfg(madsim)]
        Command::Replay(args) => commands::replay::run(&harness, args),
        Command::Check(args) => commands::check::run(&harness, *args),
        Command::Explore(args) => commands::explore::run(&harness, args),
        Command::Recipes => commands::recipes::run(&harness),
        Command::Report(args) => commands::report::run(args),
        #[cfg(madsim)]
        Command::Bugs(args) => commands::bugs::run(&harness, args),
        #[cfg(madsim)]
        Command::Herd(args) => commands::herd::run(&harness, args),
        #[cfg(madsim)]
        Command::Bench(args) => commands::bench::run(&harness, args),
        Command::Live(args) => commands::live::run(&harness, args),
        #[cfg(not(madsim))]
        Command::Other(words) => not_in_this_build(&words),
    }
}

/// Output piped into a reader that stops early (`zkcheck recipes | head`)
/// ends the process quietly, as other command-line tools do, instead of a
/// panic in `println!`: Rust ignores SIGPIPE, this restores its default.
/// Sockets are unaffected (the standard library sends with MSG_NOSIGNAL, so
/// a closed connection is still an error to the live driver, not a signal).
fn quit_quietly_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any thread exists; setting
    // a signal's disposition to the default is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// A subcommand this build does not have: a simulator command says why
/// (exit 2); any other name is clap's unrecognized subcommand (exit 2).
#[cfg(not(madsim))]
fn not_in_this_build(words: &[String]) -> ExitCode {
    let name = words.first().map(String::as_str).unwrap_or_default();
    if !SIMULATOR_COMMANDS.contains(&name) {
        let message = format!("unrecognized subcommand '{name}'");
        <Cli as clap::CommandFactory>::command()
            .error(clap::error::ErrorKind::InvalidSubcommand, message)
            .exit();
    }
    eprintln!(
        "error: `zkcheck {name}` needs the simulator, and this binary was built without `--cfg madsim` (a live-only build: the application's own tokio and zookeeper-client are the real ones). Build without a RUSTFLAGS override (`.cargo/config.toml` sets `--cfg madsim`) to simulate."
    );
    ExitCode::from(commands::common::EXIT_BAD_INPUT)
}
