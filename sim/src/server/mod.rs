//! The in-memory ZooKeeper server core: a data tree with sessions, watches,
//! containers and TTL nodes that applies one request for one session at a
//! time and returns the reply plus the watch notifications it triggers.
//!
//! Pure and deterministic: no clock (the driver sets the time), no random
//! source (the order of getChildren results is chosen by the caller's
//! [`ChildOrder`]), ordered collections only. It follows ZooKeeper 3.8
//! (DataTree, PrepRequestProcessor, WatchManager) and is checked against a
//! real 3.8 server by the conformance suite in `live/tests/`.

use serde::{Deserialize, Serialize};
use zk_recipes::zk::{Path, Request, SessionId, WatchedEvent, ZkResult, Zxid};

/// Server settings that change behaviour.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ServerConfig {
    /// `extendedTypesEnabled`: TTL nodes allowed (else `Unimplemented`).
    pub extended_types_enabled: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig { extended_types_enabled: true }
    }
}

/// A watch notification for one session.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Notification {
    pub session: SessionId,
    pub event: WatchedEvent,
}

/// The result of applying one request.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Applied {
    pub result: ZkResult,
    /// The server's last zxid after the request (the reply header's zxid).
    pub zxid: Zxid,
    /// Notifications the request triggered, per session in firing order.
    pub notifications: Vec<Notification>,
}

/// Watches a reconnecting client re-registers (ZooKeeper's SetWatches).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WatchSet {
    pub data: Vec<Path>,
    pub exist: Vec<Path>,
    pub child: Vec<Path>,
}

/// Chooses the order in which getChildren returns names. A real server
/// returns hash order; simulations shuffle with the seed's random source so
/// clients that forget to sort are caught.
pub trait ChildOrder {
    fn arrange(&mut self, names: &mut [String]);
}

/// Returns children sorted by name: for tests and models that want a fixed order.
pub struct SortedOrder;

impl ChildOrder for SortedOrder {
    fn arrange(&mut self, names: &mut [String]) {
        names.sort();
    }
}

/// Shuffles children with a seeded random source.
pub struct ShuffledOrder<'a, R: rand::Rng>(pub &'a mut R);

impl<R: rand::Rng> ChildOrder for ShuffledOrder<'_, R> {
    fn arrange(&mut self, names: &mut [String]) {
        use rand::seq::SliceRandom;
        names.shuffle(self.0);
    }
}

/// Why a session operation was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    #[error("session {0:?} already exists")]
    Duplicate(SessionId),
    #[error("session {0:?} is not alive")]
    NotAlive(SessionId),
}

/// The in-memory ZooKeeper server.
///
/// API contract (implementation: see the server issue):
/// - `apply` on a session that is not alive answers `Err(SessionExpired)`.
/// - Every write request (create, delete, set_data, check, multi), whether
///   it succeeds or fails, and every session open / close consumes one zxid,
///   as ZooKeeper's error transactions do. Reads consume none.
/// - Watches are per session and one-shot; `disconnect` drops a session's
///   server-side watches (the client keeps its own table and re-registers
///   them with `set_watches` on reconnect).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ZkServer {
    _private: (),
}

#[allow(unused_variables)]
impl ZkServer {
    pub fn new(config: ServerConfig) -> ZkServer {
        todo!()
    }

    /// The server clock in ms (set by the driver, never read from the OS).
    pub fn now_ms(&self) -> i64 {
        todo!()
    }

    /// Advances the clock; time never goes backwards (assertion).
    pub fn set_time_ms(&mut self, now_ms: i64) {
        todo!()
    }

    /// The zxid of the last committed transaction.
    pub fn last_zxid(&self) -> Zxid {
        todo!()
    }

    /// Opens a session with a caller-chosen id (drawn from the seed).
    pub fn open_session(&mut self, id: SessionId, timeout_ms: u64) -> Result<(), SessionError> {
        todo!()
    }

    pub fn is_session_alive(&self, id: SessionId) -> bool {
        todo!()
    }

    /// The session's ephemeral nodes, sorted.
    pub fn ephemerals_of(&self, id: SessionId) -> Vec<Path> {
        todo!()
    }

    /// The server heard from the session now (request or ping).
    pub fn touch_session(&mut self, id: SessionId) {
        todo!()
    }

    /// Closes (or expires) a session: deletes its ephemerals in path order,
    /// firing their watches, and forgets the session's watches.
    pub fn close_session(&mut self, id: SessionId) -> Result<Vec<Notification>, SessionError> {
        todo!()
    }

    /// Expires every session not heard from within its timeout; returns the
    /// expired ids and the notifications their ephemerals' deletion fired.
    pub fn expire_due_sessions(&mut self) -> (Vec<SessionId>, Vec<Notification>) {
        todo!()
    }

    /// Applies one request for one session.
    pub fn apply(&mut self, session: SessionId, request: &Request, order: &mut dyn ChildOrder) -> Applied {
        todo!()
    }

    /// The session's connection dropped: its server-side watches are dropped.
    pub fn disconnect(&mut self, session: SessionId) {
        todo!()
    }

    /// Re-registers watches after a reconnect (DataTree.setWatches): fires at
    /// once the watches whose node changed after `relative_zxid`, arms the rest.
    pub fn set_watches(&mut self, session: SessionId, relative_zxid: Zxid, watches: &WatchSet) -> Vec<Notification> {
        todo!()
    }

    /// Reaps containers that had children and have none left, and TTL nodes
    /// without children not modified for their TTL (ContainerManager).
    pub fn reap(&mut self) -> Vec<Notification> {
        todo!()
    }

    /// Starts `parent`'s sequence counter at `next` (e.g. near i32::MAX, to
    /// reproduce wrap-around). The parent must exist.
    pub fn set_sequence_counter(&mut self, parent: &Path, next: i32) -> Result<(), zk_recipes::zk::ZkError> {
        todo!()
    }

    /// Every node path in the tree, sorted (for leak checks and traces).
    pub fn paths(&self) -> Vec<Path> {
        todo!()
    }
}
