//! TEST FIXTURE, not a shipped recipe: a spin lock that polls with reads,
//! so a waiter that never gets the lock loops through states it has seen
//! (reads consume no zxid): the smallest livelock a lasso search can find
//! in today's model, and its non-livelocking counterpart.
//!
//! `Lock` creates the ephemeral node `DIR/lock` holding the client's id;
//! success grants the hold (token: the node's czxid). On NodeExists the
//! client waits a poll interval (a timer), then polls with `getData` (no
//! watch): its own id there means its create was applied after all (a
//! lost reply), another id means the lock is still held (wait again).
//! `Unlock` deletes the node.
//!
//! The two variants differ in one answer to the poll:
//! - `livelock`: NoNode is taken for a transient error and polled again.
//!   Once the holder released, the waiter polls a missing node forever: no
//!   state changes, its `Lock` call stays pending, every step of it is
//!   taken (a fair livelock). Terminal-path liveness cannot see it: no
//!   terminal state is ever reached on that path.
//! - `fixed`: NoNode means the lock is free: create again.
//!
//! While the holder holds, both variants poll in a cycle too; that cycle
//! starves the holder's `Unlock` (enabled all along), so it is unfair and
//! no livelock.

use zk_models::{ClientContext, HoldCalls, RecipeEntry, RecipeKind, Variant};
use zk_recipes::lock::{LockCall, LockOutcome};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Reply, Request, Stat, ZkError, ANY_VERSION};
use zk_recipes::{FencingToken, Input, Outbox, Recipe, Tag, TimerId};

const CREATE: Tag = Tag(1);
const POLL: Tag = Tag(2);
const DELETE: Tag = Tag(3);
const RETRY: TimerId = TimerId(1);
const POLL_MS: u64 = 10;

/// The registry entry: `polling_lock` with variants `livelock` and `fixed`.
pub fn entry() -> RecipeEntry {
    let variant = |name: &str, about: &str, free_on_no_node: bool| {
        let calls = HoldCalls::new(LockCall::Lock, LockCall::Unlock);
        Variant::hold(name, about, calls, move |c: &ClientContext| {
            PollingLock::new(c.path.clone(), c.unique_id, free_on_no_node)
        })
        .needs_existing_path()
    };
    RecipeEntry::new("polling_lock", RecipeKind::ExclusiveLock, "/polling")
        .variant(variant(
            "livelock",
            "polls a missing lock node forever",
            false,
        ))
        .variant(variant("fixed", "a missing lock node is free", true))
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PollingLock {
    dir: Path,
    id: u64,
    /// The fix: a poll answered NoNode creates the node again.
    free_on_no_node: bool,
    held: bool,
}

impl PollingLock {
    pub fn new(dir: Path, id: u64, free_on_no_node: bool) -> PollingLock {
        PollingLock {
            dir,
            id,
            free_on_no_node,
            held: false,
        }
    }

    fn lock_path(&self) -> Path {
        self.dir.child("lock").expect("a valid name")
    }

    fn create(&self, out: &mut Outbox<LockOutcome>) {
        out.send(
            CREATE,
            Request::Create {
                path: self.lock_path(),
                data: self.id.to_string().into_bytes(),
                mode: CreateMode::Ephemeral,
                acl: Acls::Open,
            },
        );
    }

    fn poll(&self, out: &mut Outbox<LockOutcome>) {
        let path = self.lock_path();
        out.send(POLL, Request::GetData { path, watch: false });
    }

    fn wait(&self, out: &mut Outbox<LockOutcome>) {
        out.set_timer(RETRY, POLL_MS);
    }

    fn acquired(&mut self, stat: &Stat, out: &mut Outbox<LockOutcome>) {
        self.held = true;
        out.emit(LockOutcome::Acquired {
            token: FencingToken(stat.czxid),
        });
    }

    fn reply(&mut self, tag: Tag, result: Result<Reply, ZkError>, out: &mut Outbox<LockOutcome>) {
        match (tag, result) {
            (CREATE, Ok(Reply::Created { stat, .. })) => self.acquired(&stat, out),
            (CREATE, Err(ZkError::NodeExists)) => self.wait(out),
            (CREATE, Err(ZkError::ConnectionLoss)) => self.poll(out),
            (POLL, Ok(Reply::Data { data, stat })) if data == self.id.to_string().as_bytes() => {
                self.acquired(&stat, out)
            }
            (POLL, Ok(_)) => self.wait(out),
            (POLL, Err(ZkError::NoNode)) if self.free_on_no_node => self.create(out),
            // The bug: a missing node is taken for a transient error.
            (POLL, Err(ZkError::NoNode | ZkError::ConnectionLoss)) => self.wait(out),
            (DELETE, Ok(_) | Err(ZkError::NoNode)) => {
                self.held = false;
                out.emit(LockOutcome::Released);
            }
            (DELETE, Err(ZkError::ConnectionLoss)) => self.release(out),
            (_, Err(error)) => out.emit(LockOutcome::zk_failure(error)),
            (_, Ok(_)) => {}
        }
    }

    fn release(&mut self, out: &mut Outbox<LockOutcome>) {
        if !self.held {
            return out.emit(LockOutcome::Released);
        }
        out.send(
            DELETE,
            Request::Delete {
                path: self.lock_path(),
                version: ANY_VERSION,
            },
        );
    }
}

impl Recipe for PollingLock {
    type Call = LockCall;
    type Outcome = LockOutcome;

    fn handle(&mut self, input: Input<LockCall>, out: &mut Outbox<LockOutcome>) {
        match input {
            Input::Call(LockCall::Lock) => self.create(out),
            Input::Call(LockCall::Unlock) => self.release(out),
            Input::Reply { tag, result } => self.reply(tag, result, out),
            Input::Timer(RETRY) => self.poll(out),
            Input::Timer(_) | Input::Watch(_) | Input::WatcherEvent { .. } | Input::Session(_) => {}
        }
    }
}
