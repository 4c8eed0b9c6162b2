//! Curator 2.5.0's InterProcessSemaphoreV2 as seed 002 uses it, bugs included.
//!
//! Seed 002 `doServiceBySemaphoreLock`: `new InterProcessSemaphoreV2(client,
//! granularity, maxLease).acquire(qty, 60, SECONDS)`, then in `finally`
//! `releaseSemaphoreLock` -> `returnAll(leases)` (whose failure would close
//! the shared client; `returnAll` swallows errors, so it never does).
//!
//! `acquire(qty, time, unit)` takes one lease at a time; for each:
//! 1. `lock.acquire(thisWaitMs)` on the InterProcessMutex at `<path>/locks`
//!    (the [`OriginalCuratorLock`] machine, embedded: its tags and timers
//!    are offset by 100); false: RETURN_NULL;
//! 2. create the protected EPHEMERAL_SEQUENTIAL `<path>/leases/_c_<id>-lease-`
//!    (persistent parents made as needed) and add the lease to the result
//!    right away (2.5.0 adds it before checking it);
//! 3. loop: getChildren of `<path>/leases` with a watch; our node missing:
//!    RETRY_DUE_TO_MISSING_NODE (the dead lease stays in the result); at
//!    most `max_leases` children: done; deadline passed: RETURN_NULL; else
//!    wait for the watcher (any event) or the deadline;
//! 4. `finally lock.release()`.
//!
//! RETURN_NULL (and any exception) returns every lease taken so far. As in
//! the original lock, RetryLoop's ConnectionLoss / SessionExpired retries
//! have no budget here; one application thread, one call at a time.

use super::{SemaphoreCall, SemaphoreError, SemaphoreOutcome};
use crate::curator_lock::original::{OriginalCuratorLock, ACQUIRE_TIMEOUT as MUTEX_TIMEOUT};
use crate::curator_lock::protection::Protection;
use crate::curator_lock::{parents, LockCall, LockOutcome};
use crate::recipe::{
    FencingToken, Input, Outbox, Recipe, Tag, TimerCommand, TimerId, Watcher, WatcherId,
};
use crate::sequence::sequence_after;
use crate::zk::Acls;
use crate::zk::{
    CreateMode, Path, Reply, Request, SessionEvent, SessionId, WatchedEvent, ZkError, ZkResult,
    ANY_VERSION,
};

/// The marker before a lease node's sequence (`LEASE_BASE_NAME`).
const LEASE_NAME: &str = "lease-";
/// Offset of the embedded mutex's tags and timer ids.
const MUTEX_OFFSET: u32 = 100;
/// InterProcessSemaphoreV2's `watcher` field: one object for every leases
/// listing (the embedded mutex's watchers are offset by `MUTEX_OFFSET`).
const SEMAPHORE_WATCHER: WatcherId = WatcherId(1);

/// Create the lease node (protected, parents as needed).
const CREATE_LEASE: Tag = Tag(1);
/// `mkdirs`: one persistent ancestor of `<path>/leases`.
const MAKE_PARENT: Tag = Tag(2);
/// A retried protected create looks for its node first.
const FIND_PROTECTED: Tag = Tag(3);
/// getChildren of `<path>/leases` with a watch.
const COUNT_LEASES: Tag = Tag(4);
/// `Lease.close()`: delete a lease node.
const RETURN_LEASE: Tag = Tag(5);

/// The timer of a timed acquire.
pub const ACQUIRE_TIMEOUT: TimerId = TimerId(1);

/// What `acquire` does once the mutex is released (`finally lock.release()`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum AfterUnlock {
    /// CONTINUE: `remaining` leases still to take.
    NextLease { remaining: u32 },
    /// RETRY_DUE_TO_MISSING_NODE: take this lease again.
    Retry { remaining: u32 },
    /// RETURN_NULL: return what was taken, answer TimedOut.
    ReturnNull,
    /// An exception escaped: return what was taken, answer Failed.
    Fail(SemaphoreError),
}

/// What to answer once every lease is returned.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum AfterReturn {
    Returned,
    TimedOut,
    Failed(SemaphoreError),
}

/// Where the application thread is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Idle,
    /// `lock.acquire` for the next lease.
    Locking {
        remaining: u32,
    },
    CreatingLease {
        remaining: u32,
    },
    MakingParents {
        remaining: u32,
        level: usize,
    },
    FindingProtected {
        remaining: u32,
    },
    /// getChildren of the leases for our lease `node`.
    CountingLeases {
        remaining: u32,
        node: String,
    },
    /// `wait()` in the lease loop, holding the mutex.
    WaitingForLeases {
        remaining: u32,
        node: String,
    },
    /// `lock.release()`, then `then`.
    Unlocking {
        then: AfterUnlock,
    },
    /// `returnAll`: deleting the first lease left, then `then`.
    Returning {
        then: AfterReturn,
    },
}

/// A lease taken: its node name and token (the node's sequence number).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Lease {
    node: String,
    token: FencingToken,
}

/// Seed 002's semaphore usage on one thread (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OriginalSemaphore {
    leases_path: Path,
    max_leases: u32,
    /// The protection ids of its lease creates (drawn from the unique id).
    protection: Protection,
    /// The InterProcessMutex at `<path>/locks`.
    mutex: OriginalCuratorLock,
    session: Option<SessionId>,
    /// Re-send the current request once a new session is connected.
    retry_in_new_session: bool,
    timeout_ms: Option<u64>,
    deadline_passed: bool,
    /// The leases of the current acquire (the result builder), then held.
    leases: Vec<Lease>,
    phase: Phase,
}

impl OriginalSemaphore {
    /// A thread using the semaphore at `path` with `max_leases` leases;
    /// `unique_id` seeds the protection ids.
    pub fn new(path: Path, max_leases: u32, unique_id: u64) -> OriginalSemaphore {
        let child = |name: &str| {
            path.child(name)
                .expect("`locks` and `leases` are valid names")
        };
        OriginalSemaphore {
            leases_path: child("leases"),
            max_leases,
            protection: Protection::new(unique_id),
            mutex: OriginalCuratorLock::new(child("locks"), unique_id),
            session: None,
            retry_in_new_session: false,
            timeout_ms: None,
            deadline_passed: false,
            leases: Vec::new(),
            phase: Phase::Idle,
        }
    }

    /// The leases this client believes it holds (dead ones included).
    pub fn leases_held(&self) -> usize {
        if self.phase == Phase::Idle {
            self.leases.len()
        } else {
            0
        }
    }

    fn on_call(&mut self, call: SemaphoreCall, out: &mut Outbox<SemaphoreOutcome>) {
        if self.phase != Phase::Idle {
            return out.emit(SemaphoreOutcome::Failed(SemaphoreError::CallOutOfTurn(
                call,
            )));
        }
        match call {
            // Preconditions.checkArgument(qty > 0, "qty cannot be 0")
            SemaphoreCall::Acquire { count: 0, .. } => {
                out.emit(SemaphoreOutcome::Failed(SemaphoreError::BadCount(0)))
            }
            SemaphoreCall::Acquire { .. } if !self.leases.is_empty() => out.emit(
                SemaphoreOutcome::Failed(SemaphoreError::CallOutOfTurn(call)),
            ),
            SemaphoreCall::Acquire { count, timeout_ms } => {
                self.timeout_ms = timeout_ms;
                self.deadline_passed = false;
                if let Some(timeout_ms) = timeout_ms {
                    out.set_timer(ACQUIRE_TIMEOUT, timeout_ms);
                }
                self.lock_mutex(count, out);
            }
            SemaphoreCall::Return if self.leases.is_empty() => {
                out.emit(SemaphoreOutcome::Failed(SemaphoreError::NothingToReturn))
            }
            // seed 002 releaseSemaphoreLock -> returnAll(leases)
            SemaphoreCall::Return => self.return_all(AfterReturn::Returned, out),
        }
    }

    // ---- the embedded mutex ----

    /// Hands an input to the mutex and files what it emits under our offsets.
    fn feed_mutex(&mut self, input: Input<LockCall>, out: &mut Outbox<SemaphoreOutcome>) {
        let mut inner = Outbox::new();
        self.mutex.handle(input, &mut inner);
        for (tag, request, watcher) in inner.requests {
            let watcher = match watcher {
                Watcher::Id(id) => Watcher::Id(WatcherId(id.0 + MUTEX_OFFSET)),
                Watcher::Default => Watcher::Default,
            };
            out.send_as(Tag(tag.0 + MUTEX_OFFSET), request, watcher);
        }
        for timer in inner.timers {
            match timer {
                TimerCommand::Set { id, after_ms } => {
                    out.set_timer(TimerId(id.0 + MUTEX_OFFSET), after_ms)
                }
                TimerCommand::Cancel { id } => out.cancel_timer(TimerId(id.0 + MUTEX_OFFSET)),
            }
        }
        for outcome in inner.outcomes {
            self.on_mutex_outcome(outcome, out);
        }
    }

    /// `lock.acquire(thisWaitMs)`: a deadline already passed makes the
    /// mutex try once and give up.
    fn lock_mutex(&mut self, remaining: u32, out: &mut Outbox<SemaphoreOutcome>) {
        self.phase = Phase::Locking { remaining };
        self.feed_mutex(
            Input::Call(LockCall::Acquire {
                timeout_ms: self.timeout_ms,
            }),
            out,
        );
        if self.deadline_passed {
            self.feed_mutex(Input::Timer(MUTEX_TIMEOUT), out);
        }
    }

    fn unlock_mutex(&mut self, then: AfterUnlock, out: &mut Outbox<SemaphoreOutcome>) {
        self.phase = Phase::Unlocking { then };
        self.feed_mutex(Input::Call(LockCall::Release), out);
    }

    fn on_mutex_outcome(&mut self, outcome: LockOutcome, out: &mut Outbox<SemaphoreOutcome>) {
        match (self.phase.clone(), outcome) {
            (Phase::Locking { remaining }, LockOutcome::Acquired { .. }) => {
                self.protection.next_create();
                self.create_lease(remaining, out);
            }
            (Phase::Locking { .. }, LockOutcome::TimedOut) => {
                self.return_all(AfterReturn::TimedOut, out)
            }
            (Phase::Unlocking { then }, LockOutcome::Released) => self.after_unlock(then, out),
            (Phase::Locking { .. } | Phase::Unlocking { .. }, LockOutcome::Failed(error)) => {
                self.return_all(AfterReturn::Failed(SemaphoreError::Mutex(error)), out)
            }
            // The original mutex never reports Lost; nothing else is awaited.
            _ => {}
        }
    }

    fn after_unlock(&mut self, then: AfterUnlock, out: &mut Outbox<SemaphoreOutcome>) {
        match then {
            AfterUnlock::NextLease { remaining: 0 } => {
                let token = self
                    .leases
                    .last()
                    .map_or(FencingToken(0), |lease| lease.token);
                let leases = u32::try_from(self.leases.len()).unwrap_or(u32::MAX);
                out.cancel_timer(ACQUIRE_TIMEOUT);
                self.finish(SemaphoreOutcome::Acquired { leases, token }, out);
            }
            AfterUnlock::NextLease { remaining } | AfterUnlock::Retry { remaining } => {
                self.lock_mutex(remaining, out)
            }
            AfterUnlock::ReturnNull => self.return_all(AfterReturn::TimedOut, out),
            AfterUnlock::Fail(error) => self.return_all(AfterReturn::Failed(error), out),
        }
    }

    // ---- our own requests ----

    fn expected_tag(&self) -> Option<Tag> {
        match self.phase {
            Phase::CreatingLease { .. } => Some(CREATE_LEASE),
            Phase::MakingParents { .. } => Some(MAKE_PARENT),
            Phase::FindingProtected { .. } => Some(FIND_PROTECTED),
            Phase::CountingLeases { .. } => Some(COUNT_LEASES),
            Phase::Returning { .. } => Some(RETURN_LEASE),
            Phase::Idle
            | Phase::Locking { .. }
            | Phase::WaitingForLeases { .. }
            | Phase::Unlocking { .. } => None,
        }
    }

    fn on_reply(&mut self, tag: Tag, result: ZkResult, out: &mut Outbox<SemaphoreOutcome>) {
        if tag.0 >= MUTEX_OFFSET {
            return self.feed_mutex(
                Input::Reply {
                    tag: Tag(tag.0 - MUTEX_OFFSET),
                    result,
                },
                out,
            );
        }
        if self.expected_tag() != Some(tag) {
            return;
        }
        match result {
            Err(error) if error.is_connection_error() => self.retry(out),
            Err(ZkError::SessionExpired) => {
                if let Phase::CreatingLease { remaining } = self.phase {
                    self.phase = Phase::FindingProtected { remaining };
                }
                self.retry_in_new_session = true;
            }
            result => self.on_answer(result, out),
        }
    }

    fn on_answer(&mut self, result: ZkResult, out: &mut Outbox<SemaphoreOutcome>) {
        match (self.phase.clone(), result) {
            (Phase::CreatingLease { remaining }, Ok(Reply::Created { path, .. })) => {
                self.add_lease(path.name().to_string(), remaining, out)
            }
            (Phase::CreatingLease { remaining }, Err(ZkError::NoNode)) => {
                self.make_parent(remaining, 0, out)
            }
            (Phase::MakingParents { remaining, level }, Ok(_) | Err(ZkError::NodeExists)) => {
                if parents::is_last_mkdirs_step(&self.leases_path, level) {
                    self.create_lease(remaining, out);
                } else {
                    self.make_parent(remaining, level + 1, out);
                }
            }
            (Phase::FindingProtected { remaining }, Ok(Reply::Children(children))) => {
                match self.protection.find(children) {
                    Some(node) => self.add_lease(node, remaining, out),
                    None => self.create_lease(remaining, out),
                }
            }
            (Phase::FindingProtected { remaining }, Err(ZkError::NoNode)) => {
                self.create_lease(remaining, out)
            }
            (Phase::CountingLeases { remaining, node }, Ok(Reply::Children(children))) => {
                if !children.contains(&node) {
                    // "Sequential path not found": the dead lease stays in the result.
                    self.unlock_mutex(AfterUnlock::Retry { remaining }, out);
                } else if children.len() <= self.max_leases as usize {
                    self.unlock_mutex(
                        AfterUnlock::NextLease {
                            remaining: remaining - 1,
                        },
                        out,
                    );
                } else if self.deadline_passed {
                    self.unlock_mutex(AfterUnlock::ReturnNull, out);
                } else {
                    self.phase = Phase::WaitingForLeases { remaining, node };
                }
            }
            (Phase::CountingLeases { remaining, .. }, Err(ZkError::NoNode)) => {
                self.unlock_mutex(AfterUnlock::Retry { remaining }, out)
            }
            // Lease.close() ignores NoNode ("Lease already released").
            (Phase::Returning { then }, Ok(_) | Err(ZkError::NoNode)) => {
                if !self.leases.is_empty() {
                    self.leases.remove(0);
                }
                self.return_all(then, out);
            }
            // An exception escapes the lease loop: finally lock.release().
            (
                Phase::CreatingLease { .. }
                | Phase::MakingParents { .. }
                | Phase::FindingProtected { .. }
                | Phase::CountingLeases { .. },
                Err(error),
            ) => self.unlock_mutex(AfterUnlock::Fail(SemaphoreError::Zk(error)), out),
            // returnAll closes quietly: skip the lease.
            (Phase::Returning { then }, Err(_)) => {
                if !self.leases.is_empty() {
                    self.leases.remove(0);
                }
                self.return_all(then, out);
            }
            (_, _) => self.unlock_mutex(
                AfterUnlock::Fail(SemaphoreError::Zk(ZkError::RuntimeInconsistency)),
                out,
            ),
        }
    }

    /// `builder.add(makeLease(path))`, then the lease loop.
    fn add_lease(&mut self, node: String, remaining: u32, out: &mut Outbox<SemaphoreOutcome>) {
        let token = FencingToken(sequence_after(&node, LEASE_NAME).map_or(0, i64::from));
        self.leases.push(Lease {
            node: node.clone(),
            token,
        });
        self.count_leases(remaining, node, out);
    }

    fn retry(&mut self, out: &mut Outbox<SemaphoreOutcome>) {
        match self.phase.clone() {
            Phase::CreatingLease { remaining } | Phase::FindingProtected { remaining } => {
                self.find_protected(remaining, out)
            }
            Phase::MakingParents { remaining, level } => self.make_parent(remaining, level, out),
            Phase::CountingLeases { remaining, node } => self.count_leases(remaining, node, out),
            Phase::Returning { then } => self.return_all(then, out),
            Phase::Idle
            | Phase::Locking { .. }
            | Phase::WaitingForLeases { .. }
            | Phase::Unlocking { .. } => {}
        }
    }

    /// An event for one of the watcher objects: the mutex's (LockInternals)
    /// or the semaphore's own, which calls notifyAll on every event.
    fn on_watcher_event(
        &mut self,
        watcher: WatcherId,
        event: WatchedEvent,
        out: &mut Outbox<SemaphoreOutcome>,
    ) {
        if watcher.0 >= MUTEX_OFFSET {
            let watcher = WatcherId(watcher.0 - MUTEX_OFFSET);
            return self.feed_mutex(Input::WatcherEvent { watcher, event }, out);
        }
        if let Phase::WaitingForLeases { remaining, node } = self.phase.clone() {
            self.count_leases(remaining, node, out);
        }
    }

    /// An event for the default watcher (an injected one: no request here
    /// arms it), routed by path.
    fn on_watch(&mut self, event: WatchedEvent, out: &mut Outbox<SemaphoreOutcome>) {
        let for_mutex = match &event.path {
            None => true,
            Some(path) => path.parent().as_ref() == Some(self.mutex_path()),
        };
        let for_leases = event.path.is_none() || event.path.as_ref() == Some(&self.leases_path);
        if for_mutex {
            self.feed_mutex(Input::Watch(event), out);
        }
        // The semaphore's watcher calls notifyAll on every event.
        if let (true, Phase::WaitingForLeases { remaining, node }) =
            (for_leases, self.phase.clone())
        {
            self.count_leases(remaining, node, out);
        }
    }

    fn on_timer(&mut self, id: TimerId, out: &mut Outbox<SemaphoreOutcome>) {
        if id.0 >= MUTEX_OFFSET {
            return self.feed_mutex(Input::Timer(TimerId(id.0 - MUTEX_OFFSET)), out);
        }
        if id != ACQUIRE_TIMEOUT || matches!(self.phase, Phase::Idle | Phase::Returning { .. }) {
            return;
        }
        self.deadline_passed = true;
        match self.phase.clone() {
            // thisWaitMs runs out inside lock.acquire.
            Phase::Locking { .. } => self.feed_mutex(Input::Timer(MUTEX_TIMEOUT), out),
            // wait(thisWaitMs) returns: count once more.
            Phase::WaitingForLeases { remaining, node } => self.count_leases(remaining, node, out),
            _ => {}
        }
    }

    fn on_session(&mut self, event: SessionEvent, out: &mut Outbox<SemaphoreOutcome>) {
        self.feed_mutex(Input::Session(event), out);
        if let SessionEvent::Connected { session_id } = event {
            if self.session != Some(session_id) {
                self.session = Some(session_id);
                if std::mem::take(&mut self.retry_in_new_session) {
                    self.retry(out);
                }
            }
        }
    }

    fn mutex_path(&self) -> &Path {
        // Set in `new` as `<path>/locks`; the leases' sibling.
        self.mutex.lock_path()
    }

    fn create_lease(&mut self, remaining: u32, out: &mut Outbox<SemaphoreOutcome>) {
        self.phase = Phase::CreatingLease { remaining };
        match self
            .leases_path
            .child(&format!("{}{LEASE_NAME}", self.protection.prefix()))
        {
            Ok(path) => out.send(
                CREATE_LEASE,
                Request::Create {
                    path,
                    data: Vec::new(),
                    mode: CreateMode::EphemeralSequential,
                    acl: Acls::Open,
                },
            ),
            Err(_) => self.unlock_mutex(
                AfterUnlock::Fail(SemaphoreError::Zk(ZkError::BadArguments)),
                out,
            ),
        }
    }

    fn make_parent(&mut self, remaining: u32, level: usize, out: &mut Outbox<SemaphoreOutcome>) {
        self.phase = Phase::MakingParents { remaining, level };
        // seed 002 uses Curator 2.5.0: persistent parents, left behind.
        match parents::mkdirs_step(&self.leases_path, level) {
            Some(request) => out.send(MAKE_PARENT, request),
            None => self.unlock_mutex(
                AfterUnlock::Fail(SemaphoreError::Zk(ZkError::BadArguments)),
                out,
            ),
        }
    }

    fn find_protected(&mut self, remaining: u32, out: &mut Outbox<SemaphoreOutcome>) {
        self.phase = Phase::FindingProtected { remaining };
        out.send(
            FIND_PROTECTED,
            Request::GetChildren {
                path: self.leases_path.clone(),
                watch: false,
            },
        );
    }

    fn count_leases(&mut self, remaining: u32, node: String, out: &mut Outbox<SemaphoreOutcome>) {
        self.phase = Phase::CountingLeases { remaining, node };
        // client.getChildren().usingWatcher(watcher).forPath(leasesPath)
        out.send_watched(
            COUNT_LEASES,
            Request::GetChildren {
                path: self.leases_path.clone(),
                watch: true,
            },
            SEMAPHORE_WATCHER,
        );
    }

    /// `returnAll`: delete the leases one by one, then answer.
    fn return_all(&mut self, then: AfterReturn, out: &mut Outbox<SemaphoreOutcome>) {
        let Some(lease) = self.leases.first() else {
            let outcome = match then {
                AfterReturn::Returned => SemaphoreOutcome::Returned,
                AfterReturn::TimedOut => SemaphoreOutcome::TimedOut,
                AfterReturn::Failed(error) => SemaphoreOutcome::Failed(error),
            };
            out.cancel_timer(ACQUIRE_TIMEOUT);
            return self.finish(outcome, out);
        };
        if let Ok(path) = self.leases_path.child(&lease.node) {
            out.send(
                RETURN_LEASE,
                Request::Delete {
                    path,
                    version: ANY_VERSION,
                },
            );
        }
        self.phase = Phase::Returning { then };
    }

    fn finish(&mut self, outcome: SemaphoreOutcome, out: &mut Outbox<SemaphoreOutcome>) {
        self.phase = Phase::Idle;
        self.retry_in_new_session = false;
        out.emit(outcome);
    }
}

impl Recipe for OriginalSemaphore {
    type Call = SemaphoreCall;
    type Outcome = SemaphoreOutcome;

    fn handle(&mut self, input: Input<SemaphoreCall>, out: &mut Outbox<SemaphoreOutcome>) {
        match input {
            Input::Call(call) => self.on_call(call, out),
            Input::Reply { tag, result } => self.on_reply(tag, result, out),
            Input::Watch(event) => self.on_watch(event, out),
            Input::WatcherEvent { watcher, event } => self.on_watcher_event(watcher, event, out),
            Input::Session(event) => self.on_session(event, out),
            Input::Timer(id) => self.on_timer(id, out),
        }
    }
}

impl crate::rename::Rename for OriginalSemaphore {
    fn rename(&mut self, r: &mut crate::rename::Renaming) {
        self.protection.rename(r);
        self.mutex.rename(r);
        self.session.rename(r);
        let path = self.leases_path.clone();
        for lease in &mut self.leases {
            lease.node = r.name(&path, &lease.node);
            lease.token = FencingToken(i64::from(r.sequence(&path, lease.token.0 as i32)));
        }
        if let Phase::CountingLeases { node, .. } | Phase::WaitingForLeases { node, .. } =
            &mut self.phase
        {
            *node = r.name(&path, node);
        }
    }
}

impl crate::rename::RenameRecipe for OriginalSemaphore {
    /// Its mutex is Curator 2.x's ([`OriginalCuratorLock`]): tied nodes of
    /// a stuck counter are ordered by name, that is by client id.
    const SYMMETRIC: bool = false;

    /// `_c_<unique id>_<creates>-lease-<sequence>` (and the mutex's `-lock-`).
    fn rename_node(r: &mut crate::rename::Renaming, parent: &str, name: &str) -> String {
        crate::curator_lock::protection::rename_protected_node(r, parent, name)
    }

    /// The token is the last lease's sequence number.
    fn rename_token(&self, r: &mut crate::rename::Renaming, token: FencingToken) -> FencingToken {
        FencingToken(i64::from(r.sequence(&self.leases_path, token.0 as i32)))
    }
}
