//! A user's async leader latch (`latch.rs`, plain code against the
//! `zookeeper-client` crate) and zkcheck's glue around it (`check.rs`).

pub mod latch;

pub mod check;
