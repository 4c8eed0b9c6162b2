//! TEST FIXTURES, not shipped recipes: a small read/write lock with one bug
//! behind each flag, written to reproduce the diagnoses users found
//! confidently wrong (issue 32, item 2).
//!
//! The lock: an acquire creates an ephemeral-sequential node
//! `DIR/<read|write>-<id>-`, lists `DIR` (no watch), and holds if nothing
//! blocks it (a writer: no node before its own; a reader: no write node
//! before its own); otherwise it calls exists() with a watch on the node
//! that blocks it and lists again when that node goes (or is already gone).
//! A create lost to a connection loss is recovered by listing for its own
//! prefix. A release deletes its node, retried after a connection loss.
//!
//! The bugs:
//! - `stale_watch`: every acquire first calls exists() with a watch on
//!   `DIR/ready`, a node nobody creates: a creation watch stays armed
//!   forever beside the watch the lock really waits on;
//! - [`Release::Forget`]: a release reports Released without deleting the
//!   node (the client goes on, and with another cycle holds two nodes);
//! - [`Release::Once`]: a release sends its delete once and reports
//!   Released whatever the answer (a delete queued while disconnected
//!   fails at a reconnect attempt and is not retried);
//! - `reader_checks_predecessor_only`: a reader holds when the node right
//!   before its own is a read node (it assumes that reader holds), so it
//!   holds under a writer that a waiting reader sits behind;
//! - `reader_waits_on_later_writer`: a reader waits on the first write
//!   node after its own (the wrong direction) when there is one, and a
//!   writer on the node before its own: a reader and a later writer wait
//!   on each other (a circular wait across modes);
//! - `drops_deleted_event`: the event of the node it waits on being
//!   deleted is ignored (the client waits for ever with no watch of its
//!   own wait armed: with `stale_watch`, only the stale one).

use zk_recipes::shared_lock::{LockMode, SharedLockCall, SharedLockError, SharedLockOutcome};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, EventType, Path, Reply, Request, ZkError, ANY_VERSION};
use zk_recipes::{FencingToken, Input, Outbox, Recipe, Tag};

const READY: Tag = Tag(1);
const CREATE: Tag = Tag(2);
const LIST: Tag = Tag(3);
const RECOVER: Tag = Tag(4);
const WATCH: Tag = Tag(5);
const DELETE: Tag = Tag(6);

/// What a release does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Release {
    /// Deletes the node, retried after a connection loss (correct).
    Delete,
    /// Reports Released without deleting the node.
    Forget,
    /// Sends the delete once and reports Released whatever came of it.
    Once,
}

/// The bugs a fixture lock has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bugs {
    pub stale_watch: bool,
    pub release: Release,
    pub reader_checks_predecessor_only: bool,
    pub reader_waits_on_later_writer: bool,
    pub drops_deleted_event: bool,
}

impl Bugs {
    pub const NONE: Bugs = Bugs {
        stale_watch: false,
        release: Release::Delete,
        reader_checks_predecessor_only: false,
        reader_waits_on_later_writer: false,
        drops_deleted_event: false,
    };
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FixtureLock {
    dir: Path,
    id: u64,
    bugs: Bugs,
    mode: LockMode,
    node: Option<Path>,
    /// The node it waits on, while it waits.
    blocker: Option<Path>,
}

impl FixtureLock {
    pub fn new(dir: Path, id: u64, bugs: Bugs) -> FixtureLock {
        FixtureLock {
            dir,
            id,
            bugs,
            mode: LockMode::Write,
            node: None,
            blocker: None,
        }
    }

    fn prefix(&self) -> String {
        format!("{}{}-", self.mode.marker(), self.id)
    }

    fn acquire(&mut self, mode: LockMode, out: &mut Outbox<SharedLockOutcome>) {
        self.mode = mode;
        if self.bugs.stale_watch {
            let path = self.dir.child("ready").expect("a valid name");
            out.send(READY, Request::Exists { path, watch: true });
        }
        self.create(out);
    }

    fn create(&self, out: &mut Outbox<SharedLockOutcome>) {
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

    fn list(&self, tag: Tag, out: &mut Outbox<SharedLockOutcome>) {
        let path = self.dir.clone();
        out.send(tag, Request::GetChildren { path, watch: false });
    }

    /// The children that are lock nodes, by sequence number.
    fn contenders(children: &[String]) -> Vec<(u32, &String)> {
        let mut nodes: Vec<(u32, &String)> = children
            .iter()
            .filter_map(|name| Some((zk_models::sequence_suffix(name)?, name)))
            .collect();
        nodes.sort();
        nodes
    }

    fn is_write(name: &str) -> bool {
        name.starts_with(LockMode::Write.marker())
    }

    /// The node that blocks this client's, if any (None: it holds).
    fn blocking<'a>(&self, mine: &str, children: &'a [String]) -> Option<&'a String> {
        let nodes = Self::contenders(children);
        let at = nodes.iter().position(|(_, name)| *name == mine)?;
        let (before, after) = (&nodes[..at], &nodes[at + 1..]);
        match self.mode {
            LockMode::Read if self.bugs.reader_waits_on_later_writer => after
                .iter()
                .find(|(_, name)| Self::is_write(name))
                .map(|(_, name)| *name),
            LockMode::Write => before.last().map(|(_, name)| *name),
            LockMode::Read if self.bugs.reader_checks_predecessor_only => before
                .last()
                .filter(|(_, name)| Self::is_write(name))
                .map(|(_, name)| *name),
            LockMode::Read => before
                .iter()
                .rev()
                .find(|(_, name)| Self::is_write(name))
                .map(|(_, name)| *name),
        }
    }

    fn listed(&mut self, children: &[String], out: &mut Outbox<SharedLockOutcome>) {
        let Some(node) = self.node.clone() else {
            return;
        };
        if !children.iter().any(|name| name == node.name()) {
            out.emit(SharedLockOutcome::Lost);
            self.node = None;
            return;
        }
        match self.blocking(node.name(), children) {
            None => {
                let token = zk_models::sequence_suffix(node.name()).unwrap_or(0);
                self.blocker = None;
                out.emit(SharedLockOutcome::Acquired {
                    mode: self.mode,
                    token: FencingToken(i64::from(token)),
                });
            }
            Some(name) => {
                let path = self.dir.child(name).expect("a child's name");
                self.blocker = Some(path.clone());
                out.send(WATCH, Request::Exists { path, watch: true });
            }
        }
    }

    fn recovered(&mut self, children: &[String], out: &mut Outbox<SharedLockOutcome>) {
        let prefix = self.prefix();
        match children.iter().find(|name| name.starts_with(&prefix)) {
            Some(name) => {
                self.node = Some(self.dir.child(name).expect("a child's name"));
                self.listed(children, out);
            }
            None => self.create(out),
        }
    }

    fn release(&mut self, out: &mut Outbox<SharedLockOutcome>) {
        match (self.bugs.release, &self.node) {
            (Release::Forget, _) | (_, None) => {
                self.node = None;
                out.emit(SharedLockOutcome::Released);
            }
            (_, Some(path)) => out.send(
                DELETE,
                Request::Delete {
                    path: path.clone(),
                    version: ANY_VERSION,
                },
            ),
        }
    }

    fn reply(
        &mut self,
        tag: Tag,
        result: Result<Reply, ZkError>,
        out: &mut Outbox<SharedLockOutcome>,
    ) {
        match (tag, result) {
            (READY, _) => {}
            (CREATE, Ok(Reply::Created { path, .. })) => {
                self.node = Some(path);
                self.list(LIST, out);
            }
            (CREATE | RECOVER, Err(ZkError::ConnectionLoss)) => self.list(RECOVER, out),
            (RECOVER, Ok(Reply::Children(children))) => self.recovered(&children, out),
            (LIST, Ok(Reply::Children(children))) => self.listed(&children, out),
            (LIST, Err(ZkError::ConnectionLoss)) => self.list(LIST, out),
            (WATCH, Ok(Reply::Exists(Some(_)))) => {}
            (WATCH, Ok(Reply::Exists(None)) | Err(ZkError::ConnectionLoss)) => self.list(LIST, out),
            (DELETE, Err(ZkError::ConnectionLoss)) if self.bugs.release == Release::Delete => {
                self.release(out)
            }
            (DELETE, _) => {
                self.node = None;
                out.emit(SharedLockOutcome::Released);
            }
            (_, Err(error)) => {
                self.node = None;
                out.emit(SharedLockOutcome::Failed(SharedLockError::Zk(error)));
            }
            (_, Ok(_)) => {}
        }
    }
}

impl Recipe for FixtureLock {
    type Call = SharedLockCall;
    type Outcome = SharedLockOutcome;

    fn handle(&mut self, input: Input<SharedLockCall>, out: &mut Outbox<SharedLockOutcome>) {
        match input {
            Input::Call(SharedLockCall::Acquire { mode }) => self.acquire(mode, out),
            Input::Call(SharedLockCall::Release) => self.release(out),
            Input::Reply { tag, result } => self.reply(tag, result, out),
            Input::Watch(event) => {
                let deleted = event.event_type == EventType::NodeDeleted;
                let heard = deleted && !self.bugs.drops_deleted_event;
                if heard && event.path.is_some() && event.path == self.blocker {
                    self.blocker = None;
                    self.list(LIST, out);
                }
            }
            Input::WatcherEvent { .. } | Input::Session(_) | Input::Timer(_) => {}
        }
    }
}
