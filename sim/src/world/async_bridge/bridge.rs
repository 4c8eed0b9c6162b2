//! The async side of one simulated client: hands each reply to the future
//! waiting for it, each watch event to its watcher and each session state to
//! the handles and state watchers of that session.
//!
//! A [`Bridge`] wraps the world's [`Client`] of an [`ApiRecipe`]. A request
//! is handed to the session layer when it is submitted ([`Bridge::submit`]),
//! not when its future is polled: requests are ordered at the call, as the
//! `zookeeper-client` crate orders them. One dispatcher task per client
//! takes the recipe's outcomes as they come and files them here.
//!
//! Sessions: the world opens the client's session, and a new one after the
//! server expired it; after the crate's own give-up (7/5 of the session
//! timeout without hearing a server) only when the application connects
//! again (`Client::connect_again`). An application handle claims a session
//! ([`Bridge::claim`]) and stays bound to it: once it expired, every request of that handle fails
//! with SessionExpired at once, as the crate's client does (the application
//! must connect again, and gets the next session).

use super::context::{Sleep, World};
use super::recipe::{ApiCall, ApiOutcome, ApiRecipe};
use crate::client::ConnectionState;
use crate::faults::MsRange;
use crate::oracles::CallObservation;
use crate::world::Client;
use madsim::task::NodeId;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use zk_recipes::zk::{Request, SessionEvent, SessionId, WatchedEvent, ZkError, ZkResult};
use zk_recipes::{FencingToken, HoldId, Observation, WatcherId};

/// One client's async side; clones share it.
#[derive(Clone)]
pub struct Bridge {
    app: Client<ApiRecipe>,
    filed: Arc<Mutex<Filed>>,
}

thread_local! {
    /// The bridges of the run on this thread, by client node (a run is one
    /// madsim runtime on one thread); emptied when the run ends.
    static BRIDGES: RefCell<BTreeMap<NodeId, Bridge>> = const { RefCell::new(BTreeMap::new()) };
}

/// Forgets the bridges of the run that ended on this thread (they hold its
/// world).
pub(crate) fn forget_bridges() {
    BRIDGES.with(|bridges| bridges.borrow_mut().clear());
}

/// What arrived and who waits for it.
#[derive(Default)]
struct Filed {
    next_id: u32,
    replies: BTreeMap<u32, Slot<ZkResult>>,
    watches: BTreeMap<u32, Slot<WatchedEvent>>,
    /// The persistent watchers (addWatch requests), by request id.
    persistent: BTreeMap<u32, Stream>,
    /// Every session of the client, its states in order.
    sessions: BTreeMap<SessionId, Vec<ConnectionState>>,
    current: Option<SessionId>,
    claimed: BTreeSet<SessionId>,
    /// Tasks waiting for a session state to change.
    state_wakers: Vec<Waker>,
}

struct Slot<T> {
    value: Option<T>,
    waker: Option<Waker>,
}

impl<T> Slot<T> {
    fn empty() -> Slot<T> {
        Slot {
            value: None,
            waker: None,
        }
    }

    fn fill(&mut self, value: T) {
        self.value = Some(value);
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }
}

/// A persistent watcher's events not yet taken, and who waits for the next.
#[derive(Default)]
struct Stream {
    events: VecDeque<WatchedEvent>,
    waker: Option<Waker>,
}

impl Stream {
    fn push(&mut self, event: WatchedEvent) {
        self.events.push_back(event);
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }
}

/// Why a handle could not get a session.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClaimError {
    #[error(
        "client {client} connects a second session while its first is alive: zkcheck simulates \
         one session per client at a time (connect again after the first expired)"
    )]
    SecondSession { client: usize },
}

/// A submitted request: its id, or the error it failed with at once.
#[derive(Debug)]
pub enum Ticket {
    Sent { id: u32, watch: bool },
    Failed(ZkError),
}

impl Bridge {
    /// Starts the client's dispatcher task (on the client's node: a paused
    /// client hears nothing).
    pub fn start(app: Client<ApiRecipe>) -> Bridge {
        let bridge = Bridge {
            app,
            filed: Arc::new(Mutex::new(Filed::default())),
        };
        let node = madsim::plugin::node();
        BRIDGES.with(|bridges| bridges.borrow_mut().insert(node, bridge.clone()));
        let dispatcher = bridge.clone();
        madsim::task::spawn(async move {
            loop {
                let outcome = dispatcher.app.next_outcome().await;
                dispatcher.filed().file(outcome);
            }
        });
        bridge
    }

    /// The bridge of the simulated client whose node the calling task runs
    /// on (how `Client::connect` in user code finds its client).
    pub fn of_current_node() -> Option<Bridge> {
        let node = madsim::plugin::node();
        BRIDGES.with(|bridges| bridges.borrow().get(&node).cloned())
    }

    fn filed(&self) -> MutexGuard<'_, Filed> {
        self.filed.lock().expect("bridge state")
    }

    /// The world's handle of this client (workload parameters, the fenced
    /// resource, simulated time).
    pub fn app(&self) -> &Client<ApiRecipe> {
        &self.app
    }

    /// Waits for a session of this client no handle has claimed, connected,
    /// and claims it.
    pub async fn claim(&self) -> Result<SessionId, ClaimError> {
        if self.filed().handle_expired() {
            // The session may have ended by the crate's own deadline: the
            // world opens the next one when asked.
            self.app.connect_again();
        }
        std::future::poll_fn(|cx| {
            let mut filed = self.filed();
            let Some(session) = filed.current else {
                filed.state_wakers.push(cx.waker().clone());
                return Poll::Pending;
            };
            let state = filed.state_of(session);
            if filed.claimed.contains(&session) && state != ConnectionState::Expired {
                return Poll::Ready(Err(ClaimError::SecondSession {
                    client: self.app.index(),
                }));
            }
            if filed.claimed.contains(&session) || state != ConnectionState::Connected {
                filed.state_wakers.push(cx.waker().clone());
                return Poll::Pending;
            }
            filed.claimed.insert(session);
            Poll::Ready(Ok(session))
        })
        .await
    }

    /// Hands `request` to `session`'s client now; fails at once if that
    /// session expired (or is not the client's any more).
    pub fn submit(&self, session: SessionId, request: Request) -> Ticket {
        let watch = request.sets_watch();
        let persistent = matches!(request, Request::AddWatch { .. });
        let id = {
            let mut filed = self.filed();
            if filed.current != Some(session) || filed.state_of(session) == ConnectionState::Expired
            {
                return Ticket::Failed(ZkError::SessionExpired);
            }
            let id = filed.next_id;
            filed.next_id = filed.next_id.wrapping_add(1);
            filed.replies.insert(id, Slot::empty());
            if persistent {
                filed.persistent.insert(id, Stream::default());
            } else if watch {
                filed.watches.insert(id, Slot::empty());
            }
            id
        };
        self.app.call(ApiCall::Request { id, request });
        Ticket::Sent { id, watch }
    }

    /// The reply to a submitted request.
    pub fn reply(&self, id: u32) -> Reply {
        Awaited {
            filed: self.filed.clone(),
            id,
            done: false,
            table: |filed| &mut filed.replies,
            forget: |filed, id| {
                filed.replies.remove(&id);
                filed.watches.remove(&id);
                filed.persistent.remove(&id);
            },
            watched_on: None,
        }
    }

    /// The events of the persistent watcher an addWatch set (after its
    /// reply said it is set).
    pub fn persistent_watcher(&self, id: u32) -> PersistentEvents {
        PersistentEvents {
            filed: self.filed.clone(),
            id,
            app: self.app.clone(),
        }
    }

    /// The watcher a watching request set (after its reply said it is set).
    pub fn watcher(&self, id: u32) -> WatchEvent {
        Awaited {
            filed: self.filed.clone(),
            id,
            done: false,
            table: |filed| &mut filed.watches,
            forget: |filed, id| {
                filed.watches.remove(&id);
            },
            watched_on: Some(self.app.clone()),
        }
    }

    /// Forgets a watch that was not set (its request failed).
    pub fn forget_watch(&self, id: u32) {
        let mut filed = self.filed();
        filed.watches.remove(&id);
        filed.persistent.remove(&id);
    }

    /// The latest state of `session`.
    pub fn state(&self, session: SessionId) -> ConnectionState {
        self.filed().state_of(session)
    }

    /// How many states `session` went through so far (a state watcher's
    /// position).
    pub fn states_seen(&self, session: SessionId) -> usize {
        self.filed().sessions.get(&session).map_or(0, Vec::len)
    }

    /// Waits until `session` has gone past position `seen`; returns the new
    /// position and the latest state.
    pub async fn state_after(&self, session: SessionId, seen: usize) -> (usize, ConnectionState) {
        std::future::poll_fn(|cx| {
            let mut filed = self.filed();
            let states = filed.sessions.get(&session).map_or(0, Vec::len);
            if states > seen {
                return Poll::Ready((states, filed.state_of(session)));
            }
            filed.state_wakers.push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// The application starts or stops something the oracles judge,
    /// about one of its holds.
    pub fn doing(&self, hold: HoldId, call: CallObservation) {
        self.app.call(ApiCall::Doing { hold, call });
    }

    /// The application saw something the oracles judge, about one of its
    /// holds.
    pub fn saw(&self, hold: HoldId, observation: Observation) {
        self.app.call(ApiCall::Saw { hold, observation });
    }
}

/// The simulator as an async workload's world.
impl World for Bridge {
    fn index(&self) -> usize {
        self.app.index()
    }

    fn clients(&self) -> usize {
        self.app.clients()
    }

    fn cluster(&self) -> String {
        // Any connect string reaches the simulated ensemble.
        "zkcheck-simulated:2181".to_string()
    }

    fn session_timeout_ms(&self) -> u64 {
        self.app.session_timeout_ms()
    }

    fn stopping(&self) -> bool {
        self.app.stopping()
    }

    fn draw_ms(&self, range: MsRange) -> u64 {
        self.app.draw_ms(range)
    }

    fn sleep_ms(&self, ms: u64) -> Sleep {
        let app = self.app.clone();
        Box::pin(async move { app.sleep_ms(ms).await })
    }

    fn write_resource(&self, token: FencingToken) -> bool {
        self.app.write_resource(token)
    }

    fn doing(&self, hold: HoldId, call: CallObservation) {
        Bridge::doing(self, hold, call)
    }

    fn saw(&self, hold: HoldId, observation: Observation) {
        Bridge::saw(self, hold, observation)
    }
}

impl Filed {
    /// The current session is claimed by a handle and expired.
    fn handle_expired(&self) -> bool {
        self.current.is_some_and(|session| {
            self.claimed.contains(&session) && self.state_of(session) == ConnectionState::Expired
        })
    }

    fn state_of(&self, session: SessionId) -> ConnectionState {
        self.sessions
            .get(&session)
            .and_then(|states| states.last().copied())
            .unwrap_or(ConnectionState::Expired)
    }

    fn file(&mut self, outcome: ApiOutcome) {
        match outcome {
            ApiOutcome::Reply { id, result } => {
                if let Some(slot) = self.replies.get_mut(&id) {
                    slot.fill(result);
                }
            }
            ApiOutcome::Watch { id, event } => {
                if let Some(slot) = self.watches.get_mut(&id) {
                    slot.fill(event);
                } else if let Some(stream) = self.persistent.get_mut(&id) {
                    stream.push(event);
                }
            }
            ApiOutcome::Session(event) => self.session_event(event),
            ApiOutcome::Saw { .. } => {}
        }
    }

    fn session_event(&mut self, event: SessionEvent) {
        let state = match event {
            SessionEvent::Connected { session_id } => {
                self.current = Some(session_id);
                ConnectionState::Connected
            }
            SessionEvent::Disconnected => ConnectionState::Disconnected,
            SessionEvent::Expired => ConnectionState::Expired,
        };
        if let Some(session) = self.current {
            self.sessions.entry(session).or_default().push(state);
        }
        for waker in self.state_wakers.drain(..) {
            waker.wake();
        }
    }
}

/// The events a persistent watcher hears, in order (node events and
/// state changes). Dropping it removes its watch from the session, as
/// dropping the crate's `PersistentWatcher` does.
pub struct PersistentEvents {
    filed: Arc<Mutex<Filed>>,
    id: u32,
    app: Client<ApiRecipe>,
}

impl PersistentEvents {
    /// The next event; pends until one comes (forever once the watch is
    /// gone).
    pub async fn next(&mut self) -> WatchedEvent {
        std::future::poll_fn(|cx| {
            let mut filed = self.filed.lock().expect("bridge state");
            let Some(stream) = filed.persistent.get_mut(&self.id) else {
                return Poll::Pending;
            };
            match stream.events.pop_front() {
                Some(event) => Poll::Ready(event),
                None => {
                    stream.waker = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await
    }
}

impl Drop for PersistentEvents {
    fn drop(&mut self) {
        if let Ok(mut filed) = self.filed.lock() {
            filed.persistent.remove(&self.id);
        }
        self.app.forget_watcher(WatcherId(self.id));
    }
}

/// What one request awaits: its reply ([`Reply`]) or its watch's event
/// ([`WatchEvent`]), filed by the request's id. Never filed (a watch
/// forgotten, a reply dropped), it pends forever. Dropping it unfilled
/// forgets what it waited for (a dropped reply, the watch it would have set
/// too); a watcher dropped before it fired has its watch removed from the
/// session, as the crate's `OneshotWatcher` does.
pub struct Awaited<T> {
    filed: Arc<Mutex<Filed>>,
    id: u32,
    done: bool,
    table: fn(&mut Filed) -> &mut BTreeMap<u32, Slot<T>>,
    forget: fn(&mut Filed, u32),
    /// The session that holds the watch this awaits, if it awaits one.
    watched_on: Option<Client<ApiRecipe>>,
}

/// The reply to one request.
pub type Reply = Awaited<ZkResult>;
/// The one event a watcher hears.
pub type WatchEvent = Awaited<WatchedEvent>;

impl<T> Future for Awaited<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let (table, id) = (self.table, self.id);
        let mut filed = self.filed.lock().expect("bridge state");
        let Some(slot) = table(&mut filed).get_mut(&id) else {
            return Poll::Pending;
        };
        match slot.value.take() {
            Some(value) => {
                table(&mut filed).remove(&id);
                drop(filed);
                self.done = true;
                Poll::Ready(value)
            }
            None => {
                slot.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl<T> Drop for Awaited<T> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Ok(mut filed) = self.filed.lock() {
            (self.forget)(&mut filed, self.id);
        }
        if let Some(app) = &self.watched_on {
            app.forget_watcher(WatcherId(self.id));
        }
    }
}
