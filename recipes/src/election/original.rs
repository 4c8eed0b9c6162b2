//! Seed 003's leader election (class `Client`), step by step, bugs included.
//!
//! The seed: `run()` creates `/leader/lock-` EPHEMERAL_SEQUENTIAL and calls
//! `getLeader()`; `getLeader()` reads the children of `/leader` with a watcher
//! that calls `getLeader()` again on `NodeChildrenChanged`, parses every
//! child's sequence with `getSeq` and leads if no child has a smaller one.
//!
//! Bugs kept on purpose:
//! - herd effect (known bug 4): every contender, the leader included, watches
//!   the whole list, so every join and every leave wakes all of them and each
//!   re-reads the list;
//! - blind retry (known bug 2): a create whose reply was lost to a connection
//!   loss is sent again (the "retry problem" the seed's text warns about); if
//!   the first one was applied, its node is an orphan that sorts before the
//!   retry and blocks this contender, and everyone behind it, until the
//!   session ends;
//! - errors inside the watcher are printed and swallowed (`e.printStackTrace()`):
//!   a read that fails there leaves no watch armed and the contender never
//!   looks again; an error in `run()`'s first read escapes, leaving the node;
//! - the watcher ignores events of type None, so a leader whose session
//!   expired never learns it (no `Lost`), and nobody volunteers again;
//! - once the parent's counter reaches `i32::MAX`, ZooKeeper names every
//!   create `lock-2147483647`: a newcomer's create fails with NodeExists and
//!   the exception escapes `run()`.
//!
//! The seed text is cut inside `getLeader` (the body of `getSeq` and the
//! comparison are lost); the comparison is step 4 of the seed's description:
//! the contender leads when no child has a smaller sequence number.
//! The seed has no way to resign but ending the process; `Resign` here deletes
//! the node and stops reacting, as closing the handle would.

use super::{ElectionCall, ElectionError, ElectionOutcome};
use crate::recipe::{FencingToken, FreshWatchers, Input, Outbox, Recipe, Tag, WatcherId};
use crate::sequence::sequence_after;
use crate::zk::Acls;
use crate::zk::{CreateMode, EventType, Path, Reply, Request, ZkError, ZkResult, ANY_VERSION};
use std::collections::VecDeque;

/// `run()`: `zk.create(LEADER_PATH + "/lock-", ...)`.
const CREATE: Tag = Tag(1);
/// `getLeader()` called from `run()`: its errors escape to the application.
const READ_IN_RUN: Tag = Tag(2);
/// `getLeader()` called from the watcher: its errors are swallowed.
const READ_IN_WATCHER: Tag = Tag(3);
/// `Resign`: delete the node.
const DELETE: Tag = Tag(4);

/// The prefix the seed gives its nodes.
const NODE_PREFIX: &str = "lock-";

/// Where the contender is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Not in the election.
    Idle,
    /// The create is in flight.
    Creating,
    /// Node created; reading the list or waiting for the child watch.
    Contending,
    /// The delete of `Resign` is in flight.
    Resigning,
}

/// Seed 003's contender.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OriginalElection {
    /// `LEADER_PATH`.
    parent: Path,
    phase: Phase,
    /// The seed's `path` field: the node of the last successful create.
    node: Option<Path>,
    /// Leadership announced. The seed prints "leader" on every pass that
    /// finds it smallest; the outcome is emitted once per leadership.
    leading: bool,
    /// The live `new Watcher() { .. }` objects: each getLeader() call
    /// registers a distinct one on `/leader`.
    watchers: FreshWatchers,
    /// The watchers of the reads awaiting their replies, in send order.
    reads_in_flight: VecDeque<WatcherId>,
}

impl OriginalElection {
    /// A contender under `parent` (the seed's `/leader`, which must exist).
    pub fn new(parent: Path) -> OriginalElection {
        OriginalElection {
            parent,
            phase: Phase::Idle,
            node: None,
            leading: false,
            watchers: FreshWatchers::default(),
            reads_in_flight: VecDeque::new(),
        }
    }

    /// The node this contender created last, if any.
    pub fn node(&self) -> Option<&Path> {
        self.node.as_ref()
    }

    fn on_call(&mut self, call: ElectionCall, out: &mut Outbox<ElectionOutcome>) {
        match (call, self.phase) {
            (ElectionCall::Volunteer, Phase::Idle) => {
                self.phase = Phase::Creating;
                self.send_create(out);
            }
            (ElectionCall::Resign, Phase::Contending) => {
                let node = self
                    .node
                    .clone()
                    .expect("a contending client has created its node");
                self.phase = Phase::Resigning;
                out.send(
                    DELETE,
                    Request::Delete {
                        path: node,
                        version: ANY_VERSION,
                    },
                );
            }
            _ => out.emit(ElectionOutcome::Failed(ElectionError::CallOutOfTurn(call))),
        }
    }

    fn on_reply(&mut self, tag: Tag, result: ZkResult, out: &mut Outbox<ElectionOutcome>) {
        if matches!(tag, READ_IN_RUN | READ_IN_WATCHER) {
            // A failed read registered no watch: its watcher is gone.
            if let Some(watcher) = self.reads_in_flight.pop_front() {
                if result.is_err() {
                    self.watchers.release(watcher);
                }
            }
        }
        match (tag, self.phase) {
            (CREATE, Phase::Creating) => self.on_created(result, out),
            (READ_IN_RUN | READ_IN_WATCHER, Phase::Contending) => {
                self.on_children(tag, result, out)
            }
            (DELETE, Phase::Resigning) => self.on_deleted(result, out),
            // A read answered after Resign: the seed would not be running any more.
            _ => {}
        }
    }

    /// seed 003 run(): `path = zk.create(...)`, then `getLeader(zk)`.
    fn on_created(&mut self, result: ZkResult, out: &mut Outbox<ElectionOutcome>) {
        match result {
            Ok(Reply::Created { path, .. }) => {
                self.node = Some(path);
                self.phase = Phase::Contending;
                self.send_read(READ_IN_RUN, out);
            }
            // The retry problem of seed 003: the create is sent again blindly,
            // although the lost one may have been applied (known bug 2).
            Err(error) if error.is_connection_error() => self.send_create(out),
            Err(error) => self.fail(error, out),
            Ok(other) => self.fail_unexpected(other, out),
        }
    }

    /// seed 003 getLeader(): compare our sequence with every child's.
    fn on_children(&mut self, tag: Tag, result: ZkResult, out: &mut Outbox<ElectionOutcome>) {
        let children = match result {
            Ok(Reply::Children(children)) => children,
            Ok(other) => return self.fail_unexpected(other, out),
            // In run(), the exception escapes to the application; the node stays.
            Err(error) if tag == READ_IN_RUN => return self.fail(error, out),
            // In the watcher: e.printStackTrace(); no watch is armed any more.
            Err(_) => return,
        };
        let Some(own) = self.node.as_ref().and_then(|node| sequence_of(node.name())) else {
            return self.fail(ZkError::BadArguments, out);
        };
        let mut is_min = true;
        for child in &children {
            match sequence_of(child) {
                Some(child_seq) if child_seq < own => is_min = false,
                Some(_) => {}
                // getSeq throws NumberFormatException: escapes from run(),
                // is logged by the event thread when called from the watcher.
                None if tag == READ_IN_RUN => return self.fail(ZkError::BadArguments, out),
                None => return,
            }
        }
        if is_min && !self.leading {
            self.leading = true;
            out.emit(ElectionOutcome::Elected {
                token: FencingToken(own),
            });
        }
    }

    fn on_deleted(&mut self, result: ZkResult, out: &mut Outbox<ElectionOutcome>) {
        match result {
            Ok(_) => {
                self.node = None;
                self.leading = false;
                self.phase = Phase::Idle;
                out.emit(ElectionOutcome::Resigned);
            }
            Err(error) => {
                self.phase = Phase::Contending;
                out.emit(ElectionOutcome::Failed(ElectionError::Zk(error)));
            }
        }
    }

    /// seed 003 getLeader()'s watcher: only NodeChildrenChanged calls
    /// getLeader again; state events (type None: Disconnected, Expired) are
    /// ignored, so an expired leader never finds out.
    fn on_watch(&mut self, event_type: EventType, out: &mut Outbox<ElectionOutcome>) {
        if event_type == EventType::NodeChildrenChanged && self.phase == Phase::Contending {
            self.send_read(READ_IN_WATCHER, out);
        }
    }

    fn send_create(&self, out: &mut Outbox<ElectionOutcome>) {
        let path = self
            .parent
            .child(NODE_PREFIX)
            .expect("`lock-` is a valid name");
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

    /// `zk.getChildren(LEADER_PATH, new Watcher() { .. })`.
    fn send_read(&mut self, tag: Tag, out: &mut Outbox<ElectionOutcome>) {
        let watcher = self.watchers.make();
        self.reads_in_flight.push_back(watcher);
        out.send_watched(
            tag,
            Request::GetChildren {
                path: self.parent.clone(),
                watch: true,
            },
            watcher,
        );
    }

    /// An exception reaches the application; the node (if any) stays.
    fn fail(&mut self, error: ZkError, out: &mut Outbox<ElectionOutcome>) {
        self.phase = Phase::Idle;
        out.emit(ElectionOutcome::Failed(ElectionError::Zk(error)));
    }

    fn fail_unexpected(&mut self, _reply: Reply, out: &mut Outbox<ElectionOutcome>) {
        self.fail(ZkError::RuntimeInconsistency, out);
    }
}

/// seed 003 getSeq(): the number after `lock-`, parsed as a signed long.
fn sequence_of(name: &str) -> Option<i64> {
    sequence_after(name, NODE_PREFIX).map(i64::from)
}

impl Recipe for OriginalElection {
    type Call = ElectionCall;
    type Outcome = ElectionOutcome;

    fn handle(&mut self, input: Input<ElectionCall>, out: &mut Outbox<ElectionOutcome>) {
        match input {
            Input::Call(call) => self.on_call(call, out),
            Input::Reply { tag, result } => self.on_reply(tag, result, out),
            // Each getLeader() watcher reacts to NodeChildrenChanged only. No
            // read arms the default watcher; an injected `Input::Watch` is
            // taken as a getLeader() watcher's.
            Input::WatcherEvent { watcher, event } => {
                if event.event_type != EventType::None {
                    self.watchers.release(watcher); // one-shot: fired
                }
                self.on_watch(event.event_type, out)
            }
            Input::Watch(event) => self.on_watch(event.event_type, out),
            // The seed's default watcher only waits for the first connection.
            Input::Session(_) => {}
            Input::Timer(_) => {}
        }
    }
}

impl crate::rename::Rename for OriginalElection {
    fn rename(&mut self, r: &mut crate::rename::Renaming) {
        self.node.rename(r);
    }
}

impl crate::rename::RenameRecipe for OriginalElection {
    /// `lock-<sequence>`: no id, the sequence ranked.
    fn rename_node(r: &mut crate::rename::Renaming, parent: &str, name: &str) -> String {
        match name.starts_with(NODE_PREFIX) {
            true => r.sequence_suffix(parent, name, NODE_PREFIX.len()),
            false => name.to_owned(),
        }
    }

    /// The token is the node's sequence number.
    fn rename_token(&self, r: &mut crate::rename::Renaming, token: FencingToken) -> FencingToken {
        FencingToken(i64::from(r.sequence(&self.parent, token.0 as i32)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_seq_reads_the_signed_suffix() {
        assert_eq!(sequence_of("lock-0000000012"), Some(12));
        assert_eq!(sequence_of("lock--2147483648"), Some(-2147483648));
        assert_eq!(sequence_of("other"), None);
    }
}
