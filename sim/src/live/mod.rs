//! The real-server driver's core: the same recipe machines, the same
//! Java-client-like session layer ([`crate::client::ClientSession`]), the
//! same workloads ([`crate::world::workloads`], through [`crate::world::App`])
//! and the same oracles as the simulator, run in wall-clock time against a
//! real ZooKeeper server reached through a [`Backend`].
//!
//! This module does no I/O itself: the backend (the `zk-live` crate, over
//! `zookeeper-client` and a fault-injecting proxy per client) opens
//! sessions, applies requests, hands out watch events and injects the
//! faults. What is here is the logic: which fault strikes when (drawn from
//! the seed exactly as the simulator draws it, [`crate::faults::FaultPlan`]),
//! feeding replies and events to the session layer, the phases (faults,
//! heal, liveness deadline, settle) and the verdict ([`LiveRunner`]).
//!
//! A live run is not deterministic (the network and the server's scheduling
//! are real); the seed decides the workload's draws, the clients' unique ids
//! and the faults, as data.
//!
//! Faults the real world cannot inject are refused before anything runs
//! (`crate::scenario::unsupported`): spurious and delayed watch events, the container
//! reaper on demand, ensemble faults and ensembles, a preset sequence counter.
//! A `silent` connection is the proxy's silence (nothing forwarded, nothing
//! closed): the real client library notices it by its own read timeout and
//! the session layer follows the library's state.

mod app;
mod common;
mod driver;
mod mirror;
mod run_state;

pub use app::LiveClient;
pub use common::{
    end_tree, judge_end, judge_liveness, live_report, prepare, set_up, ClientProgress,
    FencedResource,
};
pub use driver::{live_runner, BoxedWorkload};
pub use mirror::mirror;

use crate::world::RunReport;
use std::future::Future;
use std::pin::Pin;
use zk_recipes::zk::{Path, Request, SessionId, WatchedEvent, ZkResult};

/// A boxed future, as the backend traits return them.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The connection state of a real session, as its client library sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiveState {
    Connected,
    Disconnected,
    /// The server expired the session; the handle is dead.
    Expired,
}

/// A connection loss tied to one request (the simulator's per-request faults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestLoss {
    /// The request is lost before the server applies it, then the connection drops.
    BeforeApply { down_ms: u64 },
    /// The server applies it, its reply is lost, then the connection drops.
    AfterApply { down_ms: u64 },
}

/// One node of the real tree, as the oracles need it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    pub path: Path,
    /// Creation zxid: orders nodes by creation.
    pub czxid: i64,
    /// The owner session of an ephemeral node, else 0.
    pub ephemeral_owner: i64,
}

/// Why the backend could not do what the driver asked.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BackendError(pub String);

/// One client's session on the real server.
pub trait Connection: Send {
    fn session_id(&self) -> SessionId;
    /// The session timeout the server granted.
    fn session_timeout_ms(&self) -> u64;
    /// The state the client library is in now.
    fn state(&mut self) -> LiveState;
    /// Sends one request (losing the connection around it if `loss` says
    /// so) and returns the node events that arrived before its reply, then
    /// the reply.
    fn apply<'a>(
        &'a mut self,
        request: &'a Request,
        loss: Option<RequestLoss>,
    ) -> BoxFuture<'a, (Vec<WatchedEvent>, ZkResult)>;
    /// Node events that arrived since the last call (state changes are read
    /// through [`Connection::state`]).
    fn drain_events(&mut self) -> Vec<WatchedEvent>;
    /// Resolves when an event or a state change may be waiting.
    fn changed(&mut self) -> BoxFuture<'_, ()>;
    /// Drops the connection now; reconnecting fails for `down_ms`.
    fn disconnect(&mut self, down_ms: u64);
    /// The connection goes silent for `down_ms` (`Fault::Silent`): it stays
    /// open, nothing passes either way (what is sent waits), reconnect
    /// attempts hang; the client library notices only at its own read
    /// timeout, the server expires the session past its timeout. Then what
    /// waited is delivered.
    fn silence(&mut self, down_ms: u64);
    /// A process pause: nothing goes in or out until [`Connection::resume`].
    fn pause(&mut self);
    fn resume(&mut self);
    /// Expires the session on the server (a second connection with the
    /// session's id and password, closed).
    fn expire(&mut self) -> BoxFuture<'_, Result<(), BackendError>>;
    /// Lets every fault in force heal (ends holes, silences and pauses).
    fn heal(&mut self);
    /// Closes the session (its ephemerals go).
    fn close(&mut self) -> BoxFuture<'_, ()>;
    /// Client-side expiry: drops the connection for good without closing
    /// the session, which the server keeps (with its ephemerals) until its
    /// own timeout. Only a connection from [`Backend::connect_abandonable`]
    /// is sure to stay on the server.
    fn abandon(&mut self);
}

/// The real server and the clock.
pub trait Backend: Send + Sync {
    /// Opens a new session for a client.
    fn connect(&self) -> BoxFuture<'_, Result<Box<dyn Connection>, BackendError>>;
    /// Opens a new session for a client that may give up on it
    /// ([`Connection::abandon`]; the `client_expiry` policy).
    fn connect_abandonable(&self) -> BoxFuture<'_, Result<Box<dyn Connection>, BackendError>>;
    /// The nodes at and below `dir` (creation order and owners).
    fn snapshot<'a>(&'a self, dir: &'a Path) -> BoxFuture<'a, Result<Vec<NodeInfo>, BackendError>>;
    /// Wall-clock time since `start`, in ns.
    fn now_ns(&self) -> u64;
    fn sleep(&self, ms: u64) -> BoxFuture<'static, ()>;
    /// The first failure of the harness's own resources (a socket it could
    /// not open for lack of file descriptors, ...), if one happened: the
    /// driver stops the run, whose verdict is then the harness's error.
    fn local_failure(&self) -> Option<String> {
        None
    }
}

/// Runs one seed of a scenario against a real server.
pub trait LiveRunner: Send + Sync {
    /// `root` is the run's own directory: the scenario's paths are under it.
    fn run<'a>(
        &'a self,
        seed: u64,
        root: &'a Path,
        backend: std::sync::Arc<dyn Backend>,
    ) -> BoxFuture<'a, Result<RunReport, BackendError>>;
}
