//! The madsim world: the recipe clients, the server and the network as
//! simulated processes, driven by one seed.
//!
//! - The server is a simulated service on its own node: the pure core
//!   ([`crate::server::ZkServer`]) behind a thin async shell that also plays
//!   the network: one event queue, ordered by simulated time, holds the
//!   messages in flight, the server's ticks (session expiry, container
//!   reaper) and the scheduled faults (`shell`).
//! - Every client is a simulated node (madsim can pause it) running two
//!   tasks: the connection task, which feeds the Java-client-like session
//!   layer ([`crate::client::ClientSession`]) with what arrives and puts what
//!   the recipe emits on the wire (`connection`), and the application
//!   workload, async code that drives the recipe through a [`Client`]
//!   handle ([`workloads`] has the built-in ones; a user's own async
//!   workload runs the same way). While a client runs, what reaches it is
//!   handled at the instant it arrives without a task switch (the
//!   scheduler calls the same code the connection task would); while its
//!   node is paused, it waits in the inbox for the connection task.
//! - Oracles ([`crate::oracles`]) watch calls, outcomes, notifications and
//!   reads from outside the recipes.
//!
//! Running a recipe with a workload of one's own:
//!
//! ```text
//! let sim = Simulation::new(config, |client, unique_id| MyRecipe::new(unique_id), |client| async move {
//!     client.call(MyCall::Lock);
//!     let outcome = client.next_outcome().await;   // simulated time passes
//!     client.sleep_ms(10).await;
//!     client.call(MyCall::Unlock);
//! });
//! let report = sim.run(seed);                      // a fresh madsim runtime per seed
//! ```
//!
//! Determinism: all randomness comes from the seed (madsim's scheduler and
//! separate seeded streams for latencies, faults, ids and child order; a
//! run can record its streams' words as a tape and replay them: [`draws`];
//! an explored run reads its choices from the choice tape instead:
//! [`choice_tape`], with [`server_fault_choices`] and [`split_mix`]),
//! time is madsim's simulated clock, collections are ordered, and no OS
//! thread is started inside a run.

pub mod adapters;
pub mod app;
#[cfg(madsim)]
mod app_events;
pub mod async_bridge;
#[cfg(madsim)]
pub mod choice_tape;
#[cfg(madsim)]
mod client;
mod config;
#[cfg(madsim)]
mod connection;
pub mod coverage;
#[cfg(madsim)]
mod crate_ticks;
pub mod draws;
#[cfg(madsim)]
mod events;
#[cfg(madsim)]
pub mod fault_allowance;
pub mod isolated;
mod report;
#[cfg(madsim)]
mod run;
#[cfg(madsim)]
pub mod server_fault_choices;
#[cfg(madsim)]
mod server_faults;
#[cfg(madsim)]
mod servers;
#[cfg(madsim)]
mod settle;
#[cfg(madsim)]
mod shared;
#[cfg(madsim)]
mod shell;
#[cfg(madsim)]
pub mod split_mix;
#[cfg(madsim)]
pub mod tape_file;
mod trace;
pub mod workloads;

pub use app::{App, SimRecipe};
#[cfg(madsim)]
pub use app_events::AppEvents;
#[cfg(madsim)]
pub use client::Client;
pub use config::{LatencyModel, ReconnectTiming, WorldConfig};
pub use coverage::Coverage;
pub use report::{min_goals, RunReport, RunStats, MIN_GOAL_PERCENT};
#[cfg(madsim)]
pub use run::{BoxedWorkload, Simulation};
pub use trace::{Trace, TraceKind, TraceLine};
