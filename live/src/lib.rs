//! The real-ZooKeeper driver: the vocabulary of `zk_recipes::zk` executed on a
//! real ZooKeeper 3.8 server through the `zookeeper-client` crate.
//!
//! [`LiveSession`] is one session: [`LiveSession::apply`] sends a
//! [`zk_recipes::zk::Request`] and returns the [`zk_recipes::zk::ZkResult`] the
//! in-memory server would return for it (a failed multi is
//! `ZkError::MultiFailed { index, error }`), and [`LiveSession::drain_events`] /
//! [`LiveSession::collect_events`] hand out the session's watch notifications
//! as [`zk_recipes::zk::WatchedEvent`]s, once per notification, as the Java
//! client's default watcher sees them.
//!
//! The API is async; run it on a tokio runtime with time enabled (the client
//! spawns its session task on the ambient runtime).
//!
//! ```no_run
//! # async fn demo() -> Result<(), zk_live::LiveError> {
//! use zk_live::LiveSession;
//! use zk_recipes::zk::{Acls, CreateMode, Path, Request};
//! let mut session = LiveSession::connect("127.0.0.1:2181", 10_000).await?;
//! let path = Path::new("/demo").unwrap();
//! let mode = CreateMode::Ephemeral;
//! let created = session.apply(&Request::Create { path, data: vec![], mode, acl: Acls::Open }).await;
//! let events = session.collect_events().await;
//! session.close().await?;
//! # let _ = (created, events); Ok(()) }
//! ```
//!
//! The conformance suite in `tests/conformance.rs` runs the same operation
//! sequences here and on the in-memory server and compares the outcomes.
//!
//! The live driver (`zkcheck live`): [`run_live`] runs a scenario's recipe
//! machines, workloads and oracles (`zk_sim::live`) against the real server
//! through [`ZkBackend`], with real faults (a proxy per client, expiry by a
//! second connection into the session), under a root directory of its own
//! that it removes at the end (also on SIGINT, SIGTERM and SIGHUP);
//! [`preflight`] refuses a wrong address or a server that is not ZooKeeper
//! 3.x and [`descriptors`] a process that cannot open the file descriptors
//! the run needs, before anything is written; [`stale`] finds the roots of
//! runs that were killed and removes them on request.

pub mod admin;
pub mod async_run;
pub mod backend;
mod convert;
pub mod descriptors;
pub mod preflight;
pub mod proxy;
mod remove;
pub mod run;
mod session;
pub mod stale;
pub mod takeover;
mod watches;

pub use backend::ZkBackend;
pub use run::{run_live, LiveOptions, LiveRun, LiveRunError};
pub use session::LiveSession;
use zk_recipes::zk::SessionId;

/// Why a session could not be opened or closed.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("no ZooKeeper session at {addr}: {source}")]
    Connect {
        addr: String,
        source: zookeeper_client::Error,
    },
    #[error("the server did not confirm closing session {session_id:?} in time")]
    CloseTimeout { session_id: SessionId },
}

/// Where the real server is expected when `ZK_ADDR` is not set.
pub const DEFAULT_ZK_ADDR: &str = "127.0.0.1:2181";

/// The server address from `ZK_ADDR`, else [`DEFAULT_ZK_ADDR`].
pub fn zk_addr_from_env() -> String {
    std::env::var("ZK_ADDR").unwrap_or_else(|_| DEFAULT_ZK_ADDR.to_string())
}
