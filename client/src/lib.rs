//! `zookeeper-client` for zkcheck: swap it in by package rename,
//! `zookeeper-client = { package = "zkcheck-zookeeper-client", ... }`, and
//! an application's async ZooKeeper code runs unchanged in zkcheck's
//! simulated world.
//!
//! - Without `--cfg madsim` this crate *is* the real `zookeeper-client`
//!   0.11, re-exported: production builds talk to real servers.
//! - With `--cfg madsim` every [`Client`] is a session of zkcheck's
//!   simulated ZooKeeper (one server or an ensemble), and every fault the
//!   seed draws applies to it (`sim` module). The API is the real crate's
//!   for what recipes use; a call it does not cover fails with an error
//!   naming the call.

#[cfg(not(madsim))]
pub use upstream::*;

#[cfg(madsim)]
mod sim;
#[cfg(madsim)]
pub use sim::*;
