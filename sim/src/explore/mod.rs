//! Exhaustive exploration of a simulated world by re-execution (async
//! recipes, whose state cannot be cloned or hashed, are checked this way).
//!
//! - [`tape`]: the choice tape, the one place an explored world reads its
//!   choices from (which client's request the server applies next, which
//!   fault strikes a request), and where it logs the choice points it met.
//!   It is the world's (`crate::world::choice_tape`, with
//!   [`server_faults`] and [`split_mix`]): the world reads it, the search
//!   here writes it; named here too for the explorer's users.
//! - [`search`]: depth-first search over those choices by re-execution,
//!   with a delay bound (iterative deepening on it), a memo of visited
//!   states, and execution and time bounds.
//! - [`file`](mod@file): a counterexample as a file (`zkcheck replay` runs it).
//! - [`run`]: the explored world of an async recipe, one execution, a
//!   whole exploration, the replay of a choice file.
//! - [`server_faults`]: ensemble faults as choices (a lag spike, a crash,
//!   a partition, a leader lost) and the shape each takes.
//! - [`runtime_seeds`]: the madsim seeds a search runs its world under
//!   (what a choice string does not decide: the runtime's task order, an
//!   unbiased `select!`, the streams the tape does not enumerate).
//! - [`split_mix`]: the small deterministic generator PCT and a sampling
//!   tape draw from.
//! - [`pct`]: random sampling of the same choices for larger cases: PCT
//!   (priority change points) and uniform random choices.

pub mod file;
pub mod pct;
pub mod run;
pub mod runtime_seeds;
pub mod search;
pub use crate::world::choice_tape as tape;
pub use crate::world::server_fault_choices as server_faults;
pub use crate::world::split_mix;

pub use runtime_seeds::RuntimeSeeds;
pub use server_faults::{ServerFaultChoice, ServerFaultShapes};
pub use tape::{
    ChoiceKind, ChoicePoint, DurationPoints, FaultAllowance, FaultChoice, Memo, StrikeChoice, Tape,
};
