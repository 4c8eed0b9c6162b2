//! The simulated ZooKeeper: a pure, deterministic server core ([`server`]),
//! the Java-client-like session layer ([`client`]), a synchronous stepper for
//! unit tests ([`stepper`]) and, under `--cfg madsim`, the simulated world.

pub mod client;
pub mod server;
pub mod stepper;
