//! The corrected acquisition engine shared by the fixed lock, semaphore and
//! shared lock: one EPHEMERAL_SEQUENTIAL "ticket" node per acquisition under
//! a parent, and a [`Rule`] that says, from the children's names, whether the
//! ticket holds or what to wait for.
//!
//! Acquire:
//! 1. create `<parent>/_c_<id>-<label>` (the label carries what is asked
//!    for: `lock-`, `2-lease-`, `read-`); on NoNode find the missing
//!    ancestors (exists, top down) and create them as containers together
//!    with our node in one multi: the server reaps a container once its last
//!    child goes but keeps forever one that never had a child, so an
//!    ancestor must never exist without our node (a client dying in between
//!    would leak it); on a connection loss sync the parent (the client may
//!    reconnect to a server that has not applied the create yet), read the
//!    children and adopt the node carrying our id, after checking with
//!    exists that our current session owns it (no orphan, no duplicate);
//! 2. read the children (with a child watch if the rule waits for any
//!    change) and ask the rule;
//! 3. held: the fencing token is the node's creation zxid (sequence numbers
//!    restart when a reaped parent is created again, zxids do not); wait for
//!    a node: getData with a watch on it (NoNode: back to 2 at once); wait for
//!    the children: the child watch of step 2 is armed;
//! 4. the deadline passing while waiting deletes the node: TimedOut. A node
//!    numbered `2147483647` is deleted too (SequenceExhausted): the parent's
//!    counter sticks there, so later nodes share the number and cannot be
//!    ordered; once everyone has left, the container is reaped and a new one
//!    counts from 0.
//!
//! Release deletes the node (NoNode after a lost reply of our own delete is
//! Released; NoNode otherwise means someone else deleted it: Lost). A session
//! expiry, told by the session or by a SessionExpired reply, makes a holder
//! report Lost and a pending acquire start over in the next session.
//! Exactly one request is in flight at a time, so replies are matched by tag.

use super::parents;
use crate::recipe::{FencingToken, Input, Outbox, Tag, TimerId};
use crate::rename::{Rename, Renaming};
use crate::sequence::{prefixed_sequence, STUCK_SEQUENCE};
use crate::zk::Acls;
use crate::zk::{
    CreateMode, EventType, MultiOp, OpResult, Path, Reply, Request, SessionEvent, SessionId,
    WatchedEvent, ZkError, ZkResult, ANY_VERSION,
};
use serde::{Deserialize, Serialize};
use std::fmt::Debug;
use std::hash::Hash;

/// Create our node.
const CREATE: Tag = Tag(1);
/// exists on one ancestor, to find the first missing one.
const PROBE_PARENT: Tag = Tag(2);
/// multi: the missing ancestors as containers, then our node.
const CREATE_WITH_PARENTS: Tag = Tag(9);
/// After a lost create reply: look for our id among the children.
const FIND_OWN: Tag = Tag(3);
/// After a lost create reply: sync the parent before FIND_OWN.
const SYNC_OWN: Tag = Tag(10);
/// exists on a recovered node: its owner and its czxid.
const CHECK_OWN: Tag = Tag(4);
/// Read the children and ask the rule.
const RANK: Tag = Tag(5);
/// getData with a watch on the node the rule waits for.
const WATCH_NODE: Tag = Tag(6);
/// Delete our node and give up.
const GIVE_UP: Tag = Tag(7);
/// Delete our node on release.
const RELEASE: Tag = Tag(8);

/// The timer of a timed acquire.
pub const ACQUIRE_TIMEOUT: TimerId = TimerId(1);

/// What a rule decides for our ticket.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Our ticket holds.
    Holds,
    /// Wait until this child (a name) changes or goes.
    WaitFor(String),
    /// Wait until the children change (needs [`Rule::WATCH_CHILDREN`]).
    WaitForChildren,
}

/// When a ticket holds, from the children's names.
pub trait Rule: Clone + Debug + Eq + Hash {
    /// Read the children with a child watch (for `WaitForChildren`).
    const WATCH_CHILDREN: bool;
    /// Decides for `own` (present in `children`, its sequence below the
    /// stuck one). Names the rule cannot parse are not tickets: ignore them.
    fn decide(&self, own: &str, children: &[String]) -> Decision;
}

/// What the engine tells the recipe around it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TicketOutcome {
    Acquired { token: FencingToken },
    TimedOut,
    Released,
    Lost,
    Failed(TicketError),
}

/// Why an acquire or a release failed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error, Serialize, Deserialize)]
pub enum TicketError {
    #[error("ZooKeeper error: {0}")]
    Zk(ZkError),
    /// The node carrying this client's id belongs to another session.
    #[error("the node with this client's id belongs to another session")]
    NodeNotOwned,
    /// The parent's sequence counter is used up (it sticks at 2147483647).
    #[error("the parent's sequence counter is exhausted")]
    SequenceExhausted,
}

/// Why an acquire deletes its node and gives up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum GiveUp {
    Deadline,
    SequenceExhausted,
}

impl GiveUp {
    fn outcome(self) -> TicketOutcome {
        match self {
            GiveUp::Deadline => TicketOutcome::TimedOut,
            GiveUp::SequenceExhausted => TicketOutcome::Failed(TicketError::SequenceExhausted),
        }
    }
}

/// Our node, by name, with its fencing token.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct OwnNode {
    name: String,
    token: FencingToken,
}

/// What a waiting ticket waits for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum WaitOn {
    Node(Path),
    Children,
}

/// Where the ticket is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Idle,
    Creating,
    /// Asking whether ancestor number `level` of the parent exists.
    ProbingParents {
        level: usize,
    },
    /// The multi creating the missing ancestors and our node.
    CreatingWithParents,
    /// A create's reply was lost: our server catches up with the leader.
    SyncingForOwn,
    FindingOwn,
    /// Checking that the recovered node `name` is ours.
    CheckingOwn {
        name: String,
    },
    Ranking {
        node: OwnNode,
    },
    /// getData with a watch on `path` is in flight.
    WatchingNode {
        node: OwnNode,
        path: Path,
    },
    Waiting {
        node: OwnNode,
        on: WaitOn,
    },
    /// Deleting `name` and giving up (NoNode counts as deleted).
    GivingUp {
        name: String,
        why: GiveUp,
    },
    Holding {
        node: OwnNode,
    },
    /// `maybe_deleted` once a delete may have been applied unheard.
    Releasing {
        name: String,
        maybe_deleted: bool,
    },
    /// The session expired during an acquire: start over in the next one.
    AwaitingSession,
}

/// One client's ticket under `parent`, decided by the rule `R`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ticket<R: Rule> {
    parent: Path,
    /// Drawn by the driver from the seed; unique among clients.
    unique_id: u64,
    rule: R,
    /// The label of the current acquisition (`lock-`, `2-lease-`, ...).
    label: String,
    session: Option<SessionId>,
    /// The current session is known to be gone.
    session_lost: bool,
    /// The timed acquire's deadline passed.
    deadline_passed: bool,
    /// A wakeup came while the request setting its watch was in flight.
    early_wakeup: bool,
    phase: Phase,
}

impl<R: Rule> Ticket<R> {
    pub fn new(parent: Path, unique_id: u64, rule: R) -> Ticket<R> {
        Ticket {
            parent,
            unique_id,
            rule,
            label: String::new(),
            session: None,
            session_lost: false,
            deadline_passed: false,
            early_wakeup: false,
            phase: Phase::Idle,
        }
    }

    /// The prefix of every node this client creates: `_c_<id>-`.
    pub fn id_prefix(&self) -> String {
        format!("_c_{}-", self.unique_id)
    }

    pub fn is_idle(&self) -> bool {
        self.phase == Phase::Idle
    }

    pub fn is_holding(&self) -> bool {
        matches!(self.phase, Phase::Holding { .. })
    }

    /// The token of the ticket held.
    pub fn token(&self) -> Option<FencingToken> {
        match &self.phase {
            Phase::Holding { node } => Some(node.token),
            _ => None,
        }
    }

    /// Starts an acquisition (the caller checked `is_idle`).
    pub fn acquire(
        &mut self,
        label: String,
        timeout_ms: Option<u64>,
        out: &mut Outbox<TicketOutcome>,
    ) {
        debug_assert!(self.is_idle(), "acquire on a busy ticket");
        self.label = label;
        self.deadline_passed = false;
        if let Some(timeout_ms) = timeout_ms {
            out.set_timer(ACQUIRE_TIMEOUT, timeout_ms);
        }
        if self.session.is_some() && !self.session_lost {
            self.create(out);
        } else {
            self.phase = Phase::AwaitingSession;
        }
    }

    /// Releases the ticket held (the caller checked `is_holding`).
    pub fn release(&mut self, out: &mut Outbox<TicketOutcome>) {
        if let Phase::Holding { node } = self.phase.clone() {
            self.release_node(node.name, false, out);
        }
    }

    /// Hands a driver input to the engine. An application call is the
    /// business of the recipe around the engine: it is handed back.
    pub fn on_input<C>(&mut self, input: Input<C>, out: &mut Outbox<TicketOutcome>) -> Option<C> {
        match input {
            Input::Call(call) => return Some(call),
            Input::Reply { tag, result } => self.on_reply(tag, result, out),
            // The engine's watches are the default watcher's (`send`).
            Input::Watch(event) | Input::WatcherEvent { event, .. } => self.on_watch(&event, out),
            Input::Session(event) => self.on_session(event, out),
            Input::Timer(id) => self.on_timer(id, out),
        }
        None
    }

    pub fn on_reply(&mut self, tag: Tag, result: ZkResult, out: &mut Outbox<TicketOutcome>) {
        if self.expected_tag() != Some(tag) {
            // One request in flight at a time: this one is from a step left
            // behind (e.g. before an expiry).
            return;
        }
        match result {
            Err(ZkError::SessionExpired) => self.on_session_lost(out),
            Err(error) if error.is_connection_error() => self.retry(out),
            result => self.on_answer(result, out),
        }
    }

    /// A node event on what we wait for means: look again. State events
    /// change nothing (watches survive a reconnect; an expiry comes as a
    /// session event); other node events are from watches left behind.
    pub fn on_watch(&mut self, event: &WatchedEvent, out: &mut Outbox<TicketOutcome>) {
        if event.event_type == EventType::None {
            return;
        }
        let on_children = event.event_type == EventType::NodeChildrenChanged
            && event.path.as_ref() == Some(&self.parent);
        match self.phase.clone() {
            Phase::Waiting {
                node,
                on: WaitOn::Node(path),
            } if event.path.as_ref() == Some(&path) => self.rank(node, out),
            Phase::Waiting {
                node,
                on: WaitOn::Children,
            } if on_children => self.rank(node, out),
            // A wakeup ahead of the reply of the request that set its watch
            // (beyond ZooKeeper's ordering guarantee): act on it after the reply.
            Phase::WatchingNode { path, .. } if event.path.as_ref() == Some(&path) => {
                self.early_wakeup = true
            }
            Phase::Ranking { .. } if R::WATCH_CHILDREN && on_children => self.early_wakeup = true,
            _ => {}
        }
    }

    pub fn on_timer(&mut self, id: TimerId, out: &mut Outbox<TicketOutcome>) {
        if id != ACQUIRE_TIMEOUT {
            return;
        }
        match self.phase.clone() {
            Phase::Waiting { node, .. } => self.give_up(node.name, GiveUp::Deadline, out),
            Phase::AwaitingSession => self.finish(TicketOutcome::TimedOut, out),
            // Decided at the next step that could wait.
            Phase::Creating
            | Phase::ProbingParents { .. }
            | Phase::CreatingWithParents
            | Phase::SyncingForOwn
            | Phase::FindingOwn
            | Phase::CheckingOwn { .. }
            | Phase::Ranking { .. }
            | Phase::WatchingNode { .. } => self.deadline_passed = true,
            Phase::Idle
            | Phase::GivingUp { .. }
            | Phase::Holding { .. }
            | Phase::Releasing { .. } => {}
        }
    }

    pub fn on_session(&mut self, event: SessionEvent, out: &mut Outbox<TicketOutcome>) {
        match event {
            SessionEvent::Connected { session_id } if self.session != Some(session_id) => {
                if self.session.is_some() {
                    // A new handle: whatever the old one held is gone.
                    self.on_session_lost(out);
                }
                self.session = Some(session_id);
                self.session_lost = false;
                if self.phase == Phase::AwaitingSession {
                    self.create(out);
                }
            }
            SessionEvent::Expired => self.on_session_lost(out),
            // Reconnected into the same session or disconnected: requests in
            // flight failed with ConnectionLoss and are being retried.
            SessionEvent::Connected { .. } | SessionEvent::Disconnected => {}
        }
    }

    fn expected_tag(&self) -> Option<Tag> {
        match self.phase {
            Phase::Idle
            | Phase::Waiting { .. }
            | Phase::Holding { .. }
            | Phase::AwaitingSession => None,
            Phase::Creating => Some(CREATE),
            Phase::ProbingParents { .. } => Some(PROBE_PARENT),
            Phase::CreatingWithParents => Some(CREATE_WITH_PARENTS),
            Phase::SyncingForOwn => Some(SYNC_OWN),
            Phase::FindingOwn => Some(FIND_OWN),
            Phase::CheckingOwn { .. } => Some(CHECK_OWN),
            Phase::Ranking { .. } => Some(RANK),
            Phase::WatchingNode { .. } => Some(WATCH_NODE),
            Phase::GivingUp { .. } => Some(GIVE_UP),
            Phase::Releasing { .. } => Some(RELEASE),
        }
    }

    fn on_answer(&mut self, result: ZkResult, out: &mut Outbox<TicketOutcome>) {
        match (self.phase.clone(), result) {
            (Phase::Creating, Ok(Reply::Created { path, stat })) => {
                let node = OwnNode {
                    name: path.name().to_string(),
                    token: FencingToken(stat.czxid),
                };
                self.rank(node, out);
            }
            (Phase::Creating, Err(ZkError::NoNode)) => self.probe_parent(0, out),
            (Phase::ProbingParents { level }, Ok(Reply::Exists(Some(_)))) => {
                if level + 1 < parents::ancestors_and_self(&self.parent).len() {
                    self.probe_parent(level + 1, out);
                } else {
                    // Created by someone else meanwhile.
                    self.create(out);
                }
            }
            (Phase::ProbingParents { level }, Ok(Reply::Exists(None))) => {
                self.create_with_parents(level, out)
            }
            (Phase::CreatingWithParents, Ok(Reply::Multi(results))) => {
                match results.last() {
                    // A create inside a multi has no valid stat
                    // (ZOOKEEPER-4026): read the token with exists.
                    Some(OpResult::Created { path, .. }) => {
                        self.check_own(path.name().to_string(), out)
                    }
                    _ => self.fail(ZkError::RuntimeInconsistency, out),
                }
            }
            // An ancestor was created or reaped meanwhile: start over.
            (Phase::CreatingWithParents, Err(error))
                if matches!(error.root_cause(), ZkError::NodeExists | ZkError::NoNode) =>
            {
                self.create(out)
            }
            (Phase::SyncingForOwn, Ok(_)) => self.list_own(out),
            (Phase::FindingOwn, Ok(Reply::Children(children))) => {
                let requested = self.requested_name();
                match children
                    .into_iter()
                    .find(|child| child.starts_with(&requested))
                {
                    Some(name) => self.check_own(name, out),
                    None => self.create(out),
                }
            }
            (Phase::FindingOwn, Err(ZkError::NoNode)) => self.create(out),
            (Phase::CheckingOwn { name }, Ok(Reply::Exists(Some(stat)))) => {
                if Some(SessionId(stat.ephemeral_owner)) == self.session {
                    self.rank(
                        OwnNode {
                            name,
                            token: FencingToken(stat.czxid),
                        },
                        out,
                    );
                } else {
                    self.finish(TicketOutcome::Failed(TicketError::NodeNotOwned), out);
                }
            }
            (Phase::CheckingOwn { .. }, Ok(Reply::Exists(None))) => self.create(out),
            (Phase::Ranking { node }, Ok(Reply::Children(children))) => {
                self.decide(node, &children, out)
            }
            // The parent is gone, so is our node although the session lives.
            (Phase::Ranking { .. }, Err(ZkError::NoNode)) => self.create(out),
            (Phase::WatchingNode { node, .. }, Ok(_)) if self.early_wakeup => self.rank(node, out),
            (Phase::WatchingNode { node, path }, Ok(_)) => {
                if self.deadline_passed {
                    self.give_up(node.name, GiveUp::Deadline, out);
                } else {
                    self.phase = Phase::Waiting {
                        node,
                        on: WaitOn::Node(path),
                    };
                }
            }
            (Phase::WatchingNode { node, .. }, Err(ZkError::NoNode)) => self.rank(node, out),
            (Phase::GivingUp { why, .. }, Ok(_) | Err(ZkError::NoNode)) => {
                self.finish(why.outcome(), out)
            }
            (Phase::Releasing { .. }, Ok(_)) => self.finish(TicketOutcome::Released, out),
            // Our own earlier delete, or somebody else's: then we did not
            // hold all along.
            (Phase::Releasing { maybe_deleted, .. }, Err(ZkError::NoNode)) => self.finish(
                if maybe_deleted {
                    TicketOutcome::Released
                } else {
                    TicketOutcome::Lost
                },
                out,
            ),
            (_, Err(error)) => self.fail(error, out),
            (_, Ok(_)) => self.fail(ZkError::RuntimeInconsistency, out),
        }
    }

    fn decide(&mut self, node: OwnNode, children: &[String], out: &mut Outbox<TicketOutcome>) {
        if !children.contains(&node.name) {
            // Deleted by someone else while our session lives: start over.
            return self.create(out);
        }
        match prefixed_sequence(&node.name, &self.requested_name()) {
            None => return self.fail(ZkError::BadArguments, out),
            Some(STUCK_SEQUENCE) => return self.give_up(node.name, GiveUp::SequenceExhausted, out),
            Some(_) => {}
        }
        match self.rule.decide(&node.name, children) {
            Decision::Holds => {
                out.cancel_timer(ACQUIRE_TIMEOUT);
                out.emit(TicketOutcome::Acquired { token: node.token });
                self.phase = Phase::Holding { node };
            }
            _ if self.deadline_passed => self.give_up(node.name, GiveUp::Deadline, out),
            Decision::WaitFor(name) => match self.parent.child(&name) {
                Ok(path) => self.watch_node(node, path, out),
                Err(_) => self.fail(ZkError::BadArguments, out),
            },
            Decision::WaitForChildren if R::WATCH_CHILDREN && self.early_wakeup => {
                self.rank(node, out)
            }
            Decision::WaitForChildren if R::WATCH_CHILDREN => {
                self.phase = Phase::Waiting {
                    node,
                    on: WaitOn::Children,
                };
            }
            // A rule that waits for the children without watching them.
            Decision::WaitForChildren => self.fail(ZkError::BadArguments, out),
        }
    }

    /// Re-sends the current step's request after a connection loss.
    fn retry(&mut self, out: &mut Outbox<TicketOutcome>) {
        match self.phase.clone() {
            // The create may have been applied: look before creating again.
            Phase::Creating | Phase::SyncingForOwn | Phase::FindingOwn => self.find_own(out),
            Phase::ProbingParents { level } => self.probe_parent(level, out),
            // The multi may have been applied: look before creating again.
            Phase::CreatingWithParents => self.find_own(out),
            Phase::CheckingOwn { name } => self.check_own(name, out),
            Phase::Ranking { node } => self.rank(node, out),
            Phase::WatchingNode { node, path } => self.watch_node(node, path, out),
            Phase::GivingUp { name, why } => self.give_up(name, why, out),
            Phase::Releasing { name, .. } => self.release_node(name, true, out),
            Phase::Idle
            | Phase::Waiting { .. }
            | Phase::Holding { .. }
            | Phase::AwaitingSession => {}
        }
    }

    /// The session's ephemerals are gone.
    fn on_session_lost(&mut self, out: &mut Outbox<TicketOutcome>) {
        self.session_lost = true;
        match self.phase {
            Phase::Idle | Phase::AwaitingSession => {}
            Phase::Holding { .. } | Phase::Releasing { .. } => {
                self.finish(TicketOutcome::Lost, out)
            }
            Phase::GivingUp { why, .. } => self.finish(why.outcome(), out),
            Phase::Creating
            | Phase::ProbingParents { .. }
            | Phase::CreatingWithParents
            | Phase::SyncingForOwn
            | Phase::FindingOwn
            | Phase::CheckingOwn { .. }
            | Phase::Ranking { .. }
            | Phase::WatchingNode { .. }
            | Phase::Waiting { .. } => {
                if self.deadline_passed {
                    self.finish(TicketOutcome::TimedOut, out);
                } else {
                    self.phase = Phase::AwaitingSession;
                }
            }
        }
    }

    /// `_c_<id>-<label>`: what we ask the server to create.
    fn requested_name(&self) -> String {
        format!("{}{}", self.id_prefix(), self.label)
    }

    fn create(&mut self, out: &mut Outbox<TicketOutcome>) {
        self.phase = Phase::Creating;
        match self.parent.child(&self.requested_name()) {
            Ok(path) => out.send(
                CREATE,
                Request::Create {
                    path,
                    data: Vec::new(),
                    mode: CreateMode::EphemeralSequential,
                    acl: Acls::Open,
                },
            ),
            Err(_) => self.fail(ZkError::BadArguments, out),
        }
    }

    fn probe_parent(&mut self, level: usize, out: &mut Outbox<TicketOutcome>) {
        self.phase = Phase::ProbingParents { level };
        match parents::ancestors_and_self(&self.parent)
            .into_iter()
            .nth(level)
        {
            Some(path) => out.send(PROBE_PARENT, Request::Exists { path, watch: false }),
            None => self.fail(ZkError::BadArguments, out),
        }
    }

    /// One multi: the ancestors from `level` down as containers, then our node.
    fn create_with_parents(&mut self, level: usize, out: &mut Outbox<TicketOutcome>) {
        self.phase = Phase::CreatingWithParents;
        let Ok(node) = self.parent.child(&self.requested_name()) else {
            return self.fail(ZkError::BadArguments, out);
        };
        let container = |path| MultiOp::Create {
            path,
            data: Vec::new(),
            mode: CreateMode::Container,
            acl: Acls::Open,
        };
        let ancestors = parents::ancestors_and_self(&self.parent)
            .into_iter()
            .skip(level);
        let mut ops: Vec<MultiOp> = ancestors.map(container).collect();
        let mode = CreateMode::EphemeralSequential;
        ops.push(MultiOp::Create {
            path: node,
            data: Vec::new(),
            mode,
            acl: Acls::Open,
        });
        out.send(CREATE_WITH_PARENTS, Request::Multi(ops));
    }

    /// After a lost create reply: sync, then look for our node.
    fn find_own(&mut self, out: &mut Outbox<TicketOutcome>) {
        self.phase = Phase::SyncingForOwn;
        let path = self.parent.clone();
        out.send(SYNC_OWN, Request::Sync { path });
    }

    fn list_own(&mut self, out: &mut Outbox<TicketOutcome>) {
        self.phase = Phase::FindingOwn;
        out.send(
            FIND_OWN,
            Request::GetChildren {
                path: self.parent.clone(),
                watch: false,
            },
        );
    }

    fn check_own(&mut self, name: String, out: &mut Outbox<TicketOutcome>) {
        match self.parent.child(&name) {
            Ok(path) => out.send(CHECK_OWN, Request::Exists { path, watch: false }),
            Err(_) => return self.fail(ZkError::BadArguments, out),
        }
        self.phase = Phase::CheckingOwn { name };
    }

    fn rank(&mut self, node: OwnNode, out: &mut Outbox<TicketOutcome>) {
        self.phase = Phase::Ranking { node };
        self.early_wakeup = false;
        out.send(
            RANK,
            Request::GetChildren {
                path: self.parent.clone(),
                watch: R::WATCH_CHILDREN,
            },
        );
    }

    fn watch_node(&mut self, node: OwnNode, path: Path, out: &mut Outbox<TicketOutcome>) {
        out.send(
            WATCH_NODE,
            Request::GetData {
                path: path.clone(),
                watch: true,
            },
        );
        self.phase = Phase::WatchingNode { node, path };
        self.early_wakeup = false;
    }

    fn give_up(&mut self, name: String, why: GiveUp, out: &mut Outbox<TicketOutcome>) {
        self.send_delete(GIVE_UP, &name, out);
        self.phase = Phase::GivingUp { name, why };
    }

    fn release_node(&mut self, name: String, maybe_deleted: bool, out: &mut Outbox<TicketOutcome>) {
        self.send_delete(RELEASE, &name, out);
        self.phase = Phase::Releasing {
            name,
            maybe_deleted,
        };
    }

    fn send_delete(&mut self, tag: Tag, name: &str, out: &mut Outbox<TicketOutcome>) {
        if let Ok(path) = self.parent.child(name) {
            out.send(
                tag,
                Request::Delete {
                    path,
                    version: ANY_VERSION,
                },
            );
        }
    }

    fn fail(&mut self, error: ZkError, out: &mut Outbox<TicketOutcome>) {
        self.finish(TicketOutcome::Failed(TicketError::Zk(error)), out);
    }

    fn finish(&mut self, outcome: TicketOutcome, out: &mut Outbox<TicketOutcome>) {
        out.cancel_timer(ACQUIRE_TIMEOUT);
        self.phase = Phase::Idle;
        out.emit(outcome);
    }
}

/// Moves the requests and timers an engine emitted into the recipe's outbox
/// and returns the engine's outcomes for the recipe to translate.
pub fn forward<O>(inner: Outbox<TicketOutcome>, out: &mut Outbox<O>) -> Vec<TicketOutcome> {
    out.requests.extend(inner.requests);
    out.timers.extend(inner.timers);
    inner.outcomes
}

impl<R: Rule> Rename for Ticket<R> {
    fn rename(&mut self, r: &mut Renaming) {
        self.unique_id = r.unique_id(self.unique_id);
        self.session.rename(r);
        let parent = &self.parent;
        let node = |r: &mut Renaming, node: &mut OwnNode| {
            node.name = r.name(parent, &node.name);
            node.token = FencingToken(r.zxid(node.token.0));
        };
        match &mut self.phase {
            Phase::CheckingOwn { name }
            | Phase::GivingUp { name, .. }
            | Phase::Releasing { name, .. } => *name = r.name(parent, name),
            Phase::Ranking { node: own } | Phase::Holding { node: own } => node(r, own),
            Phase::WatchingNode { node: own, path }
            | Phase::Waiting {
                node: own,
                on: WaitOn::Node(path),
            } => {
                node(r, own);
                path.rename(r);
            }
            Phase::Waiting { node: own, .. } => node(r, own),
            Phase::Idle
            | Phase::Creating
            | Phase::ProbingParents { .. }
            | Phase::CreatingWithParents
            | Phase::SyncingForOwn
            | Phase::FindingOwn
            | Phase::AwaitingSession => {}
        }
    }
}

#[cfg(test)]
mod tests;
