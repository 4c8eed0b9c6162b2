//! TEST FIXTURE, not a shipped recipe: the "polite" lock of issue 13, whose
//! waiters step back instead of waiting.
//!
//! `Lock` creates an ephemeral-sequential node `DIR/n-` and lists `DIR`
//! (no watch). A client whose node is alone, or lowest, holds the lock
//! (token: its sequence number). Otherwise it is polite: it deletes its
//! node, waits a back-off interval (a timer) and creates a new one.
//! `Unlock` deletes the node.
//!
//! - `livelock`: a client steps back whenever it sees any other node,
//!   lower or higher. Two clients that create, list and see each other
//!   both step back, again and again: nobody ever gets the lock.
//! - `fixed`: a client steps back only for a lower node; the lowest one
//!   takes the lock, and a waiter that steps back gets it after the
//!   holder releases.
//!
//! Every round creates new sequence numbers and zxids, so in today's model
//! no state repeats: the lasso search needs the rank abstraction (issue
//! 13, item 2) to see these cycles.

use zk_models::{ClientContext, HoldCalls, RecipeEntry, RecipeKind, Variant};
use zk_recipes::lock::{LockCall, LockOutcome};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Reply, Request, ZkError, ANY_VERSION};
use zk_recipes::{FencingToken, Input, Outbox, Recipe, Tag, TimerId};

const CREATE: Tag = Tag(1);
const LIST: Tag = Tag(2);
const STEP_BACK: Tag = Tag(3);
const RELEASE: Tag = Tag(4);
const BACK_OFF: TimerId = TimerId(1);
const BACK_OFF_MS: u64 = 10;

/// The registry entry: `polite_lock` with variants `livelock` and `fixed`.
pub fn entry() -> RecipeEntry {
    let variant = |name: &str, about: &str, yield_to_any: bool| {
        let calls = HoldCalls::new(LockCall::Lock, LockCall::Unlock);
        Variant::hold_renamable(name, about, calls, move |c: &ClientContext| {
            PoliteLock::new(c.path.clone(), yield_to_any)
        })
        .needs_existing_path()
    };
    RecipeEntry::new("polite_lock", RecipeKind::ExclusiveLock, "/polite")
        .variant(variant("livelock", "steps back for any other node", true))
        .variant(variant("fixed", "steps back for a lower node only", false))
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PoliteLock {
    dir: Path,
    /// The bug: step back for a higher node too.
    yield_to_any: bool,
    node: Option<Path>,
    held: bool,
}

impl PoliteLock {
    pub fn new(dir: Path, yield_to_any: bool) -> PoliteLock {
        PoliteLock {
            dir,
            yield_to_any,
            node: None,
            held: false,
        }
    }

    fn create(&self, out: &mut Outbox<LockOutcome>) {
        out.send(
            CREATE,
            Request::Create {
                path: self.dir.child("n-").expect("a valid name"),
                data: Vec::new(),
                mode: CreateMode::EphemeralSequential,
                acl: Acls::Open,
            },
        );
    }

    fn list(&self, out: &mut Outbox<LockOutcome>) {
        let path = self.dir.clone();
        out.send(LIST, Request::GetChildren { path, watch: false });
    }

    fn delete(&self, tag: Tag, out: &mut Outbox<LockOutcome>) {
        if let Some(path) = &self.node {
            let version = ANY_VERSION;
            out.send(
                tag,
                Request::Delete {
                    path: path.clone(),
                    version,
                },
            );
        }
    }

    /// Holds, or steps back, after seeing the contenders `children`.
    fn decide(&mut self, children: &[String], out: &mut Outbox<LockOutcome>) {
        let Some(mine) = self.node.as_ref().map(|n| n.name().to_string()) else {
            return;
        };
        let step_back = children
            .iter()
            .filter(|name| **name != mine)
            .any(|name| self.yield_to_any || *name < mine);
        if step_back {
            return self.delete(STEP_BACK, out);
        }
        let token = zk_models::sequence_suffix(&mine).unwrap_or(0);
        self.held = true;
        out.emit(LockOutcome::Acquired {
            token: FencingToken(i64::from(token)),
        });
    }

    fn reply(&mut self, tag: Tag, result: Result<Reply, ZkError>, out: &mut Outbox<LockOutcome>) {
        match (tag, result) {
            (CREATE, Ok(Reply::Created { path, .. })) => {
                self.node = Some(path);
                self.list(out);
            }
            (LIST, Ok(Reply::Children(children))) => self.decide(&children, out),
            (STEP_BACK, Ok(_) | Err(ZkError::NoNode)) => {
                self.node = None;
                out.set_timer(BACK_OFF, BACK_OFF_MS);
            }
            (RELEASE, Ok(_) | Err(ZkError::NoNode)) => {
                self.node = None;
                self.held = false;
                out.emit(LockOutcome::Released);
            }
            (_, Err(error)) => out.emit(LockOutcome::zk_failure(error)),
            (_, Ok(_)) => {}
        }
    }
}

impl Recipe for PoliteLock {
    type Call = LockCall;
    type Outcome = LockOutcome;

    fn handle(&mut self, input: Input<LockCall>, out: &mut Outbox<LockOutcome>) {
        match input {
            Input::Call(LockCall::Lock) => self.create(out),
            Input::Call(LockCall::Unlock) if self.held => self.delete(RELEASE, out),
            Input::Call(LockCall::Unlock) => out.emit(LockOutcome::Released),
            Input::Reply { tag, result } => self.reply(tag, result, out),
            Input::Timer(BACK_OFF) => self.create(out),
            Input::Timer(_) | Input::Watch(_) | Input::WatcherEvent { .. } | Input::Session(_) => {}
        }
    }
}

/// Its node name carries no client id; its token is a sequence number.
impl zk_recipes::rename::Rename for PoliteLock {
    fn rename(&mut self, r: &mut zk_recipes::rename::Renaming) {
        if let Some(node) = &mut self.node {
            *node = r.path(node);
        }
    }
}

impl zk_recipes::rename::RenameRecipe for PoliteLock {
    fn rename_token(
        &self,
        r: &mut zk_recipes::rename::Renaming,
        token: zk_recipes::FencingToken,
    ) -> zk_recipes::FencingToken {
        zk_recipes::FencingToken(i64::from(r.sequence(&self.dir, token.0 as i32)))
    }
}
