//! The client session layer: one recipe machine behind a connection that
//! behaves like the Java ZooKeeper client library the original recipes were
//! written for (ClientCnxn and ZKWatchManager). Sans-IO like the recipes: the
//! driver (stepper, madsim world, model) moves requests and replies.
//!
//! Rules it implements:
//! - requests leave in the order the recipe emitted them; replies come back
//!   in the same order (one TCP connection);
//! - a watch is recorded client-side when its request succeeds (for exists,
//!   also on a missing node, in the exist table) and removed when it fires,
//!   unless it is persistent (`addWatch`: it stays until forgotten; a
//!   recursive one hears its path's and descendants' node events but
//!   NodeChildrenChanged);
//!   per path and kind the table keeps the set of distinct watchers
//!   registered there (the default watcher for `Outbox::send`, a
//!   recipe-chosen `WatcherId` for `Outbox::send_watched`), as
//!   ZKWatchManager's maps do;
//! - a node event reaches each distinct watcher of the watches it fires
//!   once: the default watcher as `Input::Watch`, another as
//!   `Input::WatcherEvent` (default first, then by id);
//! - a state change (Disconnected, SyncConnected, Expired) reaches the
//!   default watcher once as `Input::Session` (however many watches it
//!   holds) and each other distinct watcher with an armed watch once as an
//!   `Input::WatcherEvent` of type None (ZKWatchManager.materialize);
//! - when the connection drops, every request in flight fails with
//!   ConnectionLoss (whether the server applied it is unknown);
//! - a request emitted while disconnected waits in the outgoing queue; each
//!   failed reconnect attempt (`reconnect_failed`) fails every queued request
//!   with ConnectionLoss, not applied (ClientCnxn's SendThread calls
//!   cleanup() when an attempt fails); the driver decides when attempts
//!   happen (the madsim world: every reconnect delay while the network is
//!   down; the model: a nondeterministic step); a recipe written against
//!   the Rust `zookeeper-client` crate (`Recipe::CLIENT_LIBRARY`) keeps its
//!   queued requests until the connection is back instead;
//! - on reconnect, the armed watches are re-registered with the last zxid
//!   seen (the server fires the one-shot ones whose node changed
//!   meanwhile; persistent ones are armed again without an event, but
//!   for a `zookeeper-client` recipe: that crate does not re-register
//!   them, so they hear nothing more from the server);
//! - after Expired, every request fails with SessionExpired until the driver
//!   opens a new session.

use crate::server::WatchSet;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use zk_recipes::zk::{
    AddWatchMode, EventType, KeeperState, Path, Reply, Request, SessionEvent, SessionId,
    WatchedEvent, ZkError, ZkResult, Zxid,
};
use zk_recipes::{
    ClientLibrary, Input, Outbox, Recipe, Tag, TimerCommand, TimerId, Watcher, WatcherId,
};

/// How many SessionExpired answers one input may cause in a row.
pub const EXPIRED_RETRY_LIMIT: usize = 64;

/// The connection as the client sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConnectionState {
    Connected,
    Disconnected,
    Expired,
}

/// The watchers registered on each path, per kind.
pub type Registrations = BTreeMap<Path, BTreeSet<Watcher>>;

/// The client's record of its armed watches (ZKWatchManager's maps: per
/// path, the set of distinct watchers registered there; the persistent
/// and recursive ones stay armed when they fire).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct WatchTable {
    pub data: Registrations,
    pub exist: Registrations,
    pub child: Registrations,
    /// `addWatch` PERSISTENT: every node event of the path.
    pub persistent: Registrations,
    /// `addWatch` PERSISTENT_RECURSIVE: the path's and its descendants'
    /// node events but NodeChildrenChanged.
    pub recursive: Registrations,
}

impl WatchTable {
    /// Records the watch a successful (or, for exists, NoNode) request armed.
    fn register(&mut self, request: &Request, result: &ZkResult, watcher: Watcher) {
        let (map, path) = match (request, result) {
            (Request::Exists { path, watch: true }, Ok(Reply::Exists(Some(_)))) => {
                (&mut self.data, path)
            }
            (Request::Exists { path, watch: true }, Ok(Reply::Exists(None))) => {
                (&mut self.exist, path)
            }
            (Request::GetData { path, watch: true }, Ok(_)) => (&mut self.data, path),
            (
                Request::GetChildren { path, watch: true }
                | Request::GetChildren2 { path, watch: true },
                Ok(_),
            ) => (&mut self.child, path),
            (Request::AddWatch { path, mode }, Ok(_)) => match mode {
                AddWatchMode::Persistent => (&mut self.persistent, path),
                AddWatchMode::PersistentRecursive => (&mut self.recursive, path),
            },
            _ => return,
        };
        map.entry(path.clone()).or_default().insert(watcher);
    }

    /// Which maps a node event of this type takes watchers from: (data,
    /// exist, child).
    fn kinds_for(event_type: EventType) -> (bool, bool, bool) {
        match event_type {
            EventType::NodeCreated | EventType::NodeDataChanged => (true, true, false),
            EventType::NodeChildrenChanged => (false, false, true),
            EventType::NodeDeleted => (true, true, true),
            EventType::None => (false, false, false),
        }
    }

    /// True if a watch this node event fires is armed (`fire` would take it).
    pub fn would_fire(&self, event: &WatchedEvent) -> bool {
        !self.watchers_of(event).is_empty()
    }

    /// The distinct watchers a node event reaches, without removing them.
    pub fn watchers_of(&self, event: &WatchedEvent) -> BTreeSet<Watcher> {
        let mut watchers = BTreeSet::new();
        let Some(path) = &event.path else {
            return watchers;
        };
        let (data, exist, child) = Self::kinds_for(event.event_type);
        for (map, used) in [
            (&self.data, data),
            (&self.exist, exist),
            (&self.child, child),
            (&self.persistent, event.event_type != EventType::None),
        ] {
            if let Some(registered) = map.get(path).filter(|_| used) {
                watchers.extend(registered.iter().copied());
            }
        }
        if data {
            // A recursive watch on the path or an ancestor (NodeCreated,
            // NodeDeleted, NodeDataChanged: the kinds a data watch hears).
            let covering = self.recursive.iter().filter(|(w, _)| w.covers(path));
            watchers.extend(covering.flat_map(|(_, registered)| registered.iter().copied()));
        }
        watchers
    }

    /// Removes the one-shot watches a node event fires and returns the
    /// distinct watchers it reaches, persistent ones included
    /// (ZKWatchManager.materialize); empty if none was armed (the event
    /// then reaches no watcher).
    fn fire(&mut self, event: &WatchedEvent) -> BTreeSet<Watcher> {
        let watchers = self.watchers_of(event);
        if let Some(path) = &event.path {
            let (data, exist, child) = Self::kinds_for(event.event_type);
            for (map, used) in [
                (&mut self.data, data),
                (&mut self.exist, exist),
                (&mut self.child, child),
            ] {
                if used {
                    map.remove(path);
                }
            }
        }
        watchers
    }

    /// The event that would fire the `n`-th armed watch (data watches
    /// first, then exist, then child, each in path order): how a spurious
    /// watch fault picks its event.
    pub fn nth_armed_event(&self, n: usize) -> Option<WatchedEvent> {
        let data = self.data.keys().map(|p| (EventType::NodeDataChanged, p));
        let exist = self.exist.keys().map(|p| (EventType::NodeCreated, p));
        let child = self
            .child
            .keys()
            .map(|p| (EventType::NodeChildrenChanged, p));
        let (kind, path) = data.chain(exist).chain(child).nth(n)?;
        Some(WatchedEvent::node(kind, path.clone()))
    }

    /// Removes every registration of `watcher` (its object was dropped:
    /// the `zookeeper-client` crate removes a dropped `OneshotWatcher`'s
    /// watch); a path left with no watcher is no longer watched here.
    /// Returns whether it held any.
    pub fn forget(&mut self, watcher: WatcherId) -> bool {
        let mut held = false;
        for map in self.maps_mut() {
            map.retain(|_, watchers| {
                held |= watchers.remove(&Watcher::Id(watcher));
                !watchers.is_empty()
            });
        }
        held
    }

    /// How many (kind, path) watches are armed.
    pub fn armed_count(&self) -> usize {
        self.maps().map(BTreeMap::len).sum()
    }

    /// The five maps: data, exist, child, persistent, recursive.
    fn maps(&self) -> impl Iterator<Item = &Registrations> {
        [
            &self.data,
            &self.exist,
            &self.child,
            &self.persistent,
            &self.recursive,
        ]
        .into_iter()
    }

    /// The five maps, to change them.
    pub fn maps_mut(&mut self) -> impl Iterator<Item = &mut Registrations> {
        [
            &mut self.data,
            &mut self.exist,
            &mut self.child,
            &mut self.persistent,
            &mut self.recursive,
        ]
        .into_iter()
    }

    /// The distinct recipe-chosen watchers holding an armed watch: each gets
    /// a state event once (the default watcher gets `Input::Session`).
    pub fn armed_watchers(&self) -> BTreeSet<WatcherId> {
        self.maps()
            .flat_map(|map| map.values().flatten())
            .filter_map(|watcher| match watcher {
                Watcher::Id(id) => Some(*id),
                Watcher::Default => None,
            })
            .collect()
    }

    pub fn to_watch_set(&self) -> WatchSet {
        WatchSet {
            data: self.data.keys().cloned().collect(),
            exist: self.exist.keys().cloned().collect(),
            child: self.child.keys().cloned().collect(),
            persistent: self.persistent.keys().cloned().collect(),
            recursive: self.recursive.keys().cloned().collect(),
        }
    }
}

/// A request the recipe emitted: its tag, the request, and the watcher its
/// watch notifies.
pub type Queued = (Tag, Request, Watcher);

/// How many failed-before-sent requests a session remembers.
pub const UNSENT_FAILURES_KEPT: usize = 8;

/// The last requests the session layer failed with ConnectionLoss before
/// they ever reached the wire (queued while disconnected, then failed by
/// the drop or by a failed reconnect attempt), with the time in ms: what a
/// diagnosis needs to say a delete was tried and lost rather than never
/// sent. A record for diagnoses only, not state: two sessions that differ
/// only in it are equal and hash alike, so the model's state space does
/// not see it. Bounded: the oldest is forgotten first.
#[derive(Clone, Debug, Default)]
pub struct UnsentFailures(VecDeque<(u64, Request)>);

impl UnsentFailures {
    fn record(&mut self, at_ms: u64, request: &Request) {
        if self.0.len() == UNSENT_FAILURES_KEPT {
            self.0.pop_front();
        }
        self.0.push_back((at_ms, request.clone()));
    }

    /// The remembered failures, oldest first: (time in ms, request).
    pub fn iter(&self) -> impl Iterator<Item = &(u64, Request)> {
        self.0.iter()
    }
}

impl PartialEq for UnsentFailures {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for UnsentFailures {}

impl std::hash::Hash for UnsentFailures {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

/// What the session layer counted of the recipe's creates of ephemeral
/// nodes (the nodes recipes hold and wait by; their persistent
/// directories do not count), for the node-churn property. A record for
/// that property only, not state: two tallies always compare equal and
/// hash alike, so the model's state space does not see them.
#[derive(Clone, Copy, Debug, Default)]
pub struct CreateTally {
    /// Creates answered with the node's name: a node was created.
    pub created: u64,
    /// Creates failed with ConnectionLoss: applied or not, the recipe
    /// cannot know, and may rightly create again.
    pub in_doubt: u64,
}

impl CreateTally {
    /// Counts the answer to `request` if it is a create of an ephemeral node.
    fn count(&mut self, request: &Request, result: &ZkResult) {
        let Request::Create { mode, .. } = request else {
            return;
        };
        if !mode.is_ephemeral() {
            return;
        }
        match result {
            Ok(_) => self.created += 1,
            Err(ZkError::ConnectionLoss) => self.in_doubt += 1,
            Err(_) => {}
        }
    }
}

impl PartialEq for CreateTally {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for CreateTally {}

impl std::hash::Hash for CreateTally {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

/// A recipe machine plus its client-side session state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientSession<R: Recipe> {
    pub recipe: R,
    pub session_id: Option<SessionId>,
    pub state: ConnectionState,
    /// The zxid of the last reply received (re-registration uses it).
    pub last_zxid: Zxid,
    /// Emitted by the recipe, not yet sent.
    pub outgoing: VecDeque<Queued>,
    /// Sent, reply not yet received, in send order.
    pub in_flight: VecDeque<Queued>,
    pub watches: WatchTable,
    /// The driver's clock, in ms; the driver sets it (the model keeps it at 0).
    pub now_ms: u64,
    /// Pending timers: id -> due time in ms.
    pub timers: BTreeMap<TimerId, u64>,
    pub outcomes: Vec<R::Outcome>,
    /// Requests failed before they were sent (for diagnoses; not state).
    pub unsent_failures: UnsentFailures,
    /// The recipe's creates, counted for node churn (not state).
    pub creates: CreateTally,
}

impl<R: Recipe> ClientSession<R> {
    /// A client that has not connected yet.
    pub fn new(recipe: R) -> Self {
        ClientSession {
            recipe,
            session_id: None,
            state: ConnectionState::Disconnected,
            last_zxid: 0,
            outgoing: VecDeque::new(),
            in_flight: VecDeque::new(),
            watches: WatchTable::default(),
            now_ms: 0,
            timers: BTreeMap::new(),
            outcomes: Vec::new(),
            unsent_failures: UnsentFailures::default(),
            creates: CreateTally::default(),
        }
    }

    /// The first connection of a (new) session; also used after Expired.
    /// A new session starts with last zxid 0, as a new Java handle does
    /// (ClientCnxn's lastZxid), not with the old session's.
    pub fn connected(&mut self, session_id: SessionId) {
        self.session_id = Some(session_id);
        self.state = ConnectionState::Connected;
        self.last_zxid = 0;
        self.watches = WatchTable::default();
        self.deliver(Input::Session(SessionEvent::Connected { session_id }));
    }

    /// An application call.
    pub fn call(&mut self, call: R::Call) {
        self.deliver(Input::Call(call));
    }

    /// Takes the next request to put on the wire, if connected. Requests
    /// emitted while disconnected wait; while expired they fail at once.
    pub fn next_to_send(&mut self) -> Option<(Tag, Request)> {
        if self.state != ConnectionState::Connected {
            return None;
        }
        let (tag, request, watcher) = self.outgoing.pop_front()?;
        self.in_flight.push_back((tag, request.clone(), watcher));
        Some((tag, request))
    }

    /// The reply to the oldest request in flight.
    pub fn reply(&mut self, result: ZkResult, zxid: Zxid) {
        let (tag, request, watcher) = self
            .in_flight
            .pop_front()
            .expect("a reply needs a request in flight");
        self.last_zxid = self.last_zxid.max(zxid);
        self.creates.count(&request, &result);
        self.watches.register(&request, &result, watcher);
        self.deliver(Input::Reply { tag, result });
    }

    /// A node event from the server; delivered once to each distinct
    /// watcher of the watches it fires (the default watcher first, then
    /// recipe-chosen ones by id), if any was armed (then true).
    pub fn notification(&mut self, event: WatchedEvent) -> bool {
        let watchers = self.watches.fire(&event);
        for watcher in &watchers {
            self.deliver(input_for(*watcher, event.clone()));
        }
        !watchers.is_empty()
    }

    /// A watch event no armed watch asked for (opt-in robustness fault):
    /// handed to the watchers registered for it (their watches stay armed),
    /// or to the default watcher if none is.
    pub fn spurious_event(&mut self, event: WatchedEvent) {
        let mut watchers = self.watches.watchers_of(&event);
        if watchers.is_empty() {
            watchers.insert(Watcher::Default);
        }
        for watcher in watchers {
            self.deliver(input_for(watcher, event.clone()));
        }
    }

    /// The connection dropped: every request in flight (sent, maybe applied)
    /// and every request queued but not yet sent (not applied) fails with
    /// ConnectionLoss, in that order, as ClientCnxn's cleanup does. Requests
    /// the recipe emits from now on wait for the reconnect.
    pub fn disconnected(&mut self) {
        if self.state != ConnectionState::Connected {
            return;
        }
        self.state = ConnectionState::Disconnected;
        self.record_unsent();
        let mut lost = std::mem::take(&mut self.in_flight);
        lost.append(&mut self.outgoing);
        if R::CLIENT_LIBRARY == ClientLibrary::ZookeeperClientRust {
            // zookeeper-client keeps an unanswered addAuth and sends it
            // again first on the next connection (`Depot::pending_authes`).
            let (auths, others) = lost
                .into_iter()
                .partition(|(_, request, _)| matches!(request, Request::AddAuth { .. }));
            self.outgoing = auths;
            lost = others;
        }
        self.fail_connection_loss(lost);
        self.state_event(KeeperState::Disconnected, SessionEvent::Disconnected);
    }

    /// A reconnect attempt failed (the server refused or could not be
    /// reached): every request queued while disconnected fails with
    /// ConnectionLoss, not applied, as ClientCnxn's cleanup does at each
    /// failed attempt. No new state event: the Java client's EventThread
    /// drops a repeated Disconnected. Requests the recipe emits in answer
    /// wait for the next attempt. Returns how many requests failed.
    pub fn reconnect_failed(&mut self) -> usize {
        if self.state != ConnectionState::Disconnected
            || R::CLIENT_LIBRARY == ClientLibrary::ZookeeperClientRust
        {
            return 0;
        }
        self.record_unsent();
        let mut lost = std::mem::take(&mut self.in_flight);
        lost.append(&mut self.outgoing);
        let failed = lost.len();
        self.fail_connection_loss(lost);
        failed
    }

    /// Remembers the queued requests about to fail unsent.
    fn record_unsent(&mut self) {
        for (_, request, _) in &self.outgoing {
            self.unsent_failures.record(self.now_ms, request);
        }
    }

    fn fail_connection_loss(&mut self, lost: VecDeque<Queued>) {
        for (tag, request, _) in lost {
            let result = Err(ZkError::ConnectionLoss);
            self.creates.count(&request, &result);
            self.deliver(Input::Reply { tag, result });
        }
    }

    /// Reconnected into the same session. Returns the watches to re-register
    /// and the zxid to re-register them with; the state events are delivered
    /// before the driver applies that re-registration.
    pub fn reconnected(&mut self) -> (WatchSet, Zxid) {
        assert_eq!(
            self.state,
            ConnectionState::Disconnected,
            "reconnect needs a disconnected client"
        );
        let session_id = self.session_id.expect("a reconnect needs a session");
        self.state = ConnectionState::Connected;
        let watches = self.watches_to_reregister();
        self.state_event(
            KeeperState::SyncConnected,
            SessionEvent::Connected { session_id },
        );
        (watches, self.last_zxid)
    }

    /// The watches a reconnect re-registers (SetWatches2). A
    /// `zookeeper-client` recipe's persistent ones are left out:
    /// zookeeper-client 0.11.2 re-registers with SetWatches, never
    /// SetWatches2 (`resend_watches` keeps `index` at 0), so its watchers
    /// stay but hear only session states from then on (measured on a real
    /// 3.8.0: client/tests/conformance.rs, persistent-loss).
    pub fn watches_to_reregister(&self) -> WatchSet {
        let mut watches = self.watches.to_watch_set();
        if R::CLIENT_LIBRARY == ClientLibrary::ZookeeperClientRust {
            watches.persistent.clear();
            watches.recursive.clear();
        }
        watches
    }

    /// The client learns its session expired. Requests not yet answered fail
    /// with SessionExpired (in-flight ones with ConnectionLoss first, since
    /// the connection must have dropped for the client to find out).
    pub fn expired(&mut self) {
        self.disconnected();
        self.state = ConnectionState::Expired;
        self.state_event(KeeperState::Expired, SessionEvent::Expired);
        self.fail_outgoing_expired();
    }

    /// Fires a pending timer; false if it was cancelled meanwhile.
    pub fn fire_timer(&mut self, id: TimerId) -> bool {
        if self.timers.remove(&id).is_none() {
            return false;
        }
        self.deliver(Input::Timer(id));
        true
    }

    /// The earliest pending timer: (due time in ms, id).
    pub fn next_timer(&self) -> Option<(u64, TimerId)> {
        self.timers.iter().map(|(id, due)| (*due, *id)).min()
    }

    /// Nothing left to send and nothing awaited.
    pub fn is_idle(&self) -> bool {
        self.outgoing.is_empty() && self.in_flight.is_empty()
    }

    /// A state change reaches the default watcher once and each other
    /// distinct watcher with an armed watch once (ZKWatchManager.materialize
    /// collects them into a set), the default watcher first.
    fn state_event(&mut self, state: KeeperState, session_event: SessionEvent) {
        let watchers = self.watches.armed_watchers();
        self.deliver(Input::Session(session_event));
        for watcher in watchers {
            self.deliver(Input::WatcherEvent {
                watcher,
                event: WatchedEvent::state(state),
            });
        }
    }

    fn fail_outgoing_expired(&mut self) {
        if let Some((tag, _, _)) = self.outgoing.pop_front() {
            self.deliver(Input::Reply {
                tag,
                result: Err(ZkError::SessionExpired),
            });
        }
    }

    /// Hands one input to the recipe and files what it emits. On an expired
    /// handle, requests fail at once with SessionExpired; a recipe that
    /// retries them blindly is cut off after `EXPIRED_RETRY_LIMIT` answers
    /// (its requests then stay unsent: a liveness failure, not a hang).
    fn deliver(&mut self, input: Input<R::Call>) {
        let mut next = Some(input);
        let mut expired_answers = 0;
        while let Some(input) = next.take() {
            let mut out = Outbox::new();
            self.recipe.handle(input, &mut out);
            self.file(out);
            if self.state == ConnectionState::Expired && expired_answers < EXPIRED_RETRY_LIMIT {
                if let Some((tag, _, _)) = self.outgoing.pop_front() {
                    expired_answers += 1;
                    next = Some(Input::Reply {
                        tag,
                        result: Err(ZkError::SessionExpired),
                    });
                }
            }
        }
    }

    fn file(&mut self, out: Outbox<R::Outcome>) {
        self.outgoing.extend(out.requests);
        for command in out.timers {
            match command {
                TimerCommand::Set { id, after_ms } => {
                    self.timers.insert(id, self.now_ms.saturating_add(after_ms));
                }
                TimerCommand::Cancel { id } => {
                    self.timers.remove(&id);
                }
            }
        }
        self.outcomes.extend(out.outcomes);
    }
}

/// The input that hands `event` to `watcher`.
fn input_for<C>(watcher: Watcher, event: WatchedEvent) -> Input<C> {
    match watcher {
        Watcher::Default => Input::Watch(event),
        Watcher::Id(watcher) => Input::WatcherEvent { watcher, event },
    }
}

impl<R: zk_recipes::rename::RenameRecipe> zk_recipes::rename::Rename for ClientSession<R> {
    /// Renames the recipe and what the session layer holds for it; the
    /// outcomes must have been handed on (the model does after every step).
    fn rename(&mut self, r: &mut zk_recipes::rename::Renaming) {
        assert!(
            self.outcomes.is_empty(),
            "outcomes are handed on before a rename"
        );
        self.recipe.rename(r);
        self.session_id.rename(r);
        self.last_zxid = r.zxid(self.last_zxid);
        for (_, request, _) in self.outgoing.iter_mut().chain(self.in_flight.iter_mut()) {
            request.rename(r);
        }
        for table in self.watches.maps_mut() {
            *table = std::mem::take(table)
                .into_iter()
                .map(|(path, watchers)| (r.path(&path), watchers))
                .collect();
        }
    }
}
