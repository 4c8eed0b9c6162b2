//! Async recipes written outside zkcheck, plain code against the
//! `zookeeper-client` crate, to measure how often its diagnoses name the
//! right mechanism (issue 40): a leader latch that starts over after a
//! connection loss (`session_latch.rs`), a mutex on one ephemeral node
//! (`lease_mutex.rs`), a semaphore kept in one counter
//! (`counter_semaphore.rs`) and a lock kept in one node's data
//! (`baton.rs`); zkcheck's glue around them (`check.rs`).
//! `tests/precision.rs` holds the labels and the measurement.

pub mod baton;
pub mod counter_semaphore;
pub mod lease_mutex;
pub mod session_latch;

pub mod check;
