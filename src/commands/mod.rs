//! One module per subcommand: its arguments and its `run`. Every `run`
//! takes the [`Harness`]: the registered recipes and the name the program
//! was started by (what a printed replay command starts with). What they
//! share is in [`common`].
//!
//! The simulator's commands (`sim`, `sweep`, `merge`, `replay`, `bugs`,
//! `herd`, `bench`) and their helpers exist only with `--cfg madsim`; the
//! others (`live`, `check`, `explore`, `recipes`, `report`) in every build.

#[cfg(madsim)]
pub mod against_model;
#[cfg(madsim)]
pub mod bench;
#[cfg(madsim)]
pub mod bugs;
pub mod check;
pub mod check_args;
#[cfg(madsim)]
pub mod check_async;
pub mod check_output;
pub mod check_report;
#[cfg(madsim)]
pub mod check_world;
pub mod common;
#[cfg(madsim)]
pub mod coverage_report;
pub mod cutoff;
pub mod explore;
#[cfg(madsim)]
pub mod explored;
#[cfg(madsim)]
pub mod fuzz;
#[cfg(madsim)]
pub mod herd;
#[cfg(madsim)]
pub mod internal_error;
pub mod lasso;
pub mod live;
#[cfg(madsim)]
pub mod merge;
pub mod outputs;
pub mod recipes;
#[cfg(madsim)]
pub mod replay;
#[cfg(madsim)]
pub mod replay_tape;
pub mod report;
#[cfg(madsim)]
pub mod run_output;
pub mod schedule;
#[cfg(madsim)]
pub mod seed_commands;
#[cfg(madsim)]
pub mod sim;
#[cfg(madsim)]
pub mod sweep;
#[cfg(madsim)]
pub mod sweep_result;

use zk_models::Registry;

/// What every subcommand runs against.
pub struct Harness {
    /// The recipes scenario files, schedules and `check` can name.
    pub registry: Registry,
    /// The program as started (`target/release/zkcheck`, a user's own
    /// binary), quoted for a shell: printed replay commands begin with it.
    pub program: String,
}

impl Harness {
    /// The harness of a process started as `argv0` (`zkcheck` if unknown).
    pub fn new(registry: Registry, argv0: Option<String>) -> Harness {
        let program = argv0.filter(|name| !name.is_empty());
        Harness {
            registry,
            program: common::quote(program.as_deref().unwrap_or("zkcheck")),
        }
    }
}
