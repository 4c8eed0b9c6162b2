//! The in-memory ZooKeeper server core: a data tree with sessions, watches,
//! containers and TTL nodes that applies one request for one session at a
//! time and returns the reply plus the watch notifications it triggers.
//!
//! Pure and deterministic: no clock (the driver sets the time), no random
//! source (the order of getChildren results is chosen by the caller's
//! [`ChildOrder`]), ordered collections only. It follows ZooKeeper 3.8
//! (DataTree, PrepRequestProcessor, WatchManager) and is checked against a
//! real 3.8 server by the conformance suite in `live/tests/`.
//!
//! Layout: `node` (a znode and its stat), `tree` (the nodes and their
//! indexes; changes and their undo), `writes` (PrepRequestProcessor's checks
//! for create / delete / set_data / check / setACL), `access` (ACLs,
//! addAuth and the permission check), `multi`, `watches` (WatchManager
//! and setWatches), `sessions`, `reaper` (ContainerManager), `requests`
//! (one request end to end) and `shared` (how the tree, the watch tables
//! and the session table are shared between the model checker's states:
//! a write that would change nothing is not made, so a part is copied
//! only when it changes).
//!
//! Two 3.8.0 behaviours that surprise (both probed on the real server):
//! - a client sees `ephemeralOwner = 0` for containers and TTL nodes
//!   ([`NodeKind::client_ephemeral_owner`]); [`ZkServer::node_kind`] tells them apart;
//! - the sequence counter does not wrap between requests: once a parent's
//!   counter reaches `i32::MAX`, DataTree refuses to move it (its
//!   `parentCVersion > cversion` guard), so every later sequential create
//!   under that parent is named `...2147483647` again (NodeExists while that
//!   node exists). Only inside one multi do later ops see the wrapped
//!   counter (`-2147483648`, Java's `%010d`).

mod access;
mod multi;
mod node;
mod reaper;
mod rename;
mod requests;
mod sessions;
mod shared;
mod tree;
mod watches;
mod writes;

pub use access::{digest_of, CLIENT_ADDRESS};
pub use node::{NodeKind, MAX_TTL_MS};
pub use requests::CONFIG_NODE;

use serde::{Deserialize, Serialize};
use sessions::SessionTable;
use shared::Shared;
use tree::DataTree;
use watches::WatchTable;
use zk_recipes::zk::{
    AddWatchMode, Path, Request, SessionId, Stat, WatchedEvent, ZkError, ZkResult, Zxid,
};

/// Server settings that change behaviour.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ServerConfig {
    /// `extendedTypesEnabled`: TTL nodes allowed (else `Unimplemented`).
    pub extended_types_enabled: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            extended_types_enabled: true,
        }
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

/// Watches a reconnecting client re-registers (ZooKeeper's SetWatches2:
/// its one-shot lists, then its persistent and recursive ones).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WatchSet {
    pub data: Vec<Path>,
    pub exist: Vec<Path>,
    pub child: Vec<Path>,
    /// `addWatch` PERSISTENT watches.
    #[serde(default)]
    pub persistent: Vec<Path>,
    /// `addWatch` PERSISTENT_RECURSIVE watches.
    #[serde(default)]
    pub recursive: Vec<Path>,
}

/// Chooses the order of what a real server keeps in a hash set: the names
/// getChildren returns, and the ephemerals a closing session loses (in
/// that order their deletions fire watches). Simulations shuffle with the
/// seed's random source so clients that rely on an order are caught.
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

/// Arranges children in the `n`-th permutation of sorted order (the Lehmer
/// code of `n`; 0 is sorted): how the model checker enumerates every order
/// a server may return, and how a replay of its schedule repeats one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PermutedOrder(pub u16);

impl ChildOrder for PermutedOrder {
    fn arrange(&mut self, names: &mut [String]) {
        names.sort();
        let mut pool: Vec<String> = names.to_vec();
        let mut code = usize::from(self.0);
        for slot in names.iter_mut() {
            let radix = pool.len();
            *slot = pool.remove(code % radix);
            code /= radix;
        }
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
/// API contract:
/// - `apply` on a session that is not alive answers `Err(SessionExpired)`;
///   on a live one it also counts as hearing from the session (as a real
///   server touches a session on every request).
/// - Every write request (create, delete, set_data, check, multi), whether
///   it succeeds or fails, and every session open / close consumes one zxid,
///   as ZooKeeper's error transactions do. Reads consume none.
/// - Watches are per session, one-shot or (`addWatch`) persistent, for a
///   path or recursively for its subtree; `disconnect` drops a session's
///   server-side watches (the client keeps its own table and re-registers
///   them with `set_watches` on reconnect).
/// - Within one trigger, notifications are ordered by session id.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ZkServer {
    config: ServerConfig,
    now_ms: i64,
    last_zxid: Zxid,
    tree: Shared<DataTree>,
    watches: Shared<WatchTable>,
    sessions: Shared<SessionTable>,
}

impl ZkServer {
    /// A server holding only the root node `/`, at time 0 and zxid 0.
    /// (A real server also has `/zookeeper`; it is not modelled.)
    pub fn new(config: ServerConfig) -> ZkServer {
        ZkServer {
            config,
            now_ms: 0,
            last_zxid: 0,
            tree: Shared::new(DataTree::new()),
            watches: Shared::new(WatchTable::default()),
            sessions: Shared::new(SessionTable::default()),
        }
    }

    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The server clock in ms (set by the driver, never read from the OS).
    pub fn now_ms(&self) -> i64 {
        self.now_ms
    }

    /// Advances the clock; time never goes backwards (assertion).
    pub fn set_time_ms(&mut self, now_ms: i64) {
        assert!(
            now_ms >= self.now_ms,
            "time goes backwards: {} -> {now_ms}",
            self.now_ms
        );
        self.now_ms = now_ms;
    }

    /// The zxid of the last committed transaction.
    pub fn last_zxid(&self) -> Zxid {
        self.last_zxid
    }

    /// Opens a session with a caller-chosen id (drawn from the seed).
    /// Consumes one zxid; the session was heard from now.
    pub fn open_session(&mut self, id: SessionId, timeout_ms: u64) -> Result<(), SessionError> {
        self.sessions.open(id, timeout_ms, self.now_ms)?;
        self.next_zxid();
        Ok(())
    }

    pub fn is_session_alive(&self, id: SessionId) -> bool {
        self.sessions.is_alive(id)
    }

    /// The live sessions, in id order.
    pub fn live_sessions(&self) -> Vec<SessionId> {
        self.sessions.live.keys().copied().collect()
    }

    /// The session's ephemeral nodes, sorted.
    pub fn ephemerals_of(&self, id: SessionId) -> Vec<Path> {
        self.tree.ephemerals_of(id).cloned().collect()
    }

    /// The server heard from the session now (request or ping); ignored
    /// for a session that is not alive.
    pub fn touch_session(&mut self, id: SessionId) {
        self.heard_from(id);
    }

    /// Closes (or expires) a session: one zxid; deletes its ephemerals in
    /// the order `order` arranges their paths (a real server walks a hash
    /// set: [`SortedOrder`] for a fixed order, a seeded shuffle in
    /// simulations, each permutation in the model), firing watches, then
    /// forgets the session's watches.
    pub fn close_session(
        &mut self,
        id: SessionId,
        order: &mut dyn ChildOrder,
    ) -> Result<Vec<Notification>, SessionError> {
        self.end_session(id, order)
    }

    /// The sessions not heard from within their timeout, in id order (what
    /// [`ZkServer::expire_due_sessions`] would expire now).
    pub fn due_sessions(&self) -> Vec<SessionId> {
        self.sessions.due(self.now_ms)
    }

    /// Expires, in id order, every session not heard from within its
    /// timeout (`now >= last heard + timeout`); returns the expired ids and
    /// the notifications their ephemerals' deletion fired (each session's
    /// ephemerals in the order `order` arranges them).
    pub fn expire_due_sessions(
        &mut self,
        order: &mut dyn ChildOrder,
    ) -> (Vec<SessionId>, Vec<Notification>) {
        self.expire_due(order)
    }

    /// Applies one request for one session.
    pub fn apply(
        &mut self,
        session: SessionId,
        request: &Request,
        order: &mut dyn ChildOrder,
    ) -> Applied {
        self.apply_request(session, request, order)
    }

    /// Answers a read for a session this replica may not know yet: a
    /// follower that has not applied the session's createSession still
    /// serves it (the leader validated the session at connect, and
    /// ZooKeeper checks sessions only for writes, in the leader's
    /// PrepRequestProcessor). Panics on a write (a programmer error).
    pub fn serve_read(
        &mut self,
        session: SessionId,
        request: &Request,
        order: &mut dyn ChildOrder,
    ) -> Applied {
        assert!(!request.is_write(), "serve_read answers reads only");
        self.heard_from(session);
        self.apply_unchecked(session, request, order)
    }

    /// The session's connection dropped: its server-side watches are dropped.
    pub fn disconnect(&mut self, session: SessionId) {
        self.forget_watches(session);
    }

    /// Re-registers watches after a reconnect (DataTree.setWatches): fires at
    /// once the one-shot watches whose node changed after `relative_zxid`,
    /// arms the rest; persistent and recursive watches are armed with no
    /// event for what changed meanwhile (as 3.8.0). Lists are handled in
    /// the order data, exist, child, persistent, recursive. Consumes no zxid;
    /// counts as hearing from the session. A dead session gets nothing armed.
    pub fn set_watches(
        &mut self,
        session: SessionId,
        relative_zxid: Zxid,
        watches: &WatchSet,
    ) -> Vec<Notification> {
        if !self.sessions.is_alive(session) {
            return Vec::new();
        }
        self.heard_from(session);
        self.watches
            .reregister(&self.tree, session, relative_zxid, watches)
    }

    /// Reaps containers that had children and have none left, and TTL nodes
    /// without children not modified for their TTL (ContainerManager).
    /// Candidates are chosen first (so a container emptied by this pass is
    /// reaped by the next), then deleted in path order, one zxid each.
    pub fn reap(&mut self) -> Vec<Notification> {
        self.reap_candidates()
    }

    /// Starts `parent`'s sequence counter at `next` (e.g. near i32::MAX, to
    /// reproduce the counter's end, see the module doc). The parent must
    /// exist. The counter is DataTree's internal cversion, so the parent's
    /// visible cversion becomes `2 * next - numChildren` (Java int arithmetic).
    pub fn set_sequence_counter(&mut self, parent: &Path, next: i32) -> Result<(), ZkError> {
        self.tree
            .get_mut(parent)
            .ok_or(ZkError::NoNode)?
            .child_creates = next;
        Ok(())
    }

    /// The number the next sequential create under `parent` gets.
    pub fn sequence_counter(&self, parent: &Path) -> Option<i32> {
        self.tree.get(parent).map(|node| node.child_creates)
    }

    /// Every node path in the tree, sorted, the root `/` included (for leak
    /// checks and traces).
    pub fn paths(&self) -> Vec<Path> {
        self.tree.paths().cloned().collect()
    }

    /// The node's stat as a client would see it, without a session or a watch.
    pub fn stat(&self, path: &Path) -> Option<Stat> {
        self.tree.get(path).map(|node| node.stat())
    }

    /// The node's data, without a session or a watch.
    pub fn data(&self, path: &Path) -> Option<&[u8]> {
        self.tree.get(path).map(|node| node.data.as_slice())
    }

    /// What kind of node `path` is (the stat hides containers and TTL nodes).
    pub fn node_kind(&self, path: &Path) -> Option<NodeKind> {
        self.tree.get(path).map(|node| node.kind)
    }

    // The parts of the server are [`Shared`] between the model checker's
    // states: every write to the session or watch tables goes through the
    // helpers below, which skip a write that would change nothing (so the
    // part is not copied for it).

    /// Records that the server heard from the session now.
    fn heard_from(&mut self, session: SessionId) {
        if self
            .sessions
            .last_heard_ms(session)
            .is_some_and(|heard_ms| heard_ms != self.now_ms)
        {
            self.sessions.touch(session, self.now_ms);
        }
    }

    /// Fires the watches `change` triggers, if any.
    fn fire(&mut self, change: &tree::Change, out: &mut Vec<Notification>) {
        if self.watches.fired_by(change) {
            self.watches.fire(change, out);
        }
    }

    /// Arms a data watch (getData and exists) unless the session has it.
    fn watch_data(&mut self, path: &Path, session: SessionId) {
        if !self.watches.watches_data(path, session) {
            self.watches.watch_data(path, session);
        }
    }

    /// Arms a child watch (getChildren) unless the session has it.
    fn watch_children(&mut self, path: &Path, session: SessionId) {
        if !self.watches.watches_children(path, session) {
            self.watches.watch_children(path, session);
        }
    }

    /// Arms a persistent or recursive watch (addWatch) unless the session
    /// has it.
    fn add_watch(&mut self, path: &Path, session: SessionId, mode: AddWatchMode) {
        if !self.watches.has_watch(path, session, mode) {
            self.watches.add_watch(path, session, mode);
        }
    }

    /// Forgets every watch of the session, if it has any.
    fn forget_watches(&mut self, session: SessionId) {
        if self.watches.has_session(session) {
            self.watches.remove_session(session);
        }
    }

    /// Starts a transaction: the next zxid becomes the last one.
    fn next_zxid(&mut self) -> Zxid {
        self.last_zxid += 1;
        self.last_zxid
    }
}
