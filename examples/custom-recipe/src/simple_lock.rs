//! A distributed lock written the way a newcomer writes it from the
//! ZooKeeper recipes page: create an ephemeral sequential child of the lock
//! directory, list the children, hold the lock when yours is the lowest,
//! otherwise watch the child just before yours and look again when it goes.
//!
//! The bug, behind `trust_server_order`: the children are taken in the
//! order getChildren returns them, as if the server sorted them. It does
//! not promise to (a real server returns them in hash order), so two
//! clients can both find themselves "first".
//!
//! Errors are not retried: any failed request answers the call with
//! `Failed` (this example checks no faults).

use zkcheck::recipes::rename::{Rename, RenameRecipe, Renaming};
use zkcheck::recipes::zk::{Acls, CreateMode, EventType, Path, Reply, Request, ANY_VERSION};
use zkcheck::recipes::{FencingToken, Input, Outbox, Recipe, Tag};

const CREATE: Tag = Tag(1);
const LIST: Tag = Tag(2);
const WATCH: Tag = Tag(3);
const DELETE: Tag = Tag(4);

/// What the application asks.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Call {
    Lock,
    Unlock,
}

/// What the lock answers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Held, with the node's sequence number as fencing token.
    Acquired(i64),
    Released,
    Failed(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SimpleLock {
    dir: Path,
    trust_server_order: bool,
    /// Our node's name once created.
    node: Option<String>,
    held: bool,
}

impl SimpleLock {
    pub fn new(dir: Path, trust_server_order: bool) -> SimpleLock {
        SimpleLock {
            dir,
            trust_server_order,
            node: None,
            held: false,
        }
    }

    fn list(&self, out: &mut Outbox<Outcome>) {
        let path = self.dir.clone();
        out.send(LIST, Request::GetChildren { path, watch: false });
    }

    fn fail(&mut self, why: String, out: &mut Outbox<Outcome>) {
        self.node = None;
        out.emit(Outcome::Failed(why));
    }

    /// Our place among the children: hold, or watch the one before us.
    fn decide(&mut self, mut children: Vec<String>, out: &mut Outbox<Outcome>) {
        let Some(mine) = self.node.clone() else {
            return;
        };
        if !self.trust_server_order {
            children.sort_by_key(|name| sequence(name));
        }
        match children.iter().position(|name| *name == mine) {
            Some(0) => {
                self.held = true;
                out.emit(Outcome::Acquired(sequence(&mine)));
            }
            Some(index) => {
                let path = self.dir.child(&children[index - 1]).expect("a child name");
                out.send(WATCH, Request::Exists { path, watch: true });
            }
            None => self.fail(format!("{mine} is gone"), out),
        }
    }
}

/// The 10-digit counter ZooKeeper appends to a sequential node's name.
fn sequence(name: &str) -> i64 {
    name[name.len().saturating_sub(10)..]
        .parse()
        .unwrap_or(i64::MAX)
}

impl Recipe for SimpleLock {
    type Call = Call;
    type Outcome = Outcome;

    fn handle(&mut self, input: Input<Call>, out: &mut Outbox<Outcome>) {
        match input {
            Input::Call(Call::Lock) => {
                let path = self.dir.child("lock-").expect("a child path");
                let mode = CreateMode::EphemeralSequential;
                out.send(
                    CREATE,
                    Request::Create {
                        path,
                        data: Vec::new(),
                        mode,
                        acl: Acls::Open,
                    },
                );
            }
            Input::Call(Call::Unlock) => match self.node.take() {
                Some(name) => {
                    self.held = false;
                    let path = self.dir.child(&name).expect("a child path");
                    out.send(
                        DELETE,
                        Request::Delete {
                            path,
                            version: ANY_VERSION,
                        },
                    );
                }
                None => out.emit(Outcome::Failed("not holding".into())),
            },
            Input::Reply {
                tag,
                result: Err(error),
            } => self.fail(format!("request {tag:?} failed: {error:?}"), out),
            Input::Reply {
                tag,
                result: Ok(reply),
            } => match (tag, reply) {
                (CREATE, Reply::Created { path, .. }) => {
                    self.node = Some(path.name().to_string());
                    self.list(out);
                }
                (LIST, Reply::Children(children)) => self.decide(children, out),
                (WATCH, Reply::Exists(None)) => self.list(out),
                (WATCH, Reply::Exists(Some(_))) => {} // wait for the watch
                (DELETE, Reply::Deleted) => out.emit(Outcome::Released),
                (tag, reply) => self.fail(format!("unexpected {reply:?} to {tag:?}"), out),
            },
            Input::Watch(event) if event.event_type == EventType::NodeDeleted => {
                if self.node.is_some() && !self.held {
                    self.list(out);
                }
            }
            Input::Watch(_) | Input::WatcherEvent { .. } | Input::Session(_) | Input::Timer(_) => {}
        }
    }
}

// What the oracles see: one line per variant (`zkcheck::shapes` has the
// helpers, and ready outcome and call types for a recipe written anew).
zkcheck::observe_outcomes!(Outcome {
    Acquired(sequence) => acquired(sequence),
    Released => released(),
    Failed(reason) => failed(reason),
});

zkcheck::observe_calls!(Call {
    Lock => acquire(),
    Unlock => release(),
});

/// The renaming the model checker's symmetry and ranks use: the lock keeps
/// a node name (its sequence suffix is ranked by the default
/// `rename_node`) and grants the sequence number as its token. No client
/// id appears anywhere, and clients are never ordered by one.
impl Rename for SimpleLock {
    fn rename(&mut self, r: &mut Renaming) {
        if let Some(node) = &mut self.node {
            *node = r.name(&self.dir, node);
        }
    }
}

impl RenameRecipe for SimpleLock {
    fn rename_token(&self, r: &mut Renaming, token: FencingToken) -> FencingToken {
        FencingToken(i64::from(r.sequence(&self.dir, token.0 as i32)))
    }
}
