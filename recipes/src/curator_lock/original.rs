//! Curator 2.5.0's InterProcessMutex as seed 002 uses it, bugs included.
//!
//! Seed 002 (`DistributedLockService.doServiceByLock`) builds a NEW
//! `InterProcessMutex(client, granularity)` for every call, acquires it with
//! a 60 s timeout and releases it in `finally`, or, inside a transaction,
//! from an after-completion hook. This machine is one application thread
//! making those calls:
//! - every `Acquire` is a new mutex (re-entrance never applies: a second
//!   acquire of the same key before the deferred release waits for its own
//!   first node until it times out, as the seed's warning says);
//! - `Release` releases the oldest mutex still held (hooks run in order);
//! - parents are persistent (`creatingParentsIfNeeded`, 2.5.0 predates
//!   containers) and stay after release: the seed's cleanup job exists
//!   because of them (known bug 7);
//! - the children are sorted by Curator's string key (the text after
//!   `lock-`) with a stable sort: once the parent's counter sticks at
//!   `2147483647`, nodes share a key and getChildren's order decides;
//! - a holder never watches its session: after an expiry it still believes
//!   it holds (known bug 8) and its release finds NoNode and says Released;
//! - a request that failed with SessionExpired is retried in the new
//!   session with what the thread had (RetryLoop's `shouldRetry` takes
//!   SESSIONEXPIRED): a retried protected create looks for its old
//!   protected id, and `getSortedChildren` reads for its old node. When the
//!   client gave up the session itself (Curator 3.0's client-side expiry)
//!   the server still has the old session's node: the thread adopts it
//!   and holds a lock whose node goes when the server expires the old
//!   session (two holders). Curator 4.2.0 (CURATOR-498) deletes a found
//!   protected node of an earlier session and creates again.
//!
//! Simplification: Curator's RetryLoop (RetryUntilElapsed(30 s, 1 s) in the
//! seed) retries a request that failed with ConnectionLoss or SessionExpired
//! (Curator opens a new handle after an expiry). Here it retries without a
//! budget: a request re-sent while disconnected waits for the reconnect. The
//! budget running out would throw, and since CURATOR-45 (2.2) a lost
//! protected create is then deleted in the background, so the end state is
//! the same. The fencing token is the node's sequence number (the parent is
//! never deleted here, so it only grows until it sticks at `i32::MAX`).

use super::protection::Protection;
use super::sequence::curator_sort_key;
use super::{parents, LockCall, LockError, LockOutcome, LOCK_NAME};
use crate::recipe::{FencingToken, Input, Outbox, Recipe, Tag, TimerId, WatcherId};
use crate::sequence::sequence_after;
use crate::zk::Acls;
use crate::zk::{
    CreateMode, Path, Reply, Request, SessionEvent, SessionId, ZkError, ZkResult, ANY_VERSION,
};

/// `create().creatingParentsIfNeeded().withProtection()...forPath(path)`.
/// LockInternals' `watcher` field: one object for every predecessor watch.
const LOCK_WATCHER: WatcherId = WatcherId(1);

const CREATE: Tag = Tag(1);
/// `ZKPaths.mkdirs`: one persistent ancestor.
const MAKE_PARENT: Tag = Tag(2);
/// `findProtectedNodeInForeground`: getChildren of the lock path.
const FIND_PROTECTED: Tag = Tag(3);
/// `getSortedChildren`.
const READ_CHILDREN: Tag = Tag(4);
/// `getData().usingWatcher(watcher).forPath(previousSequencePath)`.
const WATCH_PREDECESSOR: Tag = Tag(5);
/// `deleteOurPath` after a timeout or a missing node.
const DELETE_OWN: Tag = Tag(6);
/// `release()`: `deleteOurPath`.
const RELEASE: Tag = Tag(7);

/// The timer of a timed acquire.
pub const ACQUIRE_TIMEOUT: TimerId = TimerId(1);

/// What `internalLockLoop` does once its node is deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum AfterDelete {
    /// The wait ran out: `acquire` returns false.
    TimedOut,
    /// Our node was not among the children (NoNodeException): `attemptLock`
    /// tries again from the create.
    Retry,
}

/// Where the thread is inside `acquire` / `release`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Idle,
    /// The protected create is in flight.
    Creating,
    /// The create found no parent: `mkdirs`, ancestor number `level`.
    MakingParents {
        level: usize,
    },
    /// A retry of the create looks for its protected node first.
    FindingProtected,
    /// `getSortedChildren` for our `node` (a child name).
    ReadingChildren {
        node: String,
    },
    /// The getData watch on `predecessor` is being set.
    WatchingPredecessor {
        node: String,
        predecessor: String,
    },
    /// `wait()`: the watcher (any event) or the deadline wakes us.
    Waiting {
        node: String,
    },
    /// `deleteOurPath(node)`, then `then`.
    DeletingOwn {
        node: String,
        then: AfterDelete,
    },
    /// `release()` is deleting `node`.
    Releasing {
        node: String,
    },
}

/// A mutex the application acquired and has not released yet.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct HeldMutex {
    node: String,
    token: FencingToken,
}

/// Seed 002's lock usage on one thread (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OriginalCuratorLock {
    /// The lock path (the seed's `granularity`), e.g. `/locks/order-17`.
    lock_path: Path,
    /// The protection ids of its creates (drawn from the unique id).
    protection: Protection,
    session: Option<SessionId>,
    /// A request failed with SessionExpired: re-send it once a new session
    /// is connected (Curator's RetryLoop on its new ZooKeeper handle).
    retry_in_new_session: bool,
    /// The timed acquire's deadline passed; checked where Curator checks it.
    deadline_passed: bool,
    /// Mutexes held, oldest first.
    held: Vec<HeldMutex>,
    phase: Phase,
}

impl OriginalCuratorLock {
    /// A thread locking `lock_path`; `unique_id` seeds the protection ids.
    pub fn new(lock_path: Path, unique_id: u64) -> OriginalCuratorLock {
        OriginalCuratorLock {
            lock_path,
            protection: Protection::new(unique_id),
            session: None,
            retry_in_new_session: false,
            deadline_passed: false,
            held: Vec::new(),
            phase: Phase::Idle,
        }
    }

    /// The lock path (the seed's `granularity`).
    pub fn lock_path(&self) -> &Path {
        &self.lock_path
    }

    /// How many mutexes the application believes it holds.
    pub fn held_count(&self) -> usize {
        self.held.len()
    }

    fn on_call(&mut self, call: LockCall, out: &mut Outbox<LockOutcome>) {
        if self.phase != Phase::Idle {
            return out.emit(LockOutcome::Failed(LockError::CallOutOfTurn(call)));
        }
        match call {
            // seed 002 doServiceByLock: new InterProcessMutex(...).acquire(60, SECONDS)
            LockCall::Acquire { timeout_ms } => {
                self.deadline_passed = false;
                if let Some(timeout_ms) = timeout_ms {
                    out.set_timer(ACQUIRE_TIMEOUT, timeout_ms);
                }
                self.start_create(out);
            }
            // seed 002 releaseLock -> InterProcessMutex.release()
            LockCall::Release => {
                if self.held.is_empty() {
                    return out.emit(LockOutcome::Failed(LockError::NotHeld));
                }
                let mutex = self.held.remove(0);
                self.release_node(mutex.node, out);
            }
        }
    }

    fn expected_tag(&self) -> Option<Tag> {
        match self.phase {
            Phase::Idle | Phase::Waiting { .. } => None,
            Phase::Creating => Some(CREATE),
            Phase::MakingParents { .. } => Some(MAKE_PARENT),
            Phase::FindingProtected => Some(FIND_PROTECTED),
            Phase::ReadingChildren { .. } => Some(READ_CHILDREN),
            Phase::WatchingPredecessor { .. } => Some(WATCH_PREDECESSOR),
            Phase::DeletingOwn { .. } => Some(DELETE_OWN),
            Phase::Releasing { .. } => Some(RELEASE),
        }
    }

    fn on_reply(&mut self, tag: Tag, result: ZkResult, out: &mut Outbox<LockOutcome>) {
        if self.expected_tag() != Some(tag) {
            // A reply for a step this thread is no longer in: nothing waits for it.
            return;
        }
        match result {
            // RetryLoop: try the same operation again.
            Err(error) if error.is_connection_error() => self.retry(out),
            // RetryLoop on the new handle Curator opens after an expiry.
            Err(ZkError::SessionExpired) => {
                if self.phase == Phase::Creating {
                    self.phase = Phase::FindingProtected;
                }
                self.retry_in_new_session = true;
            }
            result => self.on_answer(result, out),
        }
    }

    /// A reply that RetryLoop does not retry.
    fn on_answer(&mut self, result: ZkResult, out: &mut Outbox<LockOutcome>) {
        match (self.phase.clone(), result) {
            (Phase::Creating, Ok(Reply::Created { path, .. })) => {
                self.read_children(path.name().to_string(), out)
            }
            // CreateBuilderImpl: NoNode with creatingParentsIfNeeded -> mkdirs, create again.
            (Phase::Creating, Err(ZkError::NoNode)) => self.make_parent(0, out),
            (Phase::MakingParents { level }, Ok(_) | Err(ZkError::NodeExists)) => {
                if parents::is_last_mkdirs_step(&self.lock_path, level) {
                    self.create(out);
                } else {
                    self.make_parent(level + 1, out);
                }
            }
            (Phase::FindingProtected, Ok(Reply::Children(children))) => {
                match self.protection.find(children) {
                    Some(node) => self.read_children(node, out),
                    None => self.create(out),
                }
            }
            // findProtectedNodeInForeground ignores NoNode.
            (Phase::FindingProtected, Err(ZkError::NoNode)) => self.create(out),
            (Phase::ReadingChildren { node }, Ok(Reply::Children(children))) => {
                self.decide(node, children, out)
            }
            // getSortedChildren threw NoNode: internalLockLoop deletes our
            // path, attemptLock catches NoNode and starts over.
            (Phase::ReadingChildren { node }, Err(ZkError::NoNode)) => {
                self.delete_own(node, AfterDelete::Retry, out)
            }
            (Phase::WatchingPredecessor { node, .. }, Ok(_)) => {
                if self.deadline_passed {
                    self.delete_own(node, AfterDelete::TimedOut, out);
                } else {
                    self.phase = Phase::Waiting { node };
                }
            }
            // The predecessor is gone: "try to acquire again".
            (Phase::WatchingPredecessor { node, .. }, Err(ZkError::NoNode)) => {
                self.read_children(node, out)
            }
            // deleteOurPath ignores NoNode.
            (Phase::DeletingOwn { then, .. }, Ok(_) | Err(ZkError::NoNode)) => match then {
                AfterDelete::TimedOut => self.finish(LockOutcome::TimedOut, out),
                AfterDelete::Retry => self.start_create(out),
            },
            (Phase::Releasing { .. }, Ok(_) | Err(ZkError::NoNode)) => {
                self.finish(LockOutcome::Released, out)
            }
            (_, Err(error)) => self.finish(LockOutcome::Failed(LockError::Zk(error)), out),
            (_, Ok(_)) => self.finish(
                LockOutcome::Failed(LockError::Zk(ZkError::RuntimeInconsistency)),
                out,
            ),
        }
    }

    /// StandardLockInternalsDriver.getsTheLock on Curator's string order.
    fn decide(&mut self, node: String, mut children: Vec<String>, out: &mut Outbox<LockOutcome>) {
        children.sort_by(|a, b| curator_sort_key(a, LOCK_NAME).cmp(curator_sort_key(b, LOCK_NAME)));
        match children.iter().position(|child| *child == node) {
            // validateOurIndex: NoNodeException("Sequential path not found").
            None => self.delete_own(node, AfterDelete::Retry, out),
            Some(0) => {
                let token = FencingToken(sequence_after(&node, LOCK_NAME).map_or(0, i64::from));
                self.held.push(HeldMutex { node, token });
                out.cancel_timer(ACQUIRE_TIMEOUT);
                self.finish(LockOutcome::Acquired { token }, out);
            }
            Some(ours) => {
                let predecessor = children[ours - 1].clone();
                self.watch_predecessor(node, predecessor, out);
            }
        }
    }

    /// Re-sends the current step's request (RetryLoop).
    fn retry(&mut self, out: &mut Outbox<LockOutcome>) {
        match self.phase.clone() {
            // A retried protected create looks for its node first.
            Phase::Creating | Phase::FindingProtected => self.find_protected(out),
            Phase::MakingParents { level } => self.make_parent(level, out),
            Phase::ReadingChildren { node } => self.read_children(node, out),
            Phase::WatchingPredecessor { node, predecessor } => {
                self.watch_predecessor(node, predecessor, out)
            }
            Phase::DeletingOwn { node, then } => self.delete_own(node, then, out),
            Phase::Releasing { node } => self.release_node(node, out),
            Phase::Idle | Phase::Waiting { .. } => {}
        }
    }

    /// LockInternals' watcher calls notifyAll on every event, state events
    /// included; only a thread in `wait()` reacts.
    fn on_watch(&mut self, out: &mut Outbox<LockOutcome>) {
        if let Phase::Waiting { node } = self.phase.clone() {
            self.read_children(node, out);
        }
    }

    fn on_timer(&mut self, id: TimerId, out: &mut Outbox<LockOutcome>) {
        if id != ACQUIRE_TIMEOUT || matches!(self.phase, Phase::Idle | Phase::Releasing { .. }) {
            return;
        }
        self.deadline_passed = true;
        // wait(millisToWait) returns; the loop reads the children once more.
        if let Phase::Waiting { node } = self.phase.clone() {
            self.read_children(node, out);
        }
    }

    fn on_session(&mut self, event: SessionEvent, out: &mut Outbox<LockOutcome>) {
        // The holder does not care about its session (known bug 8); only
        // RetryLoop waits for the new handle after an expiry.
        if let SessionEvent::Connected { session_id } = event {
            if self.session != Some(session_id) {
                self.session = Some(session_id);
                if std::mem::take(&mut self.retry_in_new_session) {
                    self.retry(out);
                }
            }
        }
    }

    /// `attemptLock`: a new create builder, hence a new protection id.
    fn start_create(&mut self, out: &mut Outbox<LockOutcome>) {
        self.protection.next_create();
        self.create(out);
    }

    fn create(&mut self, out: &mut Outbox<LockOutcome>) {
        self.phase = Phase::Creating;
        let name = format!("{}{LOCK_NAME}", self.protection.prefix());
        match self.lock_path.child(&name) {
            Ok(path) => out.send(
                CREATE,
                Request::Create {
                    path,
                    data: Vec::new(),
                    mode: CreateMode::EphemeralSequential,
                    acl: Acls::Open,
                },
            ),
            Err(_) => self.finish(
                LockOutcome::Failed(LockError::Zk(ZkError::BadArguments)),
                out,
            ),
        }
    }

    fn make_parent(&mut self, level: usize, out: &mut Outbox<LockOutcome>) {
        self.phase = Phase::MakingParents { level };
        // seed 002 uses Curator 2.5.0: persistent parents, left behind.
        match parents::mkdirs_step(&self.lock_path, level) {
            Some(request) => out.send(MAKE_PARENT, request),
            None => self.finish(
                LockOutcome::Failed(LockError::Zk(ZkError::BadArguments)),
                out,
            ),
        }
    }

    fn find_protected(&mut self, out: &mut Outbox<LockOutcome>) {
        self.phase = Phase::FindingProtected;
        out.send(
            FIND_PROTECTED,
            Request::GetChildren {
                path: self.lock_path.clone(),
                watch: false,
            },
        );
    }

    fn read_children(&mut self, node: String, out: &mut Outbox<LockOutcome>) {
        self.phase = Phase::ReadingChildren { node };
        out.send(
            READ_CHILDREN,
            Request::GetChildren {
                path: self.lock_path.clone(),
                watch: false,
            },
        );
    }

    fn watch_predecessor(
        &mut self,
        node: String,
        predecessor: String,
        out: &mut Outbox<LockOutcome>,
    ) {
        let Ok(path) = self.lock_path.child(&predecessor) else {
            return self.finish(
                LockOutcome::Failed(LockError::Zk(ZkError::BadArguments)),
                out,
            );
        };
        self.phase = Phase::WatchingPredecessor { node, predecessor };
        // client.getData().usingWatcher(watcher).forPath(previousSequencePath):
        // LockInternals' one watcher object.
        out.send_watched(
            WATCH_PREDECESSOR,
            Request::GetData { path, watch: true },
            LOCK_WATCHER,
        );
    }

    fn delete_own(&mut self, node: String, then: AfterDelete, out: &mut Outbox<LockOutcome>) {
        self.send_delete(DELETE_OWN, &node, out);
        self.phase = Phase::DeletingOwn { node, then };
    }

    fn release_node(&mut self, node: String, out: &mut Outbox<LockOutcome>) {
        self.send_delete(RELEASE, &node, out);
        self.phase = Phase::Releasing { node };
    }

    fn send_delete(&mut self, tag: Tag, node: &str, out: &mut Outbox<LockOutcome>) {
        if let Ok(path) = self.lock_path.child(node) {
            out.send(
                tag,
                Request::Delete {
                    path,
                    version: ANY_VERSION,
                },
            );
        }
    }

    /// The call returns to the application.
    fn finish(&mut self, outcome: LockOutcome, out: &mut Outbox<LockOutcome>) {
        if matches!(outcome, LockOutcome::Failed(_)) {
            out.cancel_timer(ACQUIRE_TIMEOUT);
        }
        self.phase = Phase::Idle;
        self.retry_in_new_session = false;
        out.emit(outcome);
    }
}

impl Recipe for OriginalCuratorLock {
    type Call = LockCall;
    type Outcome = LockOutcome;

    fn handle(&mut self, input: Input<LockCall>, out: &mut Outbox<LockOutcome>) {
        match input {
            Input::Call(call) => self.on_call(call, out),
            Input::Reply { tag, result } => self.on_reply(tag, result, out),
            // LockInternals.watcher notifies on any event, state changes too.
            Input::WatcherEvent { .. } | Input::Watch(_) => self.on_watch(out),
            Input::Session(event) => self.on_session(event, out),
            Input::Timer(id) => self.on_timer(id, out),
        }
    }
}

impl crate::rename::Rename for OriginalCuratorLock {
    fn rename(&mut self, r: &mut crate::rename::Renaming) {
        self.protection.rename(r);
        self.session.rename(r);
        let path = self.lock_path.clone();
        for mutex in &mut self.held {
            mutex.node = r.name(&path, &mutex.node);
            mutex.token = FencingToken(i64::from(r.sequence(&path, mutex.token.0 as i32)));
        }
        match &mut self.phase {
            Phase::ReadingChildren { node }
            | Phase::Waiting { node }
            | Phase::DeletingOwn { node, .. }
            | Phase::Releasing { node } => *node = r.name(&path, node),
            Phase::WatchingPredecessor { node, predecessor } => {
                *node = r.name(&path, node);
                *predecessor = r.name(&path, predecessor);
            }
            Phase::Idle
            | Phase::Creating
            | Phase::MakingParents { .. }
            | Phase::FindingProtected => {}
        }
    }
}

impl crate::rename::RenameRecipe for OriginalCuratorLock {
    /// Curator 2.x sorts by the text after `lock-` with a stable sort: once
    /// the parent's counter sticks at `2147483647` nodes tie, and
    /// getChildren's order (sorted by name, `_c_<id>_...` first) decides
    /// who holds: the client with the smaller id. (Unreachable unless a
    /// model starts the counter near its end; the self-check finds it then.)
    const SYMMETRIC: bool = false;

    /// `_c_<unique id>_<creates>-lock-<sequence>`.
    fn rename_node(r: &mut crate::rename::Renaming, parent: &str, name: &str) -> String {
        super::protection::rename_protected_node(r, parent, name)
    }

    /// The token is the node's sequence number.
    fn rename_token(&self, r: &mut crate::rename::Renaming, token: FencingToken) -> FencingToken {
        FencingToken(i64::from(r.sequence(&self.lock_path, token.0 as i32)))
    }
}
