//! TEST FIXTURE, not a shipped recipe: the smallest recipe whose recovery
//! read after a lost create reply decides whether it creates again.
//!
//! `Lock` creates an ephemeral-sequential node `DIR/x-<id>-`; its reply
//! grants the (one client's) hold. When the create's reply is lost
//! (ConnectionLoss: the create may or may not have been applied), the
//! recipe lists `DIR` to find its own node, and creates again only if it
//! is not there. `Unlock` deletes the node it knows.
//!
//! Without `sync` before that listing, a client that reconnected to a
//! follower which has not applied the create yet does not see its own
//! node, creates a second one, and the first one leaks. With `sync` first
//! (ZooKeeper's "sync before a read that must be current") the follower
//! catches up to the commit point before it answers the listing.

use zk_recipes::lock::{LockCall, LockOutcome};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Reply, Request, ZkError, ANY_VERSION};
use zk_recipes::{FencingToken, Input, Outbox, Recipe, Tag};

const CREATE: Tag = Tag(1);
const SYNC: Tag = Tag(2);
const LIST: Tag = Tag(3);
const DELETE: Tag = Tag(4);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Register {
    dir: Path,
    id: u32,
    /// `sync` before the recovery listing.
    sync_first: bool,
    node: Option<Path>,
}

impl Register {
    pub fn new(dir: Path, id: u32, sync_first: bool) -> Register {
        Register {
            dir,
            id,
            sync_first,
            node: None,
        }
    }

    fn prefix(&self) -> String {
        format!("x-{}-", self.id)
    }

    fn create(&self, out: &mut Outbox<LockOutcome>) {
        let path = self.dir.child(&self.prefix()).expect("a valid name");
        out.send(
            CREATE,
            Request::Create {
                path,
                data: Vec::new(),
                mode: CreateMode::EphemeralSequential,
                acl: Acls::Open,
            },
        );
    }

    /// After a lost create reply: find out whether the create was applied.
    fn recover(&self, out: &mut Outbox<LockOutcome>) {
        if self.sync_first {
            let path = self.dir.clone();
            out.send(SYNC, Request::Sync { path });
        } else {
            self.list(out);
        }
    }

    fn list(&self, out: &mut Outbox<LockOutcome>) {
        let path = self.dir.clone();
        out.send(LIST, Request::GetChildren { path, watch: false });
    }

    fn acquired(&mut self, path: Path, out: &mut Outbox<LockOutcome>) {
        let token = zk_models::sequence_suffix(path.name()).unwrap_or(0);
        self.node = Some(path);
        out.emit(LockOutcome::Acquired {
            token: FencingToken(i64::from(token)),
        });
    }
}

impl Recipe for Register {
    type Call = LockCall;
    type Outcome = LockOutcome;

    fn handle(&mut self, input: Input<LockCall>, out: &mut Outbox<LockOutcome>) {
        match input {
            Input::Call(LockCall::Lock) => self.create(out),
            Input::Call(LockCall::Unlock) => match &self.node {
                Some(path) => out.send(
                    DELETE,
                    Request::Delete {
                        path: path.clone(),
                        version: ANY_VERSION,
                    },
                ),
                None => out.emit(LockOutcome::Released),
            },
            Input::Reply { tag, result } => match (tag, result) {
                (CREATE, Ok(Reply::Created { path, .. })) => self.acquired(path, out),
                (CREATE | SYNC, Err(ZkError::ConnectionLoss)) => self.recover(out),
                (SYNC, Ok(_)) => self.list(out),
                (LIST, Ok(Reply::Children(children))) => {
                    let prefix = self.prefix();
                    match children.iter().find(|name| name.starts_with(&prefix)) {
                        Some(name) => {
                            let path = self.dir.child(name).expect("a child's name");
                            self.acquired(path, out)
                        }
                        None => self.create(out),
                    }
                }
                (LIST, Err(ZkError::ConnectionLoss)) => self.list(out),
                (DELETE, Ok(_) | Err(ZkError::NoNode)) => {
                    self.node = None;
                    out.emit(LockOutcome::Released);
                }
                (DELETE, Err(ZkError::ConnectionLoss)) => {
                    self.handle(Input::Call(LockCall::Unlock), out)
                }
                (_, Err(error)) => out.emit(LockOutcome::zk_failure(error)),
                (_, Ok(_)) => {}
            },
            Input::Watch(_) | Input::WatcherEvent { .. } | Input::Session(_) | Input::Timer(_) => {}
        }
    }
}
