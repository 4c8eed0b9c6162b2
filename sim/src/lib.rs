//! The simulated ZooKeeper: a pure, deterministic server core ([`server`]),
//! the Java-client-like session layer ([`client`]), a synchronous stepper for
//! unit tests ([`stepper`]), bounded reading of input files ([`input`]), and the simulator: faults as data ([`faults`]),
//! property oracles ([`oracles`]), scenario files ([`scenario`]) and, under
//! `--cfg madsim`, the simulated world ([`world`]).

pub mod client;
pub mod diagnosis;
pub mod faults;
pub mod input;
pub mod oracles;
pub mod scenario;
pub mod server;
pub mod stepper;
pub mod world;
