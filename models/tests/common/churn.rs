//! TEST FIXTURE, not a shipped recipe: the churning latch of issue 32
//! (item 6), a leader latch that resets (deletes and re-creates its node)
//! whenever it does not see itself first.
//!
//! `Volunteer` creates an ephemeral-sequential node `DIR/n-` and lists
//! `DIR` (no watch). A client whose node is lowest leads (token: its
//! sequence number). `Resign` deletes the node.
//!
//! - `reset`: a client that sees a lower node deletes its own and creates
//!   a new one at once (no back-off). At 2 clients the first leader's
//!   node is the lowest of the first round, so somebody leads, and alone
//!   the other leads next: no livelock. At 3 clients the two waiters
//!   reset while the leader holds, and once it resigned each can list
//!   while the other's node, about to be reset, is still lower: they take
//!   turns resetting forever, every round with new sequence numbers and
//!   zxids (a lasso only under the rank abstraction).
//! - `fixed`: a client that sees a lower node waits for the next lower
//!   one to go (an `exists` watch) and lists again then; nobody resets.
//!
//! Measured (issue 32): with ranks, only zxids and sequence numbers grew
//! here, and the search is exhaustive. A variant that also lists again on
//! every children change (a children watch) is not finite under any sound
//! abstraction: a client with two listings in flight can reset twice and
//! orphan the node of one create (alive with its session), so the nodes
//! under `DIR` and the requests a client has queued keep growing (5 nodes
//! for 3 clients and 4 requests queued by one by BFS depth 50), and a
//! listing observes every node; its lasso search stopped at 1.5 M states
//! without a verdict.

use zk_models::{ClientContext, HoldCalls, RecipeEntry, RecipeKind, Variant};
use zk_recipes::election::{ElectionCall, ElectionOutcome};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, EventType, Path, Reply, Request, ZkError, ANY_VERSION};
use zk_recipes::{FencingToken, Input, Outbox, Recipe, Tag};

const CREATE: Tag = Tag(1);
const LIST: Tag = Tag(2);
const RESET: Tag = Tag(3);
const RESIGN: Tag = Tag(4);
const WATCH: Tag = Tag(5);

/// The registry entry: `churn_latch` with variants `reset` and `fixed`.
pub fn entry() -> RecipeEntry {
    let variant = |name: &str, about: &str, reset: bool| {
        let calls = HoldCalls::new(ElectionCall::Volunteer, ElectionCall::Resign);
        Variant::hold_renamable(name, about, calls, move |c: &ClientContext| {
            ChurnLatch::new(c.path.clone(), reset)
        })
        .needs_existing_path()
    };
    RecipeEntry::new("churn_latch", RecipeKind::Election, "/latch")
        .variant(variant(
            "reset",
            "re-creates its node whenever it does not see itself first",
            true,
        ))
        .variant(variant(
            "fixed",
            "waits for the next lower node to go",
            false,
        ))
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ChurnLatch {
    dir: Path,
    /// The bug: reset instead of waiting behind a lower node.
    reset: bool,
    node: Option<Path>,
    leads: bool,
}

impl ChurnLatch {
    pub fn new(dir: Path, reset: bool) -> ChurnLatch {
        ChurnLatch {
            dir,
            reset,
            node: None,
            leads: false,
        }
    }

    fn create(&self, out: &mut Outbox<ElectionOutcome>) {
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

    fn list(&self, out: &mut Outbox<ElectionOutcome>) {
        let path = self.dir.clone();
        out.send(LIST, Request::GetChildren { path, watch: false });
    }

    fn delete(&self, tag: Tag, out: &mut Outbox<ElectionOutcome>) {
        if let Some(path) = &self.node {
            let path = path.clone();
            let version = ANY_VERSION;
            out.send(tag, Request::Delete { path, version });
        }
    }

    /// Leads, resets or waits after seeing the contenders `children`.
    fn decide(&mut self, children: &[String], out: &mut Outbox<ElectionOutcome>) {
        let Some(mine) = self.node.as_ref().map(|n| n.name().to_string()) else {
            return;
        };
        let below = children.iter().filter(|name| **name < mine).max();
        match below {
            None => {
                let token = zk_models::sequence_suffix(&mine).unwrap_or(0);
                self.leads = true;
                out.emit(ElectionOutcome::Elected {
                    token: FencingToken(i64::from(token)),
                });
            }
            Some(_) if self.reset => self.delete(RESET, out),
            Some(lower) => {
                let path = self.dir.child(lower).expect("a child name");
                out.send(WATCH, Request::Exists { path, watch: true });
            }
        }
    }

    fn reply(
        &mut self,
        tag: Tag,
        result: Result<Reply, ZkError>,
        out: &mut Outbox<ElectionOutcome>,
    ) {
        match (tag, result) {
            (CREATE, Ok(Reply::Created { path, .. })) => {
                self.node = Some(path);
                self.list(out);
            }
            (LIST, Ok(Reply::Children(children))) => self.decide(&children, out),
            (WATCH, Ok(Reply::Exists(None))) => self.list(out),
            (RESET, Ok(_) | Err(ZkError::NoNode)) => {
                self.node = None;
                self.create(out);
            }
            (RESIGN, Ok(_) | Err(ZkError::NoNode)) => {
                self.node = None;
                self.leads = false;
                out.emit(ElectionOutcome::Resigned);
            }
            (_, Err(error)) => out.emit(ElectionOutcome::Failed(
                zk_recipes::election::ElectionError::Zk(error),
            )),
            (_, Ok(_)) => {}
        }
    }
}

impl Recipe for ChurnLatch {
    type Call = ElectionCall;
    type Outcome = ElectionOutcome;

    fn handle(&mut self, input: Input<ElectionCall>, out: &mut Outbox<ElectionOutcome>) {
        match input {
            Input::Call(ElectionCall::Volunteer) => self.create(out),
            Input::Call(ElectionCall::Resign) if self.node.is_some() => self.delete(RESIGN, out),
            Input::Call(ElectionCall::Resign) => out.emit(ElectionOutcome::Resigned),
            Input::Reply { tag, result } => self.reply(tag, result, out),
            Input::Watch(event) if event.event_type == EventType::NodeDeleted => {
                if self.node.is_some() && !self.leads {
                    self.list(out);
                }
            }
            Input::Watch(_) | Input::Timer(_) | Input::WatcherEvent { .. } | Input::Session(_) => {}
        }
    }
}

/// Its node name carries no client id; its token is a sequence number.
impl zk_recipes::rename::Rename for ChurnLatch {
    fn rename(&mut self, r: &mut zk_recipes::rename::Renaming) {
        if let Some(node) = &mut self.node {
            *node = r.path(node);
        }
    }
}

impl zk_recipes::rename::RenameRecipe for ChurnLatch {
    fn rename_token(
        &self,
        r: &mut zk_recipes::rename::Renaming,
        token: zk_recipes::FencingToken,
    ) -> zk_recipes::FencingToken {
        zk_recipes::FencingToken(i64::from(r.sequence(&self.dir, token.0 as i32)))
    }
}
