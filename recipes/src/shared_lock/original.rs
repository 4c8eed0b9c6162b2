//! The ZooKeeper documentation's shared lock, written straightforwardly,
//! with the pitfall the documentation warns about: a blind retry of the
//! sequential create after a connection loss (known bug 2).
//!
//! Acquire (documentation steps):
//! 1. create `<lock>/read-` or `<lock>/write-` EPHEMERAL_SEQUENTIAL; on
//!    ConnectionLoss create again (if the first create was applied, its node
//!    stays: an orphan of our own live session);
//! 2. getChildren without a watch;
//! 3. reader: no `write-` node with a lower sequence number: held; writer: no
//!    node with a lower sequence number: held;
//! 4. else exists with a watch on the last `write-` node below ours
//!    (reader) or the node just below ours (writer);
//! 5. exists false: back to 2; else wait for the watcher, then back to 2.
//!
//! Release deletes the node (retried on ConnectionLoss; NoNode then counts as
//! done). The lock node must exist. Sequence numbers are compared as
//! numbers. Every other error, SessionExpired included, fails the call; a
//! holder never learns that its session expired.

use super::{LockMode, SharedLockCall, SharedLockError, SharedLockOutcome};
use crate::recipe::{FencingToken, Input, Outbox, Recipe, Tag};
use crate::sequence::prefixed_sequence;
use crate::zk::Acls;
use crate::zk::{CreateMode, Path, Reply, Request, ZkError, ZkResult, ANY_VERSION};

/// Step 1: create our node.
const CREATE: Tag = Tag(1);
/// Step 2: getChildren.
const READ_CHILDREN: Tag = Tag(2);
/// Step 4: exists with a watch.
const WATCH: Tag = Tag(3);
/// Release: delete our node.
const DELETE: Tag = Tag(4);

/// Where the client is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Idle,
    Creating { mode: LockMode },
    ReadingChildren { mode: LockMode, node: String },
    Watching { mode: LockMode, node: String },
    Waiting { mode: LockMode, node: String },
    Holding { node: String },
    Releasing { node: String },
}

/// A client of the documentation's shared lock.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OriginalSharedLock {
    /// The documentation's `_locknode_`; must exist.
    lock_path: Path,
    phase: Phase,
}

/// A node `read-<sequence>` or `write-<sequence>`.
fn parse_node(name: &str) -> Option<(LockMode, i32)> {
    [LockMode::Read, LockMode::Write]
        .into_iter()
        .find_map(|mode| Some((mode, prefixed_sequence(name, mode.marker())?)))
}

impl OriginalSharedLock {
    pub fn new(lock_path: Path) -> OriginalSharedLock {
        OriginalSharedLock {
            lock_path,
            phase: Phase::Idle,
        }
    }

    /// The mode held, if any (as the client believes).
    pub fn holding(&self) -> Option<LockMode> {
        match &self.phase {
            Phase::Holding { node } => parse_node(node).map(|(mode, _)| mode),
            _ => None,
        }
    }

    fn on_call(&mut self, call: SharedLockCall, out: &mut Outbox<SharedLockOutcome>) {
        match (call, self.phase.clone()) {
            (SharedLockCall::Acquire { mode }, Phase::Idle) => self.create(mode, out),
            (SharedLockCall::Release, Phase::Holding { node }) => self.delete(node, out),
            (SharedLockCall::Release, Phase::Idle) => {
                out.emit(SharedLockOutcome::Failed(SharedLockError::NotHeld))
            }
            (call, _) => out.emit(SharedLockOutcome::Failed(SharedLockError::CallOutOfTurn(
                call,
            ))),
        }
    }

    fn expected_tag(&self) -> Option<Tag> {
        match self.phase {
            Phase::Idle | Phase::Waiting { .. } | Phase::Holding { .. } => None,
            Phase::Creating { .. } => Some(CREATE),
            Phase::ReadingChildren { .. } => Some(READ_CHILDREN),
            Phase::Watching { .. } => Some(WATCH),
            Phase::Releasing { .. } => Some(DELETE),
        }
    }

    fn on_reply(&mut self, tag: Tag, result: ZkResult, out: &mut Outbox<SharedLockOutcome>) {
        if self.expected_tag() != Some(tag) {
            return;
        }
        match (self.phase.clone(), result) {
            (Phase::Creating { mode }, Ok(Reply::Created { path, .. })) => {
                self.read_children(mode, path.name().to_string(), out)
            }
            // The pitfall: create again without looking (known bug 2).
            (Phase::Creating { mode }, Err(ZkError::ConnectionLoss)) => self.create(mode, out),
            (Phase::ReadingChildren { mode, node }, Ok(Reply::Children(children))) => {
                self.decide(mode, node, &children, out)
            }
            (Phase::ReadingChildren { mode, node }, Err(ZkError::ConnectionLoss)) => {
                self.read_children(mode, node, out)
            }
            (Phase::Watching { mode, node }, Ok(Reply::Exists(Some(_)))) => {
                self.phase = Phase::Waiting { mode, node }
            }
            (Phase::Watching { mode, node }, Ok(Reply::Exists(None))) => {
                self.read_children(mode, node, out)
            }
            // The watch may not be set: look again.
            (Phase::Watching { mode, node }, Err(ZkError::ConnectionLoss)) => {
                self.read_children(mode, node, out)
            }
            (Phase::Releasing { .. }, Ok(_) | Err(ZkError::NoNode)) => {
                self.finish(SharedLockOutcome::Released, out)
            }
            (Phase::Releasing { node }, Err(ZkError::ConnectionLoss)) => self.delete(node, out),
            (_, Err(error)) => {
                self.finish(SharedLockOutcome::Failed(SharedLockError::Zk(error)), out)
            }
            (_, Ok(_)) => self.finish(
                SharedLockOutcome::Failed(SharedLockError::Zk(ZkError::RuntimeInconsistency)),
                out,
            ),
        }
    }

    /// Steps 3 and 4.
    fn decide(
        &mut self,
        mode: LockMode,
        node: String,
        children: &[String],
        out: &mut Outbox<SharedLockOutcome>,
    ) {
        let Some((_, own)) = parse_node(&node) else {
            return self.finish(
                SharedLockOutcome::Failed(SharedLockError::Zk(ZkError::BadArguments)),
                out,
            );
        };
        if !children.contains(&node) {
            return self.finish(
                SharedLockOutcome::Failed(SharedLockError::Zk(ZkError::NoNode)),
                out,
            );
        }
        let blocker = children
            .iter()
            .filter_map(|child| Some((parse_node(child)?, child)))
            .filter(|((child_mode, sequence), _)| {
                *sequence < own && (mode == LockMode::Write || *child_mode == LockMode::Write)
            })
            .max_by_key(|((_, sequence), _)| *sequence)
            .map(|(_, child)| child.clone());
        match blocker.map(|name| self.lock_path.child(&name)) {
            None => {
                out.emit(SharedLockOutcome::Acquired {
                    mode,
                    token: FencingToken(i64::from(own)),
                });
                self.phase = Phase::Holding { node };
            }
            Some(Ok(path)) => {
                out.send(WATCH, Request::Exists { path, watch: true });
                self.phase = Phase::Watching { mode, node };
            }
            Some(Err(_)) => self.finish(
                SharedLockOutcome::Failed(SharedLockError::Zk(ZkError::BadArguments)),
                out,
            ),
        }
    }

    /// The watcher re-runs step 2 on whatever it is told.
    fn on_watch(&mut self, out: &mut Outbox<SharedLockOutcome>) {
        if let Phase::Waiting { mode, node } = self.phase.clone() {
            self.read_children(mode, node, out);
        }
    }

    fn create(&mut self, mode: LockMode, out: &mut Outbox<SharedLockOutcome>) {
        match self.lock_path.child(mode.marker()) {
            Ok(path) => {
                out.send(
                    CREATE,
                    Request::Create {
                        path,
                        data: Vec::new(),
                        mode: CreateMode::EphemeralSequential,
                        acl: Acls::Open,
                    },
                );
                self.phase = Phase::Creating { mode };
            }
            Err(_) => self.finish(
                SharedLockOutcome::Failed(SharedLockError::Zk(ZkError::BadArguments)),
                out,
            ),
        }
    }

    fn read_children(&mut self, mode: LockMode, node: String, out: &mut Outbox<SharedLockOutcome>) {
        out.send(
            READ_CHILDREN,
            Request::GetChildren {
                path: self.lock_path.clone(),
                watch: false,
            },
        );
        self.phase = Phase::ReadingChildren { mode, node };
    }

    fn delete(&mut self, node: String, out: &mut Outbox<SharedLockOutcome>) {
        if let Ok(path) = self.lock_path.child(&node) {
            out.send(
                DELETE,
                Request::Delete {
                    path,
                    version: ANY_VERSION,
                },
            );
        }
        self.phase = Phase::Releasing { node };
    }

    fn finish(&mut self, outcome: SharedLockOutcome, out: &mut Outbox<SharedLockOutcome>) {
        self.phase = Phase::Idle;
        out.emit(outcome);
    }
}

impl Recipe for OriginalSharedLock {
    type Call = SharedLockCall;
    type Outcome = SharedLockOutcome;

    fn handle(&mut self, input: Input<SharedLockCall>, out: &mut Outbox<SharedLockOutcome>) {
        match input {
            Input::Call(call) => self.on_call(call, out),
            Input::Reply { tag, result } => self.on_reply(tag, result, out),
            // "exists() with watch flag set": the default watcher. Its state
            // changes arrive as `Input::Session`; only node events wake it.
            Input::Watch(_) | Input::WatcherEvent { .. } => self.on_watch(out),
            // The straightforward recipe does not watch its session.
            Input::Session(_) => {}
            // No timers are set.
            Input::Timer(_) => {}
        }
    }
}

impl crate::rename::Rename for OriginalSharedLock {
    fn rename(&mut self, r: &mut crate::rename::Renaming) {
        let path = &self.lock_path;
        match &mut self.phase {
            Phase::ReadingChildren { node, .. }
            | Phase::Watching { node, .. }
            | Phase::Waiting { node, .. }
            | Phase::Holding { node }
            | Phase::Releasing { node } => *node = r.name(path, node),
            Phase::Idle | Phase::Creating { .. } => {}
        }
    }
}

impl crate::rename::RenameRecipe for OriginalSharedLock {
    /// `read-<sequence>` or `write-<sequence>`: no id, the sequence ranked.
    fn rename_node(r: &mut crate::rename::Renaming, parent: &str, name: &str) -> String {
        match parse_node(name) {
            Some((mode, _)) => r.sequence_suffix(parent, name, mode.marker().len()),
            None => name.to_owned(),
        }
    }

    /// The token is the node's sequence number.
    fn rename_token(&self, r: &mut crate::rename::Renaming, token: FencingToken) -> FencingToken {
        FencingToken(i64::from(r.sequence(&self.lock_path, token.0 as i32)))
    }
}
