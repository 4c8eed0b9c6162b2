//! The simulated ZooKeeper: a pure, deterministic server core ([`server`]),
//! replicated as an ensemble with a leader and lagging followers ([`ensemble`]),
//! the Java-client-like session layer ([`client`]), a synchronous stepper for
//! unit tests ([`stepper`]), bounded reading of input files ([`input`]), and the simulator: faults as data ([`faults`]),
//! property oracles ([`oracles`]), scenario files ([`scenario`]) and, under
//! `--cfg madsim`, the simulated world ([`world`]); the same recipes,
//! workloads and oracles against a real server behind a backend ([`live`]).

pub mod abstraction;
pub mod async_recipe;
pub mod client;
pub mod diagnosis;
pub mod echo;
pub mod ensemble;
#[cfg(madsim)]
pub mod explore;
pub mod faults;
pub mod finding;
#[cfg(madsim)]
pub mod guided;
pub mod input;
pub mod live;
pub mod oracles;
#[cfg(madsim)]
pub mod precision;
pub mod scenario;
pub mod server;
pub mod stepper;
pub mod units;
pub mod world;
