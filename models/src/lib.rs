//! stateright models of the recipes: the state holds the in-memory server
//! core, the recipe machines, each client's in-flight requests and pending
//! watch events, and the remaining fault budget. The same recipe code that
//! the simulator runs is explored exhaustively here.
//!
//! - [`server::ModelServer`] is what the clients talk to: one server, or
//!   (`--servers 2`) an ensemble whose follower lags within a budget.
//! - [`model::RecipeModel`] is the generic model; `transition` applies one
//!   action; `app` turns outcomes into what each application believes;
//!   [`properties`] are the named properties.
//! - One module per recipe instantiates it (setup, workload, oracles,
//!   properties) for its `original` and `fixed` variants.
//! - [`run`] runs a checker (stateright's BFS and simulation, or our own
//!   multi-threaded DFS, `dfs`) and turns its discoveries into readable
//!   counterexamples and replayable [`schedule`]s.
//! - [`registry`] is the one door for recipes, built-in or a user's: each
//!   registered variant builds its simulation (for scenario files) and its
//!   model (for `check`, `explore` and schedule replay); a hold recipe gets
//!   a generic model from its constructor and calls.
//! - [`memory`] is the memory budget every search stops at (as at a
//!   timeout), measured from `/proc/self/statm`.
//! - [`lasso`] searches for livelocks: reachable fair cycles in which a
//!   call stays pending (liveness as cycles, reported as lassos).

pub mod action;
mod app;
pub mod cached;
pub mod canonical;
pub mod coverage;
mod dfs;
pub mod faults;
pub mod lasso;
pub mod memory;
pub mod model;
pub mod moves;
pub mod narrate;
pub mod properties;
pub mod reduction;
pub mod registry;
pub mod replay;
pub mod run;
pub mod schedule;
pub mod schedule_check;
pub mod server;
pub mod setup;
pub mod shorten;
pub mod state;
mod transition;
pub mod workload;

pub mod barrier;
pub mod curator_lock;
pub mod election;
pub mod lock;
pub mod queue;
pub mod semaphore;
pub mod shared_lock;

/// The stateright version these models are built on, for a user's own
/// properties and checkers (no direct, version-matched dependency needed).
pub use stateright;

pub use action::Action;
pub use app::sequence_suffix;
pub use faults::{FaultBudget, FaultKind, FaultSpecError};
pub use model::{BarrierSteps, ChildOrderMode, ClientSpec, ModelRecipe, Oracles, RecipeModel};
pub use registry::{ModelVariant, RecipeEntry, Registry, RegistryError, Variant};
pub use setup::Setup;
pub use state::{ClientId, ModelState};
pub use workload::{Gate, WorkStep};
pub use zk_sim::scenario::{ClientContext, RecipeKind};
pub use zk_sim::world::adapters::{BarrierCalls, HoldCalls, QueueCalls};
