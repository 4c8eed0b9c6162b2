//! The double barrier of the ZooKeeper recipes documentation, made safe to
//! retry and leak-free.
//!
//! Enter:
//! 0. read the root's data version: the number of rounds opened so far;
//! 1. create `root/m-<unique id>` EPHEMERAL (a retry after a lost reply gets
//!    NodeExists: the node is ours if its `ephemeral_owner` is our session);
//! 2. read the children (getChildren2) and count the member nodes (`ready`
//!    excluded);
//! 3. if `size` are there, create `root/ready` and bump the root's data
//!    version in one multi (NodeExists: another member opened the round) and
//!    pass;
//! 4. else exists(`ready`) with a watch: pass if it exists, otherwise wait for
//!    the watch and ask again (a spurious wakeup cannot let anyone through).
//!
//! Leave (the documented algorithm; members ordered by node name):
//! 1. read the children; no member node left: delete `ready`, done;
//! 2. ours is the only one: delete it, delete `ready`, done;
//! 3. ours is the lowest: wait for the highest to go (exists watch), go to 1;
//! 4. else: delete ours (if still there), wait for the lowest to go, go to 1.
//!
//! Nobody passes the entry before `size` members have created their nodes:
//! `ready` is only created by a member that counted them. Nobody waits for the
//! count again after `ready` exists, so fast leavers strand no one. Every
//! step is idempotent and retried on connection loss. A root serves one
//! round at a time: `ready` is deleted by the members as they finish leaving.
//!
//! Session expiry: an expired member's node is gone, which the leave protocol
//! treats as having left; a pending Leave starts over in the next session. A
//! pending Enter first looks at the root's data version: unchanged, no round
//! opened since the Enter began, so the member joins again (the others wait
//! for it); bumped, the round it was waiting for opened meanwhile (possibly
//! counting its old node): it passes if `ready` still exists, and otherwise
//! that round is over and the Enter fails with SessionExpired instead of
//! waiting for a round that will never open. A member that joined again
//! counts with getChildren2 and looks at the version once more: a member
//! that counted the old node before the expiry may open the round after the
//! rejoiner's first look (found by the model checker: 30 steps, 2 members).

use super::{BarrierCall, BarrierError, BarrierOutcome};
use crate::recipe::{Input, Outbox, Recipe, Tag};
use crate::zk::Acls;
use crate::zk::{
    CreateMode, MultiOp, Path, Reply, Request, SessionEvent, SessionId, ZkError, ZkResult,
    ANY_VERSION,
};

/// Enter 1: create our member node.
const CREATE_OWN: Tag = Tag(1);
/// Enter 1, after NodeExists: is the node ours?
const CHECK_OWNER: Tag = Tag(2);
/// Enter 2: count the members.
const COUNT: Tag = Tag(3);
/// Enter 3: create `ready`.
const CREATE_READY: Tag = Tag(4);
/// Enter 4: exists(`ready`) with a watch.
const CHECK_READY: Tag = Tag(5);
/// Leave 1: list the members.
const LIST: Tag = Tag(6);
/// Leave 2 and 4: delete our node.
const DELETE_OWN: Tag = Tag(7);
/// Leave 3 and 4: exists with a watch on the member we wait for.
const WATCH_MEMBER: Tag = Tag(8);
/// Leave 1 and 2: delete `ready`.
const DELETE_READY: Tag = Tag(9);
/// Enter 0: read the root's data version.
const READ_ROOT: Tag = Tag(10);
/// Enter again after an expiry: has a round opened since the Enter began?
const REJOIN_READ_ROOT: Tag = Tag(11);
/// Enter again after an expiry, a round opened meanwhile: is it still open?
const REJOIN_CHECK_READY: Tag = Tag(12);

/// The name of the node that opens the barrier.
pub const READY: &str = "ready";

/// What to do once our node is deleted during leave.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum AfterDelete {
    /// We were the last member: delete `ready` and finish.
    Finish,
    /// Wait for this (lowest) member to go.
    WaitFor(Path),
    /// Enter in a new session found its round over: fail the Enter.
    AbandonEnter,
}

/// Where the member is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Idle,
    ReadingRoot,
    CreatingOwn,
    CheckingOwner,
    Counting,
    CreatingReady,
    /// exists(`ready`) with a watch in flight or armed.
    AwaitingReady,
    Entered,
    Listing,
    DeletingOwn {
        then: AfterDelete,
    },
    /// exists on `member` with a watch in flight or armed.
    AwaitingMember {
        member: Path,
    },
    DeletingReady,
    /// Enter in a new session: reading the root's data version.
    RejoinReadingRoot,
    /// Enter in a new session, a round opened meanwhile: does `ready` exist?
    RejoinCheckingReady,
    /// The session expired during `call`: start it over in the next session.
    AwaitingSession {
        call: BarrierCall,
    },
}

/// A member of the double barrier.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FixedBarrier {
    root: Path,
    size: usize,
    /// Drawn by the driver from the seed; unique among members.
    unique_id: u64,
    session: Option<SessionId>,
    /// The root's data version (rounds opened) when the pending Enter began.
    rounds_at_enter: Option<i32>,
    /// The pending Enter joined again in a new session after an expiry.
    rejoined: bool,
    phase: Phase,
}

impl FixedBarrier {
    /// A member of the barrier at `root` (which must exist) for `size` members.
    pub fn new(root: Path, size: usize, unique_id: u64) -> FixedBarrier {
        FixedBarrier {
            root,
            size,
            unique_id,
            session: None,
            rounds_at_enter: None,
            rejoined: false,
            phase: Phase::Idle,
        }
    }

    /// This member's node name: `m-<16 hex digits>`.
    pub fn node_name(&self) -> String {
        member_name(self.unique_id)
    }

    fn own_node(&self) -> Path {
        self.root
            .child(&self.node_name())
            .expect("member names are valid")
    }

    fn ready_node(&self) -> Path {
        self.root.child(READY).expect("`ready` is a valid name")
    }

    fn on_call(&mut self, call: BarrierCall, out: &mut Outbox<BarrierOutcome>) {
        match (call, &self.phase) {
            (BarrierCall::Enter, Phase::Idle) => self.read_root(out),
            (BarrierCall::Leave, Phase::Entered) => self.list(out),
            _ => out.emit(BarrierOutcome::Failed(BarrierError::CallOutOfTurn(call))),
        }
    }

    fn on_reply(&mut self, tag: Tag, result: ZkResult, out: &mut Outbox<BarrierOutcome>) {
        if result == Err(ZkError::SessionExpired) {
            return self.session_expired();
        }
        if result.as_ref().is_err_and(ZkError::is_connection_error) {
            return self.retry(tag, out);
        }
        match (tag, self.phase.clone()) {
            (READ_ROOT, Phase::ReadingRoot) => self.on_root_read(result, out),
            (REJOIN_READ_ROOT, Phase::RejoinReadingRoot) => self.on_rejoin_root_read(result, out),
            (REJOIN_CHECK_READY, Phase::RejoinCheckingReady) => match result {
                Ok(Reply::Exists(Some(_))) => self.entered(out),
                // The round we waited for opened and closed without us:
                // take back the node we may have created again, and fail.
                Ok(Reply::Exists(None)) => self.delete_own(AfterDelete::AbandonEnter, out),
                Err(error) => self.fail(error, out),
                Ok(_) => self.fail(ZkError::RuntimeInconsistency, out),
            },
            (CREATE_OWN, Phase::CreatingOwn) => self.on_own_created(result, out),
            (CHECK_OWNER, Phase::CheckingOwner) => self.on_owner(result, out),
            (COUNT, Phase::Counting) => self.on_counted(result, out),
            (CREATE_READY, Phase::CreatingReady) => match result {
                // NodeExists: another member (or our lost-reply multi) opened it.
                Ok(_) => self.entered(out),
                Err(error) if *error.root_cause() == ZkError::NodeExists => self.entered(out),
                Err(error) => self.fail(error, out),
            },
            (CHECK_READY, Phase::AwaitingReady) => match result {
                Ok(Reply::Exists(Some(_))) => self.entered(out),
                // The watch is armed: wait for NodeCreated.
                Ok(Reply::Exists(None)) => {}
                Err(error) => self.fail(error, out),
                Ok(_) => self.fail(ZkError::RuntimeInconsistency, out),
            },
            (LIST, Phase::Listing) => self.on_listed(result, out),
            (DELETE_OWN, Phase::DeletingOwn { then }) => match (result, then) {
                (Ok(_) | Err(ZkError::NoNode), AfterDelete::Finish) => self.delete_ready(out),
                (Ok(_) | Err(ZkError::NoNode), AfterDelete::WaitFor(member)) => {
                    self.watch_member(member, out)
                }
                (Ok(_) | Err(ZkError::NoNode), AfterDelete::AbandonEnter) => {
                    self.fail(ZkError::SessionExpired, out)
                }
                (Err(error), _) => self.fail(error, out),
            },
            (WATCH_MEMBER, Phase::AwaitingMember { .. }) => match result {
                // The watch is armed: wait for NodeDeleted.
                Ok(Reply::Exists(Some(_))) => {}
                Ok(Reply::Exists(None)) => self.list(out),
                Err(error) => self.fail(error, out),
                Ok(_) => self.fail(ZkError::RuntimeInconsistency, out),
            },
            (DELETE_READY, Phase::DeletingReady) => match result {
                Ok(_) | Err(ZkError::NoNode) => {
                    self.phase = Phase::Idle;
                    out.emit(BarrierOutcome::Left);
                }
                Err(error) => self.fail(error, out),
            },
            // The reply of a step left behind (a watch event moved us on
            // first): the current step has its own request in flight.
            _ => {}
        }
    }

    /// A connection loss: the request may or may not have been applied; every
    /// step is idempotent, so it is sent again.
    fn retry(&mut self, tag: Tag, out: &mut Outbox<BarrierOutcome>) {
        match (tag, self.phase.clone()) {
            (READ_ROOT, Phase::ReadingRoot) => self.read_root(out),
            (REJOIN_READ_ROOT, Phase::RejoinReadingRoot) => self.rejoin(out),
            (REJOIN_CHECK_READY, Phase::RejoinCheckingReady) => self.rejoin_check_ready(out),
            (CREATE_OWN, Phase::CreatingOwn) => self.create_own(out),
            (CHECK_OWNER, Phase::CheckingOwner) => self.check_owner(out),
            (COUNT, Phase::Counting) => self.count(out),
            (CREATE_READY, Phase::CreatingReady) => self.create_ready(out),
            (CHECK_READY, Phase::AwaitingReady) => self.check_ready(out),
            (LIST, Phase::Listing) => self.list(out),
            (DELETE_OWN, Phase::DeletingOwn { then }) => self.delete_own(then, out),
            (WATCH_MEMBER, Phase::AwaitingMember { member }) => self.watch_member(member, out),
            (DELETE_READY, Phase::DeletingReady) => self.delete_ready(out),
            _ => {}
        }
    }

    fn on_root_read(&mut self, result: ZkResult, out: &mut Outbox<BarrierOutcome>) {
        match result {
            Ok(Reply::Exists(Some(stat))) => {
                self.rounds_at_enter = Some(stat.version);
                self.create_own(out)
            }
            Ok(Reply::Exists(None)) => self.fail(ZkError::NoNode, out),
            Err(error) => self.fail(error, out),
            Ok(_) => self.fail(ZkError::RuntimeInconsistency, out),
        }
    }

    /// Unchanged rounds: join again; bumped: the round we waited for opened.
    fn on_rejoin_root_read(&mut self, result: ZkResult, out: &mut Outbox<BarrierOutcome>) {
        match result {
            Ok(Reply::Exists(Some(stat))) if Some(stat.version) == self.rounds_at_enter => {
                self.rejoined = true;
                self.create_own(out)
            }
            Ok(Reply::Exists(Some(_))) => self.rejoin_check_ready(out),
            Ok(Reply::Exists(None)) => self.fail(ZkError::NoNode, out),
            Err(error) => self.fail(error, out),
            Ok(_) => self.fail(ZkError::RuntimeInconsistency, out),
        }
    }

    fn on_own_created(&mut self, result: ZkResult, out: &mut Outbox<BarrierOutcome>) {
        match result {
            Ok(_) => self.count(out),
            // Our earlier create was applied and its reply lost, or the id is
            // someone else's: check the owner.
            Err(ZkError::NodeExists) => self.check_owner(out),
            Err(error) => self.fail(error, out),
        }
    }

    fn on_owner(&mut self, result: ZkResult, out: &mut Outbox<BarrierOutcome>) {
        match result {
            Ok(Reply::Exists(Some(stat)))
                if Some(SessionId(stat.ephemeral_owner)) == self.session =>
            {
                self.count(out)
            }
            Ok(Reply::Exists(Some(_))) => {
                self.phase = Phase::Idle;
                out.emit(BarrierOutcome::Failed(BarrierError::NodeNotOwned));
            }
            // Gone meanwhile: create it again.
            Ok(Reply::Exists(None)) => self.create_own(out),
            Err(error) => self.fail(error, out),
            Ok(_) => self.fail(ZkError::RuntimeInconsistency, out),
        }
    }

    fn on_counted(&mut self, result: ZkResult, out: &mut Outbox<BarrierOutcome>) {
        match result {
            // Joined again, and a round opened since the Enter began: it
            // counted our old node.
            Ok(Reply::Children2 { stat, .. })
                if self.rejoined && Some(stat.version) != self.rounds_at_enter =>
            {
                self.rejoin_check_ready(out)
            }
            Ok(Reply::Children2 { children, .. }) if members(&children).len() >= self.size => {
                self.create_ready(out)
            }
            Ok(Reply::Children2 { .. }) => self.check_ready(out),
            Err(error) => self.fail(error, out),
            Ok(_) => self.fail(ZkError::RuntimeInconsistency, out),
        }
    }

    /// The documented leave step: decide from the members still present.
    fn on_listed(&mut self, result: ZkResult, out: &mut Outbox<BarrierOutcome>) {
        let children = match result {
            Ok(Reply::Children(children)) => children,
            Err(error) => return self.fail(error, out),
            Ok(_) => return self.fail(ZkError::RuntimeInconsistency, out),
        };
        let members = members(&children);
        let own = self.node_name();
        let (Some(lowest), Some(highest)) = (members.first(), members.last()) else {
            return self.delete_ready(out);
        };
        let is_present = members.contains(&own.as_str());
        if members.len() == 1 && is_present {
            self.delete_own(AfterDelete::Finish, out);
        } else if *lowest == own {
            let highest = self.root.child(highest).expect("member names are valid");
            self.watch_member(highest, out);
        } else {
            let lowest = self.root.child(lowest).expect("member names are valid");
            if is_present {
                self.delete_own(AfterDelete::WaitFor(lowest), out);
            } else {
                self.watch_member(lowest, out);
            }
        }
    }

    /// The watch on `ready` or on the member we wait for fired: ask again,
    /// whatever the event says (it may be spurious, and it used up the
    /// one-shot watch, which the question arms again). Accepted even before
    /// the reply that armed the watch, in case events overtake replies; the
    /// replies of the step left behind are then ignored, or answer a
    /// repeated question.
    fn on_watch(&mut self, path: Option<Path>, out: &mut Outbox<BarrierOutcome>) {
        match &self.phase {
            Phase::AwaitingReady if path == Some(self.ready_node()) => self.check_ready(out),
            Phase::AwaitingMember { member } if path.as_ref() == Some(member) => {
                self.watch_member(member.clone(), out)
            }
            // State events repeat `Input::Session`; other node events come
            // from watches of steps left behind.
            _ => {}
        }
    }

    fn on_session(&mut self, event: SessionEvent, out: &mut Outbox<BarrierOutcome>) {
        match event {
            SessionEvent::Connected { session_id } if self.session != Some(session_id) => {
                if self.session.is_some() {
                    // A new handle without an Expired first: the old one is dead.
                    self.session_expired();
                }
                self.session = Some(session_id);
                match self.phase {
                    Phase::AwaitingSession {
                        call: BarrierCall::Enter,
                    } => match self.rounds_at_enter {
                        Some(_) => self.rejoin(out),
                        None => self.read_root(out),
                    },
                    Phase::AwaitingSession {
                        call: BarrierCall::Leave,
                    } => self.list(out),
                    _ => {}
                }
            }
            SessionEvent::Expired => self.session_expired(),
            // Reconnected into the same session, or disconnected: requests in
            // flight were answered with ConnectionLoss and are being retried,
            // armed watches are re-registered by the client.
            SessionEvent::Connected { .. } | SessionEvent::Disconnected => {}
        }
    }

    /// Our node is gone with the session: a pending call starts over in the
    /// next session. A member between Entered and Leave stays entered: its
    /// Leave works without the node.
    fn session_expired(&mut self) {
        self.phase = match &self.phase {
            Phase::Idle => Phase::Idle,
            Phase::Entered => Phase::Entered,
            Phase::AwaitingSession { call } => Phase::AwaitingSession { call: *call },
            Phase::ReadingRoot
            | Phase::RejoinReadingRoot
            | Phase::RejoinCheckingReady
            | Phase::CreatingOwn
            | Phase::CheckingOwner
            | Phase::Counting
            | Phase::CreatingReady
            | Phase::AwaitingReady
            | Phase::DeletingOwn {
                then: AfterDelete::AbandonEnter,
            } => Phase::AwaitingSession {
                call: BarrierCall::Enter,
            },
            Phase::Listing
            | Phase::DeletingOwn { .. }
            | Phase::AwaitingMember { .. }
            | Phase::DeletingReady => Phase::AwaitingSession {
                call: BarrierCall::Leave,
            },
        };
    }

    fn read_root(&mut self, out: &mut Outbox<BarrierOutcome>) {
        self.phase = Phase::ReadingRoot;
        self.rounds_at_enter = None;
        self.rejoined = false;
        out.send(
            READ_ROOT,
            Request::Exists {
                path: self.root.clone(),
                watch: false,
            },
        );
    }

    fn rejoin(&mut self, out: &mut Outbox<BarrierOutcome>) {
        self.phase = Phase::RejoinReadingRoot;
        out.send(
            REJOIN_READ_ROOT,
            Request::Exists {
                path: self.root.clone(),
                watch: false,
            },
        );
    }

    fn rejoin_check_ready(&mut self, out: &mut Outbox<BarrierOutcome>) {
        self.phase = Phase::RejoinCheckingReady;
        out.send(
            REJOIN_CHECK_READY,
            Request::Exists {
                path: self.ready_node(),
                watch: false,
            },
        );
    }

    fn create_own(&mut self, out: &mut Outbox<BarrierOutcome>) {
        self.phase = Phase::CreatingOwn;
        let request = Request::Create {
            path: self.own_node(),
            data: Vec::new(),
            mode: CreateMode::Ephemeral,
            acl: Acls::Open,
        };
        out.send(CREATE_OWN, request);
    }

    fn check_owner(&mut self, out: &mut Outbox<BarrierOutcome>) {
        self.phase = Phase::CheckingOwner;
        out.send(
            CHECK_OWNER,
            Request::Exists {
                path: self.own_node(),
                watch: false,
            },
        );
    }

    fn count(&mut self, out: &mut Outbox<BarrierOutcome>) {
        self.phase = Phase::Counting;
        out.send(
            COUNT,
            Request::GetChildren2 {
                path: self.root.clone(),
                watch: false,
            },
        );
    }

    /// Opens the round: `ready` and the root's round count change together.
    fn create_ready(&mut self, out: &mut Outbox<BarrierOutcome>) {
        self.phase = Phase::CreatingReady;
        let request = Request::Multi(vec![
            MultiOp::Create {
                path: self.ready_node(),
                data: Vec::new(),
                mode: CreateMode::Persistent,
                acl: Acls::Open,
            },
            MultiOp::SetData {
                path: self.root.clone(),
                data: Vec::new(),
                version: ANY_VERSION,
            },
        ]);
        out.send(CREATE_READY, request);
    }

    fn check_ready(&mut self, out: &mut Outbox<BarrierOutcome>) {
        self.phase = Phase::AwaitingReady;
        out.send(
            CHECK_READY,
            Request::Exists {
                path: self.ready_node(),
                watch: true,
            },
        );
    }

    fn list(&mut self, out: &mut Outbox<BarrierOutcome>) {
        self.phase = Phase::Listing;
        out.send(
            LIST,
            Request::GetChildren {
                path: self.root.clone(),
                watch: false,
            },
        );
    }

    fn delete_own(&mut self, then: AfterDelete, out: &mut Outbox<BarrierOutcome>) {
        self.phase = Phase::DeletingOwn { then };
        out.send(
            DELETE_OWN,
            Request::Delete {
                path: self.own_node(),
                version: ANY_VERSION,
            },
        );
    }

    fn watch_member(&mut self, member: Path, out: &mut Outbox<BarrierOutcome>) {
        out.send(
            WATCH_MEMBER,
            Request::Exists {
                path: member.clone(),
                watch: true,
            },
        );
        self.phase = Phase::AwaitingMember { member };
    }

    fn delete_ready(&mut self, out: &mut Outbox<BarrierOutcome>) {
        self.phase = Phase::DeletingReady;
        out.send(
            DELETE_READY,
            Request::Delete {
                path: self.ready_node(),
                version: ANY_VERSION,
            },
        );
    }

    fn entered(&mut self, out: &mut Outbox<BarrierOutcome>) {
        self.phase = Phase::Entered;
        out.emit(BarrierOutcome::Entered);
    }

    fn fail(&mut self, error: ZkError, out: &mut Outbox<BarrierOutcome>) {
        self.phase = Phase::Idle;
        out.emit(BarrierOutcome::Failed(BarrierError::Zk(error)));
    }
}

/// The node name of the member with `unique_id`.
pub fn member_name(unique_id: u64) -> String {
    format!("m-{unique_id:016x}")
}

/// The member node names among `children`, sorted (`ready` and foreign
/// nodes excluded).
fn members(children: &[String]) -> Vec<&str> {
    let mut members: Vec<&str> = children
        .iter()
        .map(String::as_str)
        .filter(|name| is_member_name(name))
        .collect();
    members.sort_unstable();
    members
}

fn is_member_name(name: &str) -> bool {
    name.strip_prefix("m-")
        .is_some_and(|id| id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()))
}

impl Recipe for FixedBarrier {
    type Call = BarrierCall;
    type Outcome = BarrierOutcome;

    fn handle(&mut self, input: Input<BarrierCall>, out: &mut Outbox<BarrierOutcome>) {
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

impl crate::rename::Rename for FixedBarrier {
    fn rename(&mut self, r: &mut crate::rename::Renaming) {
        self.unique_id = r.unique_id(self.unique_id);
        self.session.rename(r);
        match &mut self.phase {
            Phase::DeletingOwn {
                then: AfterDelete::WaitFor(member),
            }
            | Phase::AwaitingMember { member } => member.rename(r),
            _ => {}
        }
    }
}

impl crate::rename::RenameRecipe for FixedBarrier {
    /// Leave orders the members by node name, `m-<unique id>`: the lowest
    /// waits for the highest, the others for the lowest. Which client plays
    /// which part follows from its id, so clients cannot be renamed for one
    /// another (the self-check finds a successor that differs).
    const SYMMETRIC: bool = false;

    /// `m-<unique id, 16 hex digits>`.
    fn rename_node(r: &mut crate::rename::Renaming, _parent: &str, name: &str) -> String {
        match name.strip_prefix("m-").filter(|id| id.len() == 16) {
            Some(id) if id.bytes().all(|b| b.is_ascii_hexdigit()) => {
                match u64::from_str_radix(id, 16) {
                    Ok(id) => member_name(r.unique_id(id)),
                    Err(_) => name.to_owned(),
                }
            }
            _ => name.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_exclude_ready_and_foreign_nodes_and_sort() {
        let children: Vec<String> = [
            member_name(9),
            READY.to_string(),
            "x".to_string(),
            member_name(2),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            members(&children),
            vec![member_name(2).as_str(), member_name(9).as_str()]
        );
    }
}
