//! Seed 000's `WriteLock` (with `LockZooKeeperOperation`, `ZNodeName`,
//! `ProtocolSupport` and `LockWatcher`), step by step, bugs included.
//!
//! The seed is blocking Java: `lock()` and `unlock()` are `synchronized`, each
//! ZooKeeper call waits for its reply, `retryOperation` sleeps between
//! attempts. Here every blocking call is one request and its reply, a sleep is
//! the [`RETRY_DELAY`] timer, and an invocation that finds the monitor taken
//! (an application call, or `LockWatcher` calling `lock()` on the event
//! thread) waits in a queue until the running one returns.
//!
//! Where the seed shows the blog author's patched code, the upstream code the
//! author criticises is used, since that is what the known bugs are about:
//! - `ZNodeName.compareTo` orders by prefix first ([`ZNodeName::upstream_cmp`],
//!   known bug 1: a newcomer with a smaller session id sorts before the holder);
//! - `findPrefixInChildren` stores the bare child name as `id` (the author's
//!   note: "id and ownerId should be full paths"; known bug 3): after a lost
//!   create reply the lock never sees itself as owner, watches a node at or
//!   behind its own, and `unlock()`'s delete is refused client-side.
//!
//! Other seed behaviour kept on purpose:
//! - a create whose reply was lost is found again by prefix rather than sent
//!   again (so no duplicate node in one session; it runs into bug 3 instead);
//! - `LockWatcher` calls `lock()` on every event it gets, state events
//!   (Disconnected, SyncConnected, Expired) included, and also after `unlock()`
//!   (a waiter that gave up creates a new node when its old predecessor goes);
//!   a holder re-running `lock()` calls `lockAcquired()` again;
//! - exceptions inside `LockWatcher` are logged and dropped;
//! - if the predecessor vanishes between getChildren and exists, `execute()`
//!   returns false with no live watch: the waiter waits forever;
//! - `unlock()` tries its delete once and calls `lockReleased()` whatever
//!   happened, then rethrows a non-NoNode error;
//! - the lock is bound to the ZooKeeper handle it was built with: after
//!   Expired every call fails with SessionExpired, new session or not.

use super::znode_name::{upstream_tree_set, ZNodeName};
use super::{LockCall, LockError, LockOutcome};
use crate::recipe::{
    FencingToken, FreshWatchers, Input, Outbox, Recipe, Tag, TimerId, Watcher, WatcherId,
};
use crate::zk::Acls;
use crate::zk::{
    CreateMode, EventType, Path, Reply, Request, SessionEvent, SessionId, ZkError, ZkResult,
    ANY_VERSION,
};
use std::cmp::Ordering;

/// `ensureExists`: `zookeeper.exists(path, false)`.
const ENSURE_EXISTS: Tag = Tag(1);
/// `ensureExists`: `zookeeper.create(path, data, acl, PERSISTENT)`.
const ENSURE_CREATE: Tag = Tag(2);
/// `findPrefixInChildren`: `zookeeper.getChildren(dir, false)`.
const FIND_PREFIX: Tag = Tag(3);
/// `findPrefixInChildren`: `zookeeper.create(dir + "/" + prefix, data, acl, EPHEMERAL_SEQUENTIAL)`.
const CREATE: Tag = Tag(4);
/// `execute`: `zookeeper.getChildren(dir, false)`.
const LIST: Tag = Tag(5);
/// `execute`: `zookeeper.exists(lastChildId, new LockWatcher())`.
const WATCH_PREDECESSOR: Tag = Tag(6);
/// `unlock`: `zookeeper.delete(id, -1)`.
const DELETE: Tag = Tag(7);

/// `ProtocolSupport.retryDelay`: `Thread.sleep(attemptCount * retryDelay)`.
pub const RETRY_DELAY: TimerId = TimerId(1);

/// `ProtocolSupport.retryCount`.
pub const DEFAULT_RETRY_COUNT: u8 = 10;
/// `ProtocolSupport.retryDelay`, in ms.
pub const DEFAULT_RETRY_DELAY_MS: u64 = 500;
/// `WriteLock.data`.
const LOCK_DATA: [u8; 2] = [0x12, 0x34];

/// Who called `lock()`: only the application hears its exceptions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Invoker {
    Application,
    /// `LockWatcher.process`: `catch (Exception e) { LOG.warn(...) }`.
    Watcher,
}

/// The operation `retryOperation` is retrying.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Retried {
    /// `ensurePathExists(dir)`: its exceptions are logged and dropped.
    EnsurePath,
    /// `retryOperation(zop)`: `LockZooKeeperOperation.execute()`.
    LockOperation,
}

/// The synchronized method currently holding the monitor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Running {
    Lock {
        invoker: Invoker,
        retried: Retried,
        attempt: u8,
    },
    Unlock,
}

/// What the running method is blocked on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Awaiting {
    Reply(Tag),
    RetryDelay,
}

/// Seed 000's `WriteLock`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OriginalLock {
    /// `dir`: the lock directory.
    dir: Path,
    retry_count: u8,
    retry_delay_ms: u64,
    /// `zookeeper.getSessionId()` of the handle the lock was built with.
    session_id: SessionId,
    /// That handle has expired: every request fails with SessionExpired.
    handle_expired: bool,
    /// `id`: the lock node, a full path, or a bare name after recovery (bug 3).
    id: Option<String>,
    /// `ownerId`: the full path of the first node at the last listing.
    owner_id: Option<String>,
    running: Option<Running>,
    awaiting: Option<Awaiting>,
    /// An application call waiting for the monitor.
    queued_call: Option<LockCall>,
    /// `LockWatcher` invocations waiting for the monitor.
    queued_watcher_runs: u8,
    /// A request the expired handle refuses at once; answered before
    /// `handle` returns, so always `None` between inputs.
    refused_by_expired_handle: Option<Tag>,
    /// The live `LockWatcher` objects: every `exists(lastChildId, new
    /// LockWatcher())` registers a distinct watcher, and each one armed sees
    /// every state change.
    lock_watchers: FreshWatchers,
    /// The LockWatcher of the exists() call awaiting its reply.
    watcher_in_flight: Option<WatcherId>,
}

impl OriginalLock {
    /// `new WriteLock(zookeeper, dir, null, callback)` with ProtocolSupport's
    /// defaults (10 attempts, 500 ms retry delay).
    pub fn new(dir: Path) -> OriginalLock {
        OriginalLock::with_retry(dir, DEFAULT_RETRY_COUNT, DEFAULT_RETRY_DELAY_MS)
    }

    /// As [`OriginalLock::new`] with `retryCount` and `setRetryDelay(..)`.
    pub fn with_retry(dir: Path, retry_count: u8, retry_delay_ms: u64) -> OriginalLock {
        assert!(
            retry_count >= 1,
            "retryOperation needs at least one attempt"
        );
        OriginalLock {
            dir,
            retry_count,
            retry_delay_ms,
            session_id: SessionId(0),
            handle_expired: false,
            id: None,
            owner_id: None,
            running: None,
            awaiting: None,
            queued_call: None,
            queued_watcher_runs: 0,
            refused_by_expired_handle: None,
            lock_watchers: FreshWatchers::default(),
            watcher_in_flight: None,
        }
    }

    /// `getId()`: the lock node as this lock knows it (maybe a bare name).
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// `isOwner()`: `id != null && id.equals(ownerId)`. What the application
    /// believes; it stays true after the session expired.
    pub fn is_owner(&self) -> bool {
        self.id.is_some() && self.id == self.owner_id
    }

    // ---- the monitor: application calls and LockWatcher ----

    fn on_call(&mut self, call: LockCall, out: &mut Outbox<LockOutcome>) {
        if self.running.is_none() {
            return self.run_call(call, out);
        }
        // The application thread blocks on the monitor.
        if self.queued_call.is_none() {
            self.queued_call = Some(call);
        } else {
            out.emit(LockOutcome::Failed(LockError::Busy));
        }
    }

    fn run_call(&mut self, call: LockCall, out: &mut Outbox<LockOutcome>) {
        match call {
            LockCall::Lock => self.lock(Invoker::Application, out),
            LockCall::Unlock => self.unlock(out),
        }
    }

    /// seed 000 LockWatcher.process(): `lock()` on every event, whatever its
    /// type or state.
    fn on_lock_watcher(&mut self, out: &mut Outbox<LockOutcome>) {
        if self.running.is_none() {
            self.lock(Invoker::Watcher, out);
        } else {
            // The event thread blocks on the monitor.
            self.queued_watcher_runs = self.queued_watcher_runs.saturating_add(1);
        }
    }

    /// The running method returned or threw: the next waiter takes the
    /// monitor (application first; Java leaves the order open).
    fn release_monitor(&mut self, out: &mut Outbox<LockOutcome>) {
        self.running = None;
        self.awaiting = None;
        if let Some(call) = self.queued_call.take() {
            self.run_call(call, out);
        } else if self.queued_watcher_runs > 0 {
            self.queued_watcher_runs -= 1;
            self.lock(Invoker::Watcher, out);
        }
    }

    // ---- lock() and ProtocolSupport ----

    /// seed 000 WriteLock.lock(): `ensurePathExists(dir)`, then
    /// `retryOperation(zop)`.
    fn lock(&mut self, invoker: Invoker, out: &mut Outbox<LockOutcome>) {
        self.running = Some(Running::Lock {
            invoker,
            retried: Retried::EnsurePath,
            attempt: 0,
        });
        self.run_attempt(out);
    }

    fn run_attempt(&mut self, out: &mut Outbox<LockOutcome>) {
        match self.running {
            Some(Running::Lock {
                retried: Retried::EnsurePath,
                ..
            }) => {
                // seed 000 ProtocolSupport.ensureExists: exists(path, false)
                let request = Request::Exists {
                    path: self.dir.clone(),
                    watch: false,
                };
                self.send(ENSURE_EXISTS, request, out);
            }
            Some(Running::Lock {
                retried: Retried::LockOperation,
                ..
            }) => self.execute(out),
            _ => {}
        }
    }

    /// seed 000 ProtocolSupport.retryOperation: a ConnectionLoss is retried
    /// after `retryDelay(i)`; anything else escapes.
    fn operation_failed(&mut self, error: ZkError, out: &mut Outbox<LockOutcome>) {
        let Some(Running::Lock { attempt, .. }) = self.running else {
            return;
        };
        if error != ZkError::ConnectionLoss {
            // SessionExpiredException is rethrown; other KeeperExceptions are
            // not caught at all.
            return self.retry_operation_threw(LockError::Zk(error), out);
        }
        if attempt == 0 {
            // retryDelay(0) does not sleep.
            self.after_retry_delay(out);
        } else {
            self.awaiting = Some(Awaiting::RetryDelay);
            out.set_timer(RETRY_DELAY, u64::from(attempt) * self.retry_delay_ms);
        }
    }

    /// The loop of retryOperation: the next attempt, or `throw exception`
    /// (the first ConnectionLoss) after the last one.
    fn after_retry_delay(&mut self, out: &mut Outbox<LockOutcome>) {
        let Some(Running::Lock {
            invoker,
            retried,
            attempt,
        }) = self.running
        else {
            return;
        };
        if attempt + 1 < self.retry_count {
            self.running = Some(Running::Lock {
                invoker,
                retried,
                attempt: attempt + 1,
            });
            self.run_attempt(out);
        } else {
            self.retry_operation_threw(LockError::Zk(ZkError::ConnectionLoss), out);
        }
    }

    fn retry_operation_threw(&mut self, error: LockError, out: &mut Outbox<LockOutcome>) {
        let Some(Running::Lock {
            invoker, retried, ..
        }) = self.running
        else {
            return;
        };
        match retried {
            // seed 000 ensureExists: catch (KeeperException e) { LOG.warn(...) }
            Retried::EnsurePath => self.start_lock_operation(invoker, out),
            Retried::LockOperation => self.lock_threw(invoker, error, out),
        }
    }

    fn on_ensure_exists(&mut self, result: ZkResult, out: &mut Outbox<LockOutcome>) {
        match result {
            Ok(Reply::Exists(Some(_))) => self.ensure_path_done(out),
            Ok(Reply::Exists(None)) => {
                let request = Request::Create {
                    path: self.dir.clone(),
                    data: Vec::new(),
                    mode: CreateMode::Persistent,
                    acl: Acls::Open,
                };
                self.send(ENSURE_CREATE, request, out);
            }
            Ok(_) => self.operation_failed(ZkError::RuntimeInconsistency, out),
            Err(error) => self.operation_failed(error, out),
        }
    }

    fn on_ensure_created(&mut self, result: ZkResult, out: &mut Outbox<LockOutcome>) {
        match result {
            Ok(_) => self.ensure_path_done(out),
            // NodeExists (another client won the race) escapes retryOperation
            // and ensureExists logs it.
            Err(error) => self.operation_failed(error, out),
        }
    }

    fn ensure_path_done(&mut self, out: &mut Outbox<LockOutcome>) {
        let Some(Running::Lock { invoker, .. }) = self.running else {
            return;
        };
        self.start_lock_operation(invoker, out);
    }

    /// seed 000 WriteLock.lock(): `return (Boolean) retryOperation(zop)`.
    fn start_lock_operation(&mut self, invoker: Invoker, out: &mut Outbox<LockOutcome>) {
        self.running = Some(Running::Lock {
            invoker,
            retried: Retried::LockOperation,
            attempt: 0,
        });
        self.execute(out);
    }

    // ---- LockZooKeeperOperation.execute() ----

    /// The top of execute()'s `do { .. } while (id == null)` loop.
    fn execute(&mut self, out: &mut Outbox<LockOutcome>) {
        if self.id.is_none() {
            // seed 000 execute(): `findPrefixInChildren(prefix, zookeeper, dir)`
            let request = Request::GetChildren {
                path: self.dir.clone(),
                watch: false,
            };
            self.send(FIND_PREFIX, request, out);
        } else {
            self.list_children(out);
        }
    }

    /// seed 000 findPrefixInChildren(): look for `x-<sessionId>-` among the
    /// children (in the server's order); create the node if it is not there.
    fn on_find_prefix(&mut self, result: ZkResult, out: &mut Outbox<LockOutcome>) {
        let names = match result {
            Ok(Reply::Children(names)) => names,
            Ok(_) => return self.operation_failed(ZkError::RuntimeInconsistency, out),
            Err(error) => return self.operation_failed(error, out),
        };
        let prefix = format!("x-{}-", self.session_id.0);
        if let Some(name) = names.iter().find(|name| name.starts_with(&prefix)) {
            // Upstream: `id = name;` — a bare child name (known bug 3). The
            // blog's patched copy writes `id = dir + "/" + name`.
            self.id = Some(name.clone());
            return self.list_children(out);
        }
        let path = match Path::new(format!("{}/{}", self.dir, prefix)) {
            Ok(path) => path,
            Err(error) => return self.lock_operation_threw(LockError::InvalidPath(error), out),
        };
        let request = Request::Create {
            path,
            data: LOCK_DATA.to_vec(),
            mode: CreateMode::EphemeralSequential,
            acl: Acls::Open,
        };
        self.send(CREATE, request, out);
    }

    /// seed 000 findPrefixInChildren(): `id = zookeeper.create(...)`.
    fn on_created(&mut self, result: ZkResult, out: &mut Outbox<LockOutcome>) {
        match result {
            Ok(Reply::Created { path, .. }) => {
                self.id = Some(path.as_str().to_string());
                self.list_children(out);
            }
            Ok(_) => self.operation_failed(ZkError::RuntimeInconsistency, out),
            Err(error) => self.operation_failed(error, out),
        }
    }

    /// seed 000 execute(): `if (id != null) { names = zookeeper.getChildren(dir, false); ..`
    fn list_children(&mut self, out: &mut Outbox<LockOutcome>) {
        let request = Request::GetChildren {
            path: self.dir.clone(),
            watch: false,
        };
        self.send(LIST, request, out);
    }

    /// seed 000 execute(): sort the children as ZNodeNames of their full
    /// paths, take the first as owner, watch the last one "less than me".
    fn on_list(&mut self, result: ZkResult, out: &mut Outbox<LockOutcome>) {
        let names = match result {
            Ok(Reply::Children(names)) => names,
            Ok(_) => return self.operation_failed(ZkError::RuntimeInconsistency, out),
            Err(error) => return self.operation_failed(error, out),
        };
        let Some(id) = self.id.clone() else {
            return self.execute(out);
        };
        if names.is_empty() {
            // "No children in dir when we've just created one! Lets recreate it..."
            self.id = None;
            return self.execute(out);
        }
        // idName = new ZNodeName(id): the bare name after a recovery.
        let id_name = ZNodeName::new(&id);
        let sorted = upstream_tree_set(
            names
                .iter()
                .map(|name| ZNodeName::new(&format!("{}/{}", self.dir, name))),
        );
        self.owner_id = sorted.first().map(|first| first.name().to_string());
        // lessThanMe = sortedNames.headSet(idName); lastChildName = lessThanMe.last()
        let last_less_than_me = sorted
            .iter()
            .rev()
            .find(|name| name.upstream_cmp(&id_name) == Ordering::Less);
        match last_less_than_me {
            Some(last_child) => match Path::new(last_child.name()) {
                Ok(path) => {
                    // zookeeper.exists(lastChildId, new LockWatcher())
                    let watcher = self.lock_watchers.make();
                    self.watcher_in_flight = Some(watcher);
                    self.send_as(
                        WATCH_PREDECESSOR,
                        Request::Exists { path, watch: true },
                        Watcher::Id(watcher),
                        out,
                    )
                }
                Err(error) => self.lock_operation_threw(LockError::InvalidPath(error), out),
            },
            None => {
                if self.is_owner() {
                    // callback.lockAcquired(); return TRUE
                    out.emit(LockOutcome::Acquired {
                        token: FencingToken(i64::from(id_name.sequence())),
                    });
                }
                // Not owner and nobody less than me: return FALSE, nothing watched.
                self.release_monitor(out);
            }
        }
    }

    /// seed 000 execute(): `if (stat != null) return FALSE; else LOG.warn(..)`
    /// and then `while (id == null)` ends the loop: FALSE either way, and when
    /// the predecessor was already gone nothing will ever wake this waiter.
    fn on_watch_set(&mut self, result: ZkResult, out: &mut Outbox<LockOutcome>) {
        match result {
            Ok(Reply::Exists(_)) => self.release_monitor(out),
            Ok(_) => self.operation_failed(ZkError::RuntimeInconsistency, out),
            Err(error) => self.operation_failed(error, out),
        }
    }

    /// A non-KeeperException inside execute() (IllegalArgumentException from
    /// path validation) escapes retryOperation untouched.
    fn lock_operation_threw(&mut self, error: LockError, out: &mut Outbox<LockOutcome>) {
        let Some(Running::Lock { invoker, .. }) = self.running else {
            return;
        };
        self.lock_threw(invoker, error, out);
    }

    /// lock() threw: the application sees the exception; LockWatcher logs it.
    fn lock_threw(&mut self, invoker: Invoker, error: LockError, out: &mut Outbox<LockOutcome>) {
        if invoker == Invoker::Application {
            out.emit(LockOutcome::Failed(error));
        }
        self.release_monitor(out);
    }

    // ---- unlock() ----

    /// seed 000 WriteLock.unlock(): `if (!isClosed() && id != null)` delete
    /// the node once; `finally { callback.lockReleased(); id = null; }`.
    fn unlock(&mut self, out: &mut Outbox<LockOutcome>) {
        let Some(id) = self.id.clone() else {
            return self.release_monitor(out);
        };
        self.running = Some(Running::Unlock);
        match Path::new(id) {
            Ok(path) => self.send(
                DELETE,
                Request::Delete {
                    path,
                    version: ANY_VERSION,
                },
                out,
            ),
            // ZooKeeper.delete validates the path before sending: a bare id
            // (bug 3) throws IllegalArgumentException, which no catch clause
            // takes; the finally block runs, then it reaches the application.
            Err(error) => self.unlock_finished(Some(LockError::InvalidPath(error)), out),
        }
    }

    fn on_deleted(&mut self, result: ZkResult, out: &mut Outbox<LockOutcome>) {
        match result {
            // catch (KeeperException.NoNodeException e) { // do nothing }
            Ok(Reply::Deleted) | Err(ZkError::NoNode) => self.unlock_finished(None, out),
            Ok(_) => self.unlock_finished(Some(LockError::Zk(ZkError::RuntimeInconsistency)), out),
            // catch (KeeperException e) { throw new RuntimeException(..) }: no
            // retry, "ZK will remove ephemeral files".
            Err(error) => self.unlock_finished(Some(LockError::Zk(error)), out),
        }
    }

    fn unlock_finished(&mut self, thrown: Option<LockError>, out: &mut Outbox<LockOutcome>) {
        out.emit(LockOutcome::Released);
        self.id = None;
        if let Some(error) = thrown {
            out.emit(LockOutcome::Failed(error));
        }
        self.release_monitor(out);
    }

    // ---- plumbing ----

    /// Sends a blocking call's request; the expired handle refuses it at once.
    fn send(&mut self, tag: Tag, request: Request, out: &mut Outbox<LockOutcome>) {
        self.send_as(tag, request, Watcher::Default, out);
    }

    /// As `send`, registering `watcher` for the request's watch.
    fn send_as(
        &mut self,
        tag: Tag,
        request: Request,
        watcher: Watcher,
        out: &mut Outbox<LockOutcome>,
    ) {
        self.awaiting = Some(Awaiting::Reply(tag));
        if self.handle_expired {
            self.refused_by_expired_handle = Some(tag);
        } else {
            out.send_as(tag, request, watcher);
        }
    }

    fn on_reply(&mut self, tag: Tag, result: ZkResult, out: &mut Outbox<LockOutcome>) {
        if tag == WATCH_PREDECESSOR {
            // A failed exists() registered no watch: its LockWatcher is gone.
            if let Some(watcher) = self.watcher_in_flight.take().filter(|_| result.is_err()) {
                self.lock_watchers.release(watcher);
            }
        }
        // One blocking call at a time: any other reply answers a request of
        // no running method (it cannot occur with an in-order driver).
        if self.awaiting != Some(Awaiting::Reply(tag)) {
            return;
        }
        self.awaiting = None;
        match tag {
            ENSURE_EXISTS => self.on_ensure_exists(result, out),
            ENSURE_CREATE => self.on_ensure_created(result, out),
            FIND_PREFIX => self.on_find_prefix(result, out),
            CREATE => self.on_created(result, out),
            LIST => self.on_list(result, out),
            WATCH_PREDECESSOR => self.on_watch_set(result, out),
            DELETE => self.on_deleted(result, out),
            _ => {}
        }
    }

    fn on_session(&mut self, event: SessionEvent) {
        match event {
            // The handle's session id; after expiry a new session is a new
            // handle this object never sees.
            SessionEvent::Connected { session_id } if !self.handle_expired => {
                self.session_id = session_id
            }
            SessionEvent::Expired => self.handle_expired = true,
            // WriteLock has no default-watcher logic of its own.
            _ => {}
        }
    }

    fn on_timer(&mut self, timer: TimerId, out: &mut Outbox<LockOutcome>) {
        if timer == RETRY_DELAY && self.awaiting == Some(Awaiting::RetryDelay) {
            self.awaiting = None;
            self.after_retry_delay(out);
        }
    }
}

impl Recipe for OriginalLock {
    type Call = LockCall;
    type Outcome = LockOutcome;

    fn handle(&mut self, input: Input<LockCall>, out: &mut Outbox<LockOutcome>) {
        match input {
            Input::Call(call) => self.on_call(call, out),
            Input::Reply { tag, result } => self.on_reply(tag, result, out),
            // Every event a LockWatcher gets runs lock(). This recipe arms
            // no default-watcher watch; an injected `Input::Watch` is taken
            // as a LockWatcher's.
            Input::WatcherEvent { watcher, event } => {
                if event.event_type != EventType::None {
                    self.lock_watchers.release(watcher); // one-shot: fired
                }
                self.on_lock_watcher(out)
            }
            Input::Watch(_) => self.on_lock_watcher(out),
            Input::Session(event) => self.on_session(event),
            Input::Timer(timer) => self.on_timer(timer, out),
        }
        while let Some(tag) = self.refused_by_expired_handle.take() {
            self.on_reply(tag, Err(ZkError::SessionExpired), out);
        }
    }
}

impl crate::rename::Rename for OriginalLock {
    fn rename(&mut self, r: &mut crate::rename::Renaming) {
        self.session_id.rename(r);
        // `id` is a full path, or a bare name after a recovery (bug 3).
        let dir = self.dir.clone();
        let node = |r: &mut crate::rename::Renaming, id: &mut String| match Path::new(&*id) {
            Ok(path) => *id = r.path(&path).as_str().to_owned(),
            Err(_) => *id = r.name(&dir, id),
        };
        if let Some(id) = &mut self.id {
            node(r, id);
        }
        if let Some(owner) = &mut self.owner_id {
            node(r, owner);
        }
    }
}

impl crate::rename::RenameRecipe for OriginalLock {
    /// Seed 000 orders contenders by name, session id first (bug 1).
    const SYMMETRIC: bool = false;

    /// `x-<session id>-<sequence>`: the session id follows its client.
    fn rename_node(r: &mut crate::rename::Renaming, parent: &str, name: &str) -> String {
        super::names::rename_lock_node(r, parent, name, |r, id| r.session_raw(id as i64) as u64)
    }

    /// The token is the node's sequence number.
    fn rename_token(&self, r: &mut crate::rename::Renaming, token: FencingToken) -> FencingToken {
        FencingToken(i64::from(r.sequence(&self.dir, token.0 as i32)))
    }
}
