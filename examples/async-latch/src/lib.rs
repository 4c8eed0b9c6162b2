//! A user's async leader latch (`latch.rs`, plain code against the
//! `zookeeper-client` crate) and, in the checking build, zkcheck's glue
//! around it (`check.rs`).

pub mod latch;

#[cfg(madsim)]
pub mod check;
