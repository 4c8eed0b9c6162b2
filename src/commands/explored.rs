//! What `check` on an explored world runs with ([`Explored`]: the world,
//! the scenario it was narrowed from, the search's bounds and strategy):
//! resolved from the flags by `check_async`, described by `check_world`.

use std::path::PathBuf;
use zk_sim::explore::run::World;
use zk_sim::explore::search::Bounds;
use zk_sim::scenario::Scenario;

/// Most clients `check SCENARIO.toml` takes from the scenario when
/// `--clients` is not given (more makes a search of hours: the summary
/// says the count was bounded).
pub const MAX_SCENARIO_CLIENTS: usize = 3;
/// How `check` explores an async recipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AsyncStrategy {
    /// Depth-first search by re-execution (the default).
    Dfs,
    /// PCT sampling: `runs` runs drawn from `seed`, `depth - 1` priority
    /// change points each.
    Pct { depth: u32, runs: u64, seed: u64 },
}

/// The scenario file `check` was given: where, as written, and its text
/// (a counterexample's choice file carries it).
pub struct Given {
    pub path: PathBuf,
    pub scenario: Scenario,
    pub text: String,
}

/// What `check` on an explored world runs with.
pub struct Explored {
    pub world: World,
    /// The scenario file the world is narrowed from; None: the recipe's
    /// defaults.
    pub given: Option<Given>,
    /// The world's scenario, as the explorer runs it.
    pub scenario: Scenario,
    pub bounds: Bounds,
    /// `--clients` was given (else the count is the default: the
    /// scenario's, at most [`MAX_SCENARIO_CLIENTS`]).
    pub clients_given: bool,
    pub strategy: AsyncStrategy,
}
