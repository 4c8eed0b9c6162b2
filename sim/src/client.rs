//! The client session layer: one recipe machine behind a connection that
//! behaves like the Java ZooKeeper client library the original recipes were
//! written for (ClientCnxn and ZKWatchManager). Sans-IO like the recipes: the
//! driver (stepper, madsim world, model) moves requests and replies.
//!
//! Rules it implements:
//! - requests leave in the order the recipe emitted them; replies come back
//!   in the same order (one TCP connection);
//! - a watch is recorded client-side when its request succeeds (for exists,
//!   also on a missing node, in the exist table) and removed when it fires;
//! - a state change (Disconnected, SyncConnected, Expired) reaches the
//!   default watcher as `Input::Session` and every armed watch as an
//!   `Input::Watch` of type None;
//! - when the connection drops, every request in flight fails with
//!   ConnectionLoss (whether the server applied it is unknown);
//! - on reconnect, the armed watches are re-registered with the last zxid
//!   seen (the server fires those whose node changed meanwhile);
//! - after Expired, every request fails with SessionExpired until the driver
//!   opens a new session.

use crate::server::WatchSet;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use zk_recipes::zk::{
    EventType, KeeperState, Path, Reply, Request, SessionEvent, SessionId, WatchedEvent, ZkError,
    ZkResult, Zxid,
};
use zk_recipes::{Input, Outbox, Recipe, Tag, TimerCommand, TimerId};

/// How many SessionExpired answers one input may cause in a row.
pub const EXPIRED_RETRY_LIMIT: usize = 64;

/// The connection as the client sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConnectionState {
    Connected,
    Disconnected,
    Expired,
}

/// The client's record of its armed watches (ZKWatchManager's three maps).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct WatchTable {
    pub data: BTreeSet<Path>,
    pub exist: BTreeSet<Path>,
    pub child: BTreeSet<Path>,
}

impl WatchTable {
    /// Records the watch a successful (or, for exists, NoNode) request armed.
    fn register(&mut self, request: &Request, result: &ZkResult) {
        match (request, result) {
            (Request::Exists { path, watch: true }, Ok(Reply::Exists(Some(_)))) => {
                self.data.insert(path.clone());
            }
            (Request::Exists { path, watch: true }, Ok(Reply::Exists(None))) => {
                self.exist.insert(path.clone());
            }
            (Request::GetData { path, watch: true }, Ok(_)) => {
                self.data.insert(path.clone());
            }
            (
                Request::GetChildren { path, watch: true }
                | Request::GetChildren2 { path, watch: true },
                Ok(_),
            ) => {
                self.child.insert(path.clone());
            }
            _ => {}
        }
    }

    /// True if a watch this node event fires is armed (`fire` would take it).
    pub fn would_fire(&self, event: &WatchedEvent) -> bool {
        let Some(path) = &event.path else {
            return false;
        };
        match event.event_type {
            EventType::NodeCreated | EventType::NodeDataChanged => {
                self.data.contains(path) || self.exist.contains(path)
            }
            EventType::NodeChildrenChanged => self.child.contains(path),
            EventType::NodeDeleted => {
                self.data.contains(path) || self.exist.contains(path) || self.child.contains(path)
            }
            EventType::None => false,
        }
    }

    /// Removes the watches a node event fires; false if none was armed
    /// (the event then reaches no watcher).
    fn fire(&mut self, event: &WatchedEvent) -> bool {
        let Some(path) = &event.path else {
            return false;
        };
        match event.event_type {
            EventType::NodeCreated | EventType::NodeDataChanged => {
                self.data.remove(path) | self.exist.remove(path)
            }
            EventType::NodeChildrenChanged => self.child.remove(path),
            EventType::NodeDeleted => {
                self.data.remove(path) | self.exist.remove(path) | self.child.remove(path)
            }
            EventType::None => false,
        }
    }

    /// The event that would fire the `n`-th armed watch (data watches
    /// first, then exist, then child, each in path order): how a spurious
    /// watch fault picks its event.
    pub fn nth_armed_event(&self, n: usize) -> Option<WatchedEvent> {
        let data = self.data.iter().map(|p| (EventType::NodeDataChanged, p));
        let exist = self.exist.iter().map(|p| (EventType::NodeCreated, p));
        let child = self
            .child
            .iter()
            .map(|p| (EventType::NodeChildrenChanged, p));
        let (kind, path) = data.chain(exist).chain(child).nth(n)?;
        Some(WatchedEvent::node(kind, path.clone()))
    }

    /// How many watcher registrations a state event reaches.
    pub fn armed_count(&self) -> usize {
        self.data.len() + self.exist.len() + self.child.len()
    }

    pub fn to_watch_set(&self) -> WatchSet {
        WatchSet {
            data: self.data.iter().cloned().collect(),
            exist: self.exist.iter().cloned().collect(),
            child: self.child.iter().cloned().collect(),
        }
    }
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
    pub outgoing: VecDeque<(Tag, Request)>,
    /// Sent, reply not yet received, in send order.
    pub in_flight: VecDeque<(Tag, Request)>,
    pub watches: WatchTable,
    /// The driver's clock, in ms; the driver sets it (the model keeps it at 0).
    pub now_ms: u64,
    /// Pending timers: id -> due time in ms.
    pub timers: BTreeMap<TimerId, u64>,
    pub outcomes: Vec<R::Outcome>,
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
        }
    }

    /// The first connection of a (new) session; also used after Expired.
    pub fn connected(&mut self, session_id: SessionId) {
        self.session_id = Some(session_id);
        self.state = ConnectionState::Connected;
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
        let (tag, request) = self.outgoing.pop_front()?;
        self.in_flight.push_back((tag, request.clone()));
        Some((tag, request))
    }

    /// The reply to the oldest request in flight.
    pub fn reply(&mut self, result: ZkResult, zxid: Zxid) {
        let (tag, request) = self
            .in_flight
            .pop_front()
            .expect("a reply needs a request in flight");
        self.last_zxid = self.last_zxid.max(zxid);
        self.watches.register(&request, &result);
        self.deliver(Input::Reply { tag, result });
    }

    /// A node event from the server; delivered if a watch was armed for it
    /// (then true).
    pub fn notification(&mut self, event: WatchedEvent) -> bool {
        let fired = self.watches.fire(&event);
        if fired {
            self.deliver(Input::Watch(event));
        }
        fired
    }

    /// A watch event no armed watch asked for (opt-in robustness fault).
    pub fn spurious_event(&mut self, event: WatchedEvent) {
        self.deliver(Input::Watch(event));
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
        let mut lost = std::mem::take(&mut self.in_flight);
        lost.append(&mut self.outgoing);
        for (tag, _) in lost {
            self.deliver(Input::Reply {
                tag,
                result: Err(ZkError::ConnectionLoss),
            });
        }
        self.state_event(KeeperState::Disconnected, SessionEvent::Disconnected);
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
        let watches = self.watches.to_watch_set();
        self.state_event(
            KeeperState::SyncConnected,
            SessionEvent::Connected { session_id },
        );
        (watches, self.last_zxid)
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

    fn state_event(&mut self, state: KeeperState, session_event: SessionEvent) {
        self.deliver(Input::Session(session_event));
        for _ in 0..self.watches.armed_count() {
            self.deliver(Input::Watch(WatchedEvent::state(state)));
        }
    }

    fn fail_outgoing_expired(&mut self) {
        if let Some((tag, _)) = self.outgoing.pop_front() {
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
                if let Some((tag, _)) = self.outgoing.pop_front() {
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
