//! The corrected election: predecessor watch, sequence ordering, a create
//! that is safe to retry, and a leadership that is checked and given up.
//!
//! Volunteer:
//! 1. create `<parent>/n-<unique id>-` EPHEMERAL_SEQUENTIAL; on a connection
//!    loss, sync the parent, read the children and adopt the node carrying
//!    our id if the lost create was applied, else create again (no orphan,
//!    no duplicate). The sync matters on an ensemble: with the reply lost,
//!    the client may reconnect to a server that has not applied the create;
//! 2. read the children (no watch) and order our id's node among the others
//!    by sequence number, with wrap-around (serial) arithmetic;
//! 3. if a node precedes ours, watch only the immediate predecessor with
//!    getData and go back to 2 when it is deleted (one wakeup per change);
//!    getData rather than exists so that a predecessor already gone leaves
//!    no watch armed (as Curator's LeaderLatch does);
//! 4. if ours is first, check with exists that it is owned by the current
//!    session (`ephemeral_owner`) and announce `Elected` with its creation
//!    zxid as the fencing token.
//!
//! Sequence numbers are unique per parent until the counter reaches
//! `i32::MAX`, where ZooKeeper 3.8 keeps giving `2147483647` to every create;
//! unique names then make equal numbers, and equal numbers say nothing about
//! who came first. A contender that sees another node with its own number
//! deletes its node and fails with `SequenceExhausted` rather than guess.
//!
//! Connection losses are retried (every step is idempotent now); a session
//! expiry makes a leader report `Lost`, and a contender still volunteering
//! starts over when the driver connects a new session.

use super::{ElectionCall, ElectionError, ElectionOutcome};
use crate::recipe::{FencingToken, Input, Outbox, Recipe, Tag};
use crate::sequence::{last_before, parse_sequence, serial_order};
use crate::zk::Acls;
use crate::zk::{
    CreateMode, Path, Reply, Request, SessionEvent, SessionId, ZkError, ZkResult, ANY_VERSION,
};

/// Create our node.
const CREATE: Tag = Tag(1);
/// After a lost create reply: look for our id among the children.
const FIND_OWN: Tag = Tag(2);
/// Read the children to find our rank.
const RANK: Tag = Tag(3);
/// getData with a watch on the predecessor.
const WATCH_PREDECESSOR: Tag = Tag(4);
/// exists on our own node: is it ours, and its czxid for the token.
const CHECK_OWNER: Tag = Tag(5);
/// Delete our node on Resign.
const DELETE: Tag = Tag(6);
/// After a lost create reply: sync the parent before FIND_OWN.
const SYNC_OWN: Tag = Tag(7);

/// Where the contender is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Not in the election.
    Idle,
    /// The create is in flight; `resign` if Resign came meanwhile.
    Creating {
        resign: bool,
    },
    /// A create reply was lost; our server catches up with the leader.
    SyncingForOwn {
        resign: bool,
    },
    /// A create reply was lost; the children are being searched for our id.
    FindingOwn {
        resign: bool,
    },
    /// Reading the children to rank `node`.
    Ranking {
        node: Path,
    },
    /// Waiting for `predecessor` to go.
    Waiting {
        node: Path,
        predecessor: Path,
    },
    /// `node` is first; checking that it belongs to this session.
    Checking {
        node: Path,
    },
    Leading {
        node: Path,
    },
    /// The delete of `node` is in flight; `failure` is reported when done
    /// (the node is abandoned), else `Resigned`.
    Resigning {
        node: Path,
        failure: Option<ElectionError>,
    },
    /// The session expired while volunteering: start over in the next one.
    AwaitingSession,
}

/// A contender of the corrected election.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FixedElection {
    parent: Path,
    /// Drawn by the driver from the seed; unique among contenders.
    unique_id: u64,
    /// The current session (a new id means a new handle).
    session: Option<SessionId>,
    phase: Phase,
}

impl FixedElection {
    /// A contender under `parent` (which must exist) with a unique id.
    pub fn new(parent: Path, unique_id: u64) -> FixedElection {
        FixedElection {
            parent,
            unique_id,
            session: None,
            phase: Phase::Idle,
        }
    }

    /// The node name prefix carrying this contender's id: `n-<16 hex digits>-`.
    pub fn node_prefix(&self) -> String {
        format!("n-{:016x}-", self.unique_id)
    }

    /// True while this contender believes it leads.
    pub fn is_leading(&self) -> bool {
        matches!(self.phase, Phase::Leading { .. })
    }

    fn on_call(&mut self, call: ElectionCall, out: &mut Outbox<ElectionOutcome>) {
        match (call, &self.phase) {
            (ElectionCall::Volunteer, Phase::Idle) => self.create(out),
            (ElectionCall::Resign, Phase::AwaitingSession) => self.resigned(out),
            (ElectionCall::Resign, Phase::Creating { .. }) => {
                self.phase = Phase::Creating { resign: true }
            }
            (ElectionCall::Resign, Phase::SyncingForOwn { .. }) => {
                self.phase = Phase::SyncingForOwn { resign: true }
            }
            (ElectionCall::Resign, Phase::FindingOwn { .. }) => {
                self.phase = Phase::FindingOwn { resign: true }
            }
            (
                ElectionCall::Resign,
                Phase::Ranking { node }
                | Phase::Waiting { node, .. }
                | Phase::Checking { node }
                | Phase::Leading { node },
            ) => {
                let node = node.clone();
                self.delete(node, out);
            }
            _ => out.emit(ElectionOutcome::Failed(ElectionError::CallOutOfTurn(call))),
        }
    }

    fn on_reply(&mut self, tag: Tag, result: ZkResult, out: &mut Outbox<ElectionOutcome>) {
        if result == Err(ZkError::SessionExpired) {
            return self.session_expired(out);
        }
        match (tag, self.phase.clone()) {
            (CREATE, Phase::Creating { resign }) => self.on_created(result, resign, out),
            (SYNC_OWN, Phase::SyncingForOwn { resign }) => self.on_synced(result, resign, out),
            (FIND_OWN, Phase::FindingOwn { resign }) => self.on_found(result, resign, out),
            (RANK, Phase::Ranking { node }) => self.on_ranked(result, node, out),
            (WATCH_PREDECESSOR, Phase::Waiting { node, predecessor }) => {
                self.on_predecessor(result, node, predecessor, out)
            }
            (CHECK_OWNER, Phase::Checking { node }) => self.on_owner(result, node, out),
            (DELETE, Phase::Resigning { node, failure }) => {
                self.on_deleted(result, node, failure, out)
            }
            // A reply to a step left behind (e.g. after Resign or a spurious
            // wakeup): the current step has its own request in flight.
            _ => {}
        }
    }

    fn on_created(&mut self, result: ZkResult, resign: bool, out: &mut Outbox<ElectionOutcome>) {
        match result {
            Ok(Reply::Created { path, .. }) if resign => self.delete(path, out),
            Ok(Reply::Created { path, .. }) => self.rank(path, out),
            // The create may have been applied: look before creating again.
            Err(error) if error.is_connection_error() => self.find_own(resign, out),
            Err(error) => self.fail(ElectionError::Zk(error), out),
            Ok(_) => self.fail(ElectionError::Zk(ZkError::RuntimeInconsistency), out),
        }
    }

    fn on_synced(&mut self, result: ZkResult, resign: bool, out: &mut Outbox<ElectionOutcome>) {
        match result {
            Ok(_) => self.list_own(resign, out),
            Err(error) if error.is_connection_error() => self.find_own(resign, out),
            Err(error) => self.fail(ElectionError::Zk(error), out),
        }
    }

    fn on_found(&mut self, result: ZkResult, resign: bool, out: &mut Outbox<ElectionOutcome>) {
        let children = match result {
            Ok(Reply::Children(children)) => children,
            Err(error) if error.is_connection_error() => return self.find_own(resign, out),
            Err(error) => return self.fail(ElectionError::Zk(error), out),
            Ok(_) => return self.fail(ElectionError::Zk(ZkError::RuntimeInconsistency), out),
        };
        match (self.own_node(&children), resign) {
            (Some(node), true) => self.delete(node, out),
            (None, true) => self.resigned(out),
            (Some(node), false) => self.rank_among(node, &children, out),
            (None, false) => self.create(out),
        }
    }

    fn on_ranked(&mut self, result: ZkResult, node: Path, out: &mut Outbox<ElectionOutcome>) {
        match result {
            Ok(Reply::Children(children)) => self.rank_among(node, &children, out),
            Err(error) if error.is_connection_error() => self.rank(node, out),
            Err(error) => self.fail(ElectionError::Zk(error), out),
            Ok(_) => self.fail(ElectionError::Zk(ZkError::RuntimeInconsistency), out),
        }
    }

    fn on_predecessor(
        &mut self,
        result: ZkResult,
        node: Path,
        predecessor: Path,
        out: &mut Outbox<ElectionOutcome>,
    ) {
        match result {
            // The watch is armed: wait for NodeDeleted.
            Ok(_) => {}
            // Gone already: rank again.
            Err(ZkError::NoNode) => self.rank(node, out),
            Err(error) if error.is_connection_error() => {
                self.watch_predecessor(node, predecessor, out)
            }
            Err(error) => self.fail(ElectionError::Zk(error), out),
        }
    }

    fn on_owner(&mut self, result: ZkResult, node: Path, out: &mut Outbox<ElectionOutcome>) {
        match result {
            Ok(Reply::Exists(Some(stat)))
                if Some(SessionId(stat.ephemeral_owner)) == self.session =>
            {
                self.phase = Phase::Leading { node };
                out.emit(ElectionOutcome::Elected {
                    token: FencingToken(stat.czxid),
                });
            }
            // A node with our id from another session: never ours to lead with.
            Ok(Reply::Exists(Some(_))) => self.fail(ElectionError::NodeNotOwned, out),
            // Our node went away while our session lives (deleted by someone
            // else): volunteer again.
            Ok(Reply::Exists(None)) => self.create(out),
            Err(error) if error.is_connection_error() => self.check_owner(node, out),
            Err(error) => self.fail(ElectionError::Zk(error), out),
            Ok(_) => self.fail(ElectionError::Zk(ZkError::RuntimeInconsistency), out),
        }
    }

    fn on_deleted(
        &mut self,
        result: ZkResult,
        node: Path,
        failure: Option<ElectionError>,
        out: &mut Outbox<ElectionOutcome>,
    ) {
        match (result, failure) {
            (Ok(_) | Err(ZkError::NoNode), None) => self.resigned(out),
            (Ok(_) | Err(ZkError::NoNode), Some(failure)) => self.fail(failure, out),
            (Err(error), failure) if error.is_connection_error() => {
                self.delete_then(node, failure, out)
            }
            (Err(error), _) => self.fail(ElectionError::Zk(error), out),
        }
    }

    /// Only the watched predecessor's events matter; state events repeat
    /// what `Input::Session` says, and other node events come from watches
    /// of steps left behind.
    fn on_watch(&mut self, path: Option<Path>, out: &mut Outbox<ElectionOutcome>) {
        if let Phase::Waiting { node, predecessor } = &self.phase {
            // Whatever the event says: it may be spurious, and it used up
            // the one-shot watch, which ranking again arms anew.
            if path.as_ref() == Some(predecessor) {
                let node = node.clone();
                self.rank(node, out);
            }
        }
    }

    fn on_session(&mut self, event: SessionEvent, out: &mut Outbox<ElectionOutcome>) {
        match event {
            SessionEvent::Connected { session_id } if self.session != Some(session_id) => {
                if self.session.is_some() {
                    // A new handle without an Expired first: the old one is dead.
                    self.session_expired(out);
                }
                self.session = Some(session_id);
                if self.phase == Phase::AwaitingSession {
                    self.create(out);
                }
            }
            SessionEvent::Expired => self.session_expired(out),
            // Reconnected into the same session, or disconnected: requests in
            // flight were answered with ConnectionLoss and are being retried.
            SessionEvent::Connected { .. } | SessionEvent::Disconnected => {}
        }
    }

    /// The session's ephemerals are gone: a leader has lost, a resign is done,
    /// a contender waits for the next session.
    fn session_expired(&mut self, out: &mut Outbox<ElectionOutcome>) {
        match &self.phase {
            Phase::Idle | Phase::AwaitingSession => {}
            Phase::Leading { .. } => {
                self.phase = Phase::Idle;
                out.emit(ElectionOutcome::Lost);
            }
            Phase::Resigning {
                failure: Some(failure),
                ..
            } => {
                let failure = failure.clone();
                self.fail(failure, out)
            }
            Phase::Resigning { failure: None, .. }
            | Phase::Creating { resign: true }
            | Phase::SyncingForOwn { resign: true }
            | Phase::FindingOwn { resign: true } => self.resigned(out),
            Phase::Creating { resign: false }
            | Phase::SyncingForOwn { resign: false }
            | Phase::FindingOwn { resign: false }
            | Phase::Ranking { .. }
            | Phase::Waiting { .. }
            | Phase::Checking { .. } => self.phase = Phase::AwaitingSession,
        }
    }

    /// Orders the children by sequence and waits for, or checks, our turn.
    fn rank_among(&mut self, node: Path, children: &[String], out: &mut Outbox<ElectionOutcome>) {
        let Some(own_sequence) = member_sequence(node.name()) else {
            return self.fail(ElectionError::Zk(ZkError::BadArguments), out);
        };
        if !children.iter().any(|child| child == node.name()) {
            // Our node is gone although the session lives: volunteer again.
            return self.create(out);
        }
        let tied =
            |child: &&String| *child != node.name() && member_sequence(child) == Some(own_sequence);
        if children.iter().any(|child| tied(&child)) {
            return self.delete_then(node, Some(ElectionError::SequenceExhausted), out);
        }
        let members = children
            .iter()
            .filter_map(|child| Some((child, member_sequence(child)?)));
        match last_before(own_sequence, members) {
            None => self.check_owner(node, out),
            Some(name) => match self.parent.child(name) {
                Ok(predecessor) => self.watch_predecessor(node, predecessor, out),
                Err(_) => self.fail(ElectionError::Zk(ZkError::BadArguments), out),
            },
        }
    }

    /// The child carrying our id, as a full path; the oldest if there are
    /// several (only an id collision makes several).
    fn own_node(&self, children: &[String]) -> Option<Path> {
        let prefix = self.node_prefix();
        let name = children
            .iter()
            .filter(|child| child.starts_with(&prefix))
            .filter_map(|child| Some((member_sequence(child)?, child)))
            .min_by(|(a, _), (b, _)| serial_order(*a, *b))?
            .1;
        self.parent.child(name).ok()
    }

    fn create(&mut self, out: &mut Outbox<ElectionOutcome>) {
        self.phase = Phase::Creating { resign: false };
        let path = self
            .parent
            .child(&self.node_prefix())
            .expect("the prefix is a valid name");
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

    /// After a lost create reply: sync, then look for our node.
    fn find_own(&mut self, resign: bool, out: &mut Outbox<ElectionOutcome>) {
        self.phase = Phase::SyncingForOwn { resign };
        let path = self.parent.clone();
        out.send(SYNC_OWN, Request::Sync { path });
    }

    fn list_own(&mut self, resign: bool, out: &mut Outbox<ElectionOutcome>) {
        self.phase = Phase::FindingOwn { resign };
        out.send(
            FIND_OWN,
            Request::GetChildren {
                path: self.parent.clone(),
                watch: false,
            },
        );
    }

    fn rank(&mut self, node: Path, out: &mut Outbox<ElectionOutcome>) {
        self.phase = Phase::Ranking { node };
        out.send(
            RANK,
            Request::GetChildren {
                path: self.parent.clone(),
                watch: false,
            },
        );
    }

    fn watch_predecessor(
        &mut self,
        node: Path,
        predecessor: Path,
        out: &mut Outbox<ElectionOutcome>,
    ) {
        out.send(
            WATCH_PREDECESSOR,
            Request::GetData {
                path: predecessor.clone(),
                watch: true,
            },
        );
        self.phase = Phase::Waiting { node, predecessor };
    }

    fn check_owner(&mut self, node: Path, out: &mut Outbox<ElectionOutcome>) {
        out.send(
            CHECK_OWNER,
            Request::Exists {
                path: node.clone(),
                watch: false,
            },
        );
        self.phase = Phase::Checking { node };
    }

    fn delete(&mut self, node: Path, out: &mut Outbox<ElectionOutcome>) {
        self.delete_then(node, None, out);
    }

    /// Deletes `node`, then reports `failure`, or `Resigned` if none.
    fn delete_then(
        &mut self,
        node: Path,
        failure: Option<ElectionError>,
        out: &mut Outbox<ElectionOutcome>,
    ) {
        out.send(
            DELETE,
            Request::Delete {
                path: node.clone(),
                version: ANY_VERSION,
            },
        );
        self.phase = Phase::Resigning { node, failure };
    }

    fn resigned(&mut self, out: &mut Outbox<ElectionOutcome>) {
        self.phase = Phase::Idle;
        out.emit(ElectionOutcome::Resigned);
    }

    fn fail(&mut self, error: ElectionError, out: &mut Outbox<ElectionOutcome>) {
        self.phase = Phase::Idle;
        out.emit(ElectionOutcome::Failed(error));
    }
}

/// The sequence of a contender's node `n-<16 hex digits>-<sequence>`.
fn member_sequence(name: &str) -> Option<i32> {
    let rest = name.strip_prefix("n-")?;
    let (id, sequence) = (rest.get(..16)?, rest.get(16..)?);
    if !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    parse_sequence(sequence.strip_prefix('-')?)
}

impl Recipe for FixedElection {
    type Call = ElectionCall;
    type Outcome = ElectionOutcome;

    fn handle(&mut self, input: Input<ElectionCall>, out: &mut Outbox<ElectionOutcome>) {
        match input {
            Input::Call(call) => self.on_call(call, out),
            Input::Reply { tag, result } => self.on_reply(tag, result, out),
            // All its watches are the default watcher's (`send`).
            Input::Watch(event) | Input::WatcherEvent { event, .. } => {
                self.on_watch(event.path, out)
            }
            Input::Session(event) => self.on_session(event, out),
            // This recipe sets no timers.
            Input::Timer(_) => {}
        }
    }
}

impl crate::rename::Rename for FixedElection {
    fn rename(&mut self, r: &mut crate::rename::Renaming) {
        self.unique_id = r.unique_id(self.unique_id);
        self.session.rename(r);
        match &mut self.phase {
            Phase::Ranking { node }
            | Phase::Checking { node }
            | Phase::Leading { node }
            | Phase::Resigning { node, .. } => node.rename(r),
            Phase::Waiting { node, predecessor } => {
                node.rename(r);
                predecessor.rename(r);
            }
            Phase::Idle
            | Phase::Creating { .. }
            | Phase::SyncingForOwn { .. }
            | Phase::FindingOwn { .. }
            | Phase::AwaitingSession => {}
        }
    }
}

impl crate::rename::RenameRecipe for FixedElection {
    /// `n-<unique id, 16 hex digits>-<sequence>` (or the create's prefix).
    fn rename_node(r: &mut crate::rename::Renaming, parent: &str, name: &str) -> String {
        let Some((id, tail)) = name
            .strip_prefix("n-")
            .and_then(|rest| Some((rest.get(..16)?, rest.get(16..)?)))
        else {
            return name.to_owned();
        };
        let hex = id.bytes().all(|b| b.is_ascii_hexdigit()) && tail.starts_with('-');
        let Some(id) = u64::from_str_radix(id, 16).ok().filter(|_| hex) else {
            return name.to_owned();
        };
        let renamed = format!("n-{:016x}{tail}", r.unique_id(id));
        r.sequence_suffix(parent, &renamed, "n-".len() + 16 + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_names_parse_with_wrapped_sequences() {
        assert_eq!(member_sequence("n-000000000000002a-0000000007"), Some(7));
        assert_eq!(
            member_sequence("n-000000000000002a--2147483648"),
            Some(i32::MIN)
        );
        assert_eq!(member_sequence("lock-0000000007"), None);
        assert_eq!(member_sequence("n-00000000000000zz-0000000007"), None);
    }
}
