//! The corrected exclusive lock: seed 000's protocol with every known flaw
//! of `WriteLock` repaired.
//!
//! - The node is `<dir>/x-<uid>-<sequence>` with a unique id given at
//!   construction. After a ConnectionLoss on the create, the lock syncs the
//!   directory, lists the children and adopts the node carrying its id (by
//!   full path) instead of creating a second one; it creates again only if
//!   none is there. The sync matters on an ensemble: the reply is lost, so
//!   the client may reconnect to a server that has not applied the create
//!   yet, and a list there would miss the node.
//! - Order is by sequence number only, wrap-aware; the lock watches only its
//!   immediate predecessor with exists() and lists the children again after
//!   every wakeup (spurious or duplicated ones included) and after an exists
//!   that finds the predecessor already gone.
//! - At the end of a parent's counter ZooKeeper 3.8 stops counting: every
//!   later sequential child is named `...2147483647` again. A node with that
//!   number cannot be ordered safely, so the lock deletes it and fails the
//!   call with `SequenceExhausted` (as the election and curator lock do). The
//!   czxid tie scan below is then unreachable for nodes of one counter; it is
//!   kept as a defence.
//! - The fencing token is the node's creation zxid (strictly increasing across
//!   holders even when the sequence counter wraps); a node adopted after a
//!   lost reply is stat'ed first, and kept only if its ephemeral owner is the
//!   current session.
//! - Unlock deletes by full path and treats NoNode as done; a lost reply is
//!   retried after the reconnect. Unlock while waiting cancels the wait.
//! - Session expiry (the Expired event, a SessionExpired reply, or a
//!   Connected with a new id): a holder reports `Lost`; a pending lock call
//!   starts over when the new session connects.
//!
//! At most one request is in flight; a reply is matched to its step by tag.

use super::names::{lock_nodes, node_prefix, parse_lock_node, predecessor};
use super::{LockCall, LockError, LockOutcome};
use crate::recipe::{FencingToken, Input, Outbox, Recipe, Tag};
use crate::rename::RenameRecipe;
use crate::sequence::{serial_order, STUCK_SEQUENCE};
use crate::zk::Acls;
use crate::zk::{
    CreateMode, EventType, Path, Reply, Request, SessionEvent, SessionId, WatchedEvent, ZkError,
    ZkResult, Zxid, ANY_VERSION,
};
use std::collections::BTreeSet;

/// Create the lock directory (a container, so it goes when the last lock node does).
const CREATE_DIR: Tag = Tag(1);
/// Create `x-<uid>-` EPHEMERAL_SEQUENTIAL.
const CREATE: Tag = Tag(2);
/// After a lost create reply: list the children to find our node.
const FIND: Tag = Tag(3);
/// List the children to see who is first.
const LIST: Tag = Tag(4);
/// exists(predecessor, watch).
const WATCH: Tag = Tag(5);
/// exists(own node): its czxid (the token) and ephemeral owner.
const STAT_OWN: Tag = Tag(6);
/// Delete our node (unlock, or a node nobody wants any more).
const DELETE: Tag = Tag(7);
/// exists(a sibling with our sequence number): its czxid.
const TIE_STAT: Tag = Tag(8);
/// After a lost create reply: sync the directory before FIND, so the list
/// is not older than the create.
const SYNC_FIND: Tag = Tag(9);

/// What the lock knows about its node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum OwnNode {
    None,
    /// A create may have been applied; its reply was lost. `synced`: our
    /// server has caught up with the leader since (a list now sees it).
    Uncertain {
        synced: bool,
    },
    Known {
        name: String,
        sequence: i32,
        czxid: Option<Zxid>,
    },
}

/// Ordering the siblings that share our sequence number by creation zxid.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct TieScan {
    own_czxid: Zxid,
    /// Tied siblings not stat'ed yet; the first one is being stat'ed.
    unchecked: BTreeSet<String>,
    /// The youngest tied sibling created before our node: (czxid, name).
    closest_before: Option<(Zxid, String)>,
    /// The predecessor among nodes with an older sequence number.
    older_predecessor: Option<String>,
}

/// The fixed exclusive lock.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FixedLock {
    dir: Path,
    uid: u64,
    session: Option<SessionId>,
    session_alive: bool,
    /// A lock call is pending (not answered yet).
    wants_lock: bool,
    /// Acquired and not yet known to be given up.
    held: Option<FencingToken>,
    /// An unlock call awaits its answer.
    release_owed: bool,
    own: OwnNode,
    in_flight: Option<Tag>,
    /// The predecessor we set (or are setting) an exists watch on.
    watching: Option<Path>,
    /// A wakeup arrived while a request was in flight: list again after it.
    recheck: bool,
    tie_scan: Option<TieScan>,
    /// Sync before the recovery read (false only in the `unsynced` variant).
    sync_before_recovery: bool,
}

impl FixedLock {
    /// A lock on `dir` for a client whose `uid` no other client uses.
    pub fn new(dir: Path, uid: u64) -> FixedLock {
        FixedLock {
            dir,
            uid,
            session: None,
            session_alive: false,
            wants_lock: false,
            held: None,
            release_owed: false,
            own: OwnNode::None,
            in_flight: None,
            watching: None,
            recheck: false,
            tie_scan: None,
            sync_before_recovery: true,
        }
    }

    /// The lock without the sync before its recovery read: it assumes a
    /// read after a reconnect is current. Correct on one server; on an
    /// ensemble the read may come from a follower that has not applied the
    /// lost create, and the lock creates a second node (the first an
    /// orphan). Kept as a variant to show what the ensemble finds.
    pub fn without_recovery_sync(dir: Path, uid: u64) -> FixedLock {
        FixedLock {
            sync_before_recovery: false,
            ..FixedLock::new(dir, uid)
        }
    }

    /// The full path of this client's lock node, if it knows it.
    pub fn node(&self) -> Option<Path> {
        match &self.own {
            OwnNode::Known { name, .. } => self.dir.child(name).ok(),
            _ => None,
        }
    }

    /// True between `Acquired` and the confirmation of giving it up.
    pub fn holds(&self) -> bool {
        self.held.is_some()
    }

    // ---- inputs ----

    fn on_call(&mut self, call: LockCall, out: &mut Outbox<LockOutcome>) {
        match call {
            LockCall::Lock => match self.held {
                // Already holding: answer again with the same token.
                Some(token) if !self.release_owed => out.emit(LockOutcome::Acquired { token }),
                _ => {
                    self.wants_lock = true;
                    self.drive(out);
                }
            },
            LockCall::Unlock => {
                self.wants_lock = false;
                self.release_owed = true;
                self.watching = None;
                self.drive(out);
            }
        }
    }

    fn on_session(&mut self, event: SessionEvent, out: &mut Outbox<LockOutcome>) {
        match event {
            SessionEvent::Connected { session_id } => {
                if self.session_alive && self.session != Some(session_id) {
                    // A new session without an Expired first: the old one is gone.
                    self.session_lost(out);
                }
                self.session = Some(session_id);
                self.session_alive = true;
                // Same session: a retry emitted while disconnected is already
                // queued and the client re-registered our watch.
                self.drive(out);
            }
            SessionEvent::Disconnected => {}
            SessionEvent::Expired => self.session_lost(out),
        }
    }

    /// A node event on a watch we set. State events (type None) are handled
    /// through `Input::Session`.
    fn on_wakeup(&mut self, event: WatchedEvent, out: &mut Outbox<LockOutcome>) {
        if event.event_type == EventType::None || !self.wants_lock {
            // A watch left over from an earlier wait: nothing to do.
            return;
        }
        if self.in_flight.is_some() {
            self.recheck = true;
            return;
        }
        self.watching = None;
        self.drive(out);
    }

    fn on_reply(&mut self, tag: Tag, result: ZkResult, out: &mut Outbox<LockOutcome>) {
        if self.in_flight != Some(tag) {
            // Answers a request of a session we already gave up on.
            return;
        }
        self.in_flight = None;
        match result {
            Err(ZkError::SessionExpired) => return self.session_lost(out),
            Err(error) if error.is_connection_error() => {
                if tag == CREATE || matches!(self.own, OwnNode::Uncertain { .. }) {
                    // The next server may be behind the create: sync again.
                    let synced = !self.sync_before_recovery;
                    self.own = OwnNode::Uncertain { synced };
                }
                // Whether a watch got armed is unknown: list again.
                self.watching = None;
                // Retry; the client sends it once reconnected.
                return self.drive(out);
            }
            _ => {}
        }
        match tag {
            CREATE_DIR => self.on_dir_created(result, out),
            CREATE => self.on_created(result, out),
            SYNC_FIND => self.on_synced(result, out),
            FIND => self.on_found(result, out),
            LIST => self.on_listed(result, out),
            WATCH => self.on_watch_set(result, out),
            STAT_OWN => self.on_own_stat(result, out),
            DELETE => self.on_deleted(result, out),
            TIE_STAT => self.on_tie_stat(result, out),
            _ => {}
        }
    }

    // ---- the next step ----

    /// Sends the next request the goal needs, if none is in flight.
    fn drive(&mut self, out: &mut Outbox<LockOutcome>) {
        if self.in_flight.is_some() {
            return;
        }
        if self.own == OwnNode::None && self.release_owed {
            self.release_owed = false;
            self.held = None;
            out.emit(LockOutcome::Released);
        }
        if !self.session_alive {
            return;
        }
        match &self.own {
            OwnNode::Uncertain { synced: false } => {
                let path = self.dir.clone();
                self.send(SYNC_FIND, Request::Sync { path }, out);
            }
            OwnNode::Uncertain { synced: true } => self.list(FIND, out),
            OwnNode::Known { .. }
                if self.release_owed || (!self.wants_lock && self.held.is_none()) =>
            {
                if let Some(path) = self.node() {
                    self.send(
                        DELETE,
                        Request::Delete {
                            path,
                            version: ANY_VERSION,
                        },
                        out,
                    );
                }
            }
            OwnNode::Known { .. }
                if self.wants_lock && (self.watching.is_none() || self.recheck) =>
            {
                self.list(LIST, out);
            }
            // Holding, or waiting for the predecessor's watch.
            OwnNode::Known { .. } => {}
            OwnNode::None if self.wants_lock => {
                let path = Path::new(format!("{}/{}", self.dir, node_prefix(self.uid)));
                match path {
                    Ok(path) => {
                        let request = Request::Create {
                            path,
                            data: Vec::new(),
                            mode: CreateMode::EphemeralSequential,
                            acl: Acls::Open,
                        };
                        self.send(CREATE, request, out);
                    }
                    Err(error) => self.fail_call(LockError::InvalidPath(error), out),
                }
            }
            OwnNode::None => {}
        }
    }

    // ---- replies ----

    fn on_dir_created(&mut self, result: ZkResult, out: &mut Outbox<LockOutcome>) {
        match result {
            Ok(_) | Err(ZkError::NodeExists) => self.drive(out),
            Err(error) => self.fail_call(LockError::Zk(error), out),
        }
    }

    fn on_created(&mut self, result: ZkResult, out: &mut Outbox<LockOutcome>) {
        match result {
            Ok(Reply::Created { path, stat }) => match parse_lock_node(path.name()) {
                Some(parsed) => {
                    let name = path.name().to_string();
                    self.own = OwnNode::Known {
                        name,
                        sequence: parsed.sequence,
                        czxid: Some(stat.czxid),
                    };
                    self.drive(out);
                }
                None => self.fail_call(LockError::Zk(ZkError::RuntimeInconsistency), out),
            },
            Err(ZkError::NoNode) => {
                let request = Request::Create {
                    path: self.dir.clone(),
                    data: Vec::new(),
                    mode: CreateMode::Container,
                    acl: Acls::Open,
                };
                self.send(CREATE_DIR, request, out);
            }
            // At the counter's end the name repeats: ours from before exists.
            // This answer came after our server applied the create: no sync.
            Err(ZkError::NodeExists) => {
                self.own = OwnNode::Uncertain { synced: true };
                self.drive(out);
            }
            Ok(_) => self.fail_call(LockError::Zk(ZkError::RuntimeInconsistency), out),
            Err(error) => self.fail_call(LockError::Zk(error), out),
        }
    }

    /// Our server caught up with the leader: list the children (FIND).
    fn on_synced(&mut self, result: ZkResult, out: &mut Outbox<LockOutcome>) {
        match result {
            Ok(_) => {
                self.own = OwnNode::Uncertain { synced: true };
                self.drive(out);
            }
            Err(error) => self.fail_call(LockError::Zk(error), out),
        }
    }

    /// After a lost create reply: adopt the youngest node with our id, or
    /// conclude the create was not applied.
    fn on_found(&mut self, result: ZkResult, out: &mut Outbox<LockOutcome>) {
        match result {
            Ok(Reply::Children(names)) => {
                let ours = names
                    .iter()
                    .filter_map(|name| parse_lock_node(name).map(|parsed| (parsed, name)))
                    .filter(|(parsed, _)| parsed.owner == self.uid)
                    .max_by(|(a, _), (b, _)| serial_order(a.sequence, b.sequence));
                self.own = match ours {
                    Some((parsed, name)) => OwnNode::Known {
                        name: name.clone(),
                        sequence: parsed.sequence,
                        czxid: None,
                    },
                    None => OwnNode::None,
                };
                self.drive(out);
            }
            Err(ZkError::NoNode) => {
                self.own = OwnNode::None;
                self.drive(out);
            }
            Ok(_) => self.fail_call(LockError::Zk(ZkError::RuntimeInconsistency), out),
            Err(error) => self.fail_call(LockError::Zk(error), out),
        }
    }

    /// Are we first? Then acquire; else watch the predecessor.
    fn on_listed(&mut self, result: ZkResult, out: &mut Outbox<LockOutcome>) {
        let names = match result {
            Ok(Reply::Children(names)) => names,
            // The directory is gone, and our node with it.
            Err(ZkError::NoNode) => {
                self.own = OwnNode::None;
                return self.drive(out);
            }
            Ok(_) => return self.fail_call(LockError::Zk(ZkError::RuntimeInconsistency), out),
            Err(error) => return self.fail_call(LockError::Zk(error), out),
        };
        let OwnNode::Known {
            name,
            sequence,
            czxid,
        } = &self.own
        else {
            return self.drive(out);
        };
        if !self.wants_lock {
            return self.drive(out);
        }
        if !names.contains(name) {
            // Our node is gone (deleted by someone else): queue up again.
            self.own = OwnNode::None;
            return self.drive(out);
        }
        if *sequence == STUCK_SEQUENCE {
            // The counter sticks here: later nodes share our number, so no
            // order is sure. Give the node up (drive deletes it).
            return self.fail_call(LockError::SequenceExhausted, out);
        }
        let lock_nodes = lock_nodes(&names);
        let older_predecessor = predecessor(*sequence, &lock_nodes).cloned();
        let tied: BTreeSet<String> = lock_nodes
            .iter()
            .filter(|(other, other_sequence)| *other != name && other_sequence == sequence)
            .map(|(other, _)| String::clone(other))
            .collect();
        match *czxid {
            Some(own_czxid) if !tied.is_empty() => {
                self.tie_scan = Some(TieScan {
                    own_czxid,
                    unchecked: tied,
                    closest_before: None,
                    older_predecessor,
                });
                self.next_tie_stat(out);
            }
            Some(own_czxid) => self.wait_for_or_acquire(older_predecessor, own_czxid, out),
            // An adopted node: read its czxid, then list again.
            None => {
                if let Some(path) = self.node() {
                    self.send(STAT_OWN, Request::Exists { path, watch: false }, out);
                }
            }
        }
    }

    /// Watch `predecessor`, or hold the lock when there is none.
    fn wait_for_or_acquire(
        &mut self,
        predecessor: Option<String>,
        own_czxid: Zxid,
        out: &mut Outbox<LockOutcome>,
    ) {
        let Some(before) = predecessor else {
            return self.acquire(FencingToken(own_czxid), out);
        };
        match self.dir.child(&before) {
            Ok(path) => {
                self.watching = Some(path.clone());
                self.send(WATCH, Request::Exists { path, watch: true }, out);
            }
            Err(error) => self.fail_call(LockError::InvalidPath(error), out),
        }
    }

    /// Stat the next tied sibling, or decide once all are known.
    fn next_tie_stat(&mut self, out: &mut Outbox<LockOutcome>) {
        let Some(scan) = self.tie_scan.take() else {
            return;
        };
        match scan.unchecked.first().map(|name| self.dir.child(name)) {
            Some(Ok(path)) => {
                self.tie_scan = Some(scan);
                self.send(TIE_STAT, Request::Exists { path, watch: false }, out);
            }
            Some(Err(error)) => self.fail_call(LockError::InvalidPath(error), out),
            None => {
                let predecessor = scan
                    .closest_before
                    .map(|(_, name)| name)
                    .or(scan.older_predecessor);
                self.wait_for_or_acquire(predecessor, scan.own_czxid, out);
            }
        }
    }

    fn on_tie_stat(&mut self, result: ZkResult, out: &mut Outbox<LockOutcome>) {
        let stat = match result {
            Ok(Reply::Exists(stat)) => stat,
            Ok(_) => return self.fail_call(LockError::Zk(ZkError::RuntimeInconsistency), out),
            Err(error) => return self.fail_call(LockError::Zk(error), out),
        };
        if !self.wants_lock {
            // Unlocked meanwhile: drive deletes the node.
            self.tie_scan = None;
            return self.drive(out);
        }
        let Some(scan) = &mut self.tie_scan else {
            return self.drive(out);
        };
        let Some(name) = scan.unchecked.pop_first() else {
            return self.drive(out);
        };
        // A sibling gone meanwhile is no longer in the way.
        if let Some(stat) = stat.filter(|stat| stat.czxid < scan.own_czxid) {
            if scan
                .closest_before
                .as_ref()
                .is_none_or(|(czxid, _)| stat.czxid > *czxid)
            {
                scan.closest_before = Some((stat.czxid, name));
            }
        }
        self.next_tie_stat(out);
    }

    fn on_watch_set(&mut self, result: ZkResult, out: &mut Outbox<LockOutcome>) {
        match result {
            // Armed: wait for it, unless a wakeup came in meanwhile (drive lists).
            Ok(Reply::Exists(Some(_))) => self.drive(out),
            // The predecessor went between the listing and the exists: list again.
            Ok(Reply::Exists(None)) => {
                self.watching = None;
                self.drive(out);
            }
            Ok(_) => self.fail_call(LockError::Zk(ZkError::RuntimeInconsistency), out),
            Err(error) => self.fail_call(LockError::Zk(error), out),
        }
    }

    /// The stat of an adopted node: keep it only if this session owns it
    /// (`drive` then lists again).
    fn on_own_stat(&mut self, result: ZkResult, out: &mut Outbox<LockOutcome>) {
        let session = self.session.map_or(0, |session| session.0);
        match result {
            Ok(Reply::Exists(Some(stat))) if stat.ephemeral_owner == session => {
                if let OwnNode::Known { czxid, .. } = &mut self.own {
                    *czxid = Some(stat.czxid);
                }
                self.drive(out);
            }
            // Gone, or another session's: not ours to hold. Start again.
            Ok(Reply::Exists(_)) => {
                self.own = OwnNode::None;
                self.drive(out);
            }
            Ok(_) => self.fail_call(LockError::Zk(ZkError::RuntimeInconsistency), out),
            Err(error) => self.fail_call(LockError::Zk(error), out),
        }
    }

    fn on_deleted(&mut self, result: ZkResult, out: &mut Outbox<LockOutcome>) {
        match result {
            Ok(_) | Err(ZkError::NoNode) => {}
            // Cannot happen for an ephemeral deleted at any version; report
            // it rather than retry forever.
            Err(error) => out.emit(LockOutcome::zk_failure(error)),
        }
        self.own = OwnNode::None;
        self.drive(out);
    }

    // ---- helpers ----

    fn acquire(&mut self, token: FencingToken, out: &mut Outbox<LockOutcome>) {
        self.wants_lock = false;
        self.watching = None;
        self.held = Some(token);
        out.emit(LockOutcome::Acquired { token });
    }

    /// The session is gone, and every ephemeral of it: a holder has lost
    /// the lock; a pending lock call waits for the next session.
    fn session_lost(&mut self, out: &mut Outbox<LockOutcome>) {
        if self.held.take().is_some() {
            out.emit(LockOutcome::Lost);
            // Lost also answers an unlock still in progress.
            self.release_owed = false;
        }
        self.session_alive = false;
        self.own = OwnNode::None;
        self.in_flight = None;
        self.watching = None;
        self.recheck = false;
        self.tie_scan = None;
        self.drive(out);
    }

    /// The pending call ends with an error; a node we no longer need goes.
    fn fail_call(&mut self, error: LockError, out: &mut Outbox<LockOutcome>) {
        self.wants_lock = false;
        self.watching = None;
        self.tie_scan = None;
        out.emit(LockOutcome::Failed(error));
        self.drive(out);
    }

    fn list(&mut self, tag: Tag, out: &mut Outbox<LockOutcome>) {
        self.recheck = false;
        self.watching = None;
        self.tie_scan = None;
        self.send(
            tag,
            Request::GetChildren {
                path: self.dir.clone(),
                watch: false,
            },
            out,
        );
    }

    fn send(&mut self, tag: Tag, request: Request, out: &mut Outbox<LockOutcome>) {
        self.in_flight = Some(tag);
        out.send(tag, request);
    }
}

impl Recipe for FixedLock {
    type Call = LockCall;
    type Outcome = LockOutcome;

    fn handle(&mut self, input: Input<LockCall>, out: &mut Outbox<LockOutcome>) {
        match input {
            Input::Call(call) => self.on_call(call, out),
            Input::Reply { tag, result } => self.on_reply(tag, result, out),
            // All its watches are the default watcher's (`send`).
            Input::Watch(event) | Input::WatcherEvent { event, .. } => self.on_wakeup(event, out),
            Input::Session(event) => self.on_session(event, out),
            // This variant sets no timers.
            Input::Timer(_) => {}
        }
    }
}

impl crate::rename::Rename for FixedLock {
    fn rename(&mut self, r: &mut crate::rename::Renaming) {
        self.uid = r.unique_id(self.uid);
        self.session.rename(r);
        if let Some(token) = self.held {
            self.held = Some(self.rename_token(r, token));
        }
        if let OwnNode::Known {
            name,
            sequence,
            czxid,
        } = &mut self.own
        {
            *name = r.name(&self.dir, name);
            *sequence = r.sequence(&self.dir, *sequence);
            if let Some(czxid) = czxid {
                *czxid = r.zxid(*czxid);
            }
        }
        self.watching.rename(r);
        if let Some(scan) = &mut self.tie_scan {
            scan.own_czxid = r.zxid(scan.own_czxid);
            scan.unchecked = scan
                .unchecked
                .iter()
                .map(|n| r.name(&self.dir, n))
                .collect();
            if let Some((czxid, name)) = &mut scan.closest_before {
                *czxid = r.zxid(*czxid);
                *name = r.name(&self.dir, name);
            }
            if let Some(name) = &mut scan.older_predecessor {
                *name = r.name(&self.dir, name);
            }
        }
    }
}

impl RenameRecipe for FixedLock {
    /// `x-<uid>-<sequence>`: the unique id follows its client.
    fn rename_node(r: &mut crate::rename::Renaming, parent: &str, name: &str) -> String {
        super::names::rename_lock_node(r, parent, name, |r, id| r.unique_id(id))
    }
}
