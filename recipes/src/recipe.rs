//! The contract between a recipe and whatever drives it (the synchronous
//! stepper, the madsim simulator, the stateright model, a real ZooKeeper).
//!
//! A recipe is a sans-IO state machine: it never performs I/O, reads a clock
//! or draws a random number. Everything it learns arrives as an [`Input`]
//! through [`Recipe::handle`]; everything it wants done leaves through the
//! [`Outbox`]. Because a recipe is plain data (`Clone + Eq + Hash`), the model
//! checker can store, compare and branch on it.
//!
//! # How a driver calls a recipe
//!
//! 1. Construct the recipe with its configuration (lock path, unique id drawn
//!    by the driver from the seed, ...).
//! 2. When the session is established, deliver
//!    `Input::Session(SessionEvent::Connected { session_id })`. No call is
//!    delivered before the first `Connected`.
//! 3. Deliver application calls (`Input::Call`) as the workload decides.
//! 4. Send the requests the recipe emits in the order it emitted them, on its
//!    session (ZooKeeper applies one session's requests in order). Deliver
//!    every reply as `Input::Reply` with the request's tag, in the order the
//!    requests were sent. A reply may be `Err(ConnectionLoss)`: the request
//!    may or may not have been applied.
//! 5. Deliver watch notifications in the order the session received them
//!    relative to replies (ZooKeeper delivers a watch event before the reply
//!    of any later request that observes the change), once to each distinct
//!    watcher registered for the event's path and kind: `Input::Watch` for
//!    the default watcher, `Input::WatcherEvent` for a recipe-chosen one.
//! 6. On a connection state change, deliver `Input::Session(..)` to the
//!    default watcher (once, however many watches it holds) and, as the Java
//!    client's ZKWatchManager does, one `Input::WatcherEvent` of type `None`
//!    with that state to each other distinct watcher holding an armed watch.
//! 7. Fire timers the recipe set (`Input::Timer`) after their delay, unless
//!    cancelled or set again (setting an id again replaces it).
//! 8. A request emitted while the connection is down waits; each failed
//!    reconnect attempt fails every waiting request with ConnectionLoss (not
//!    applied), as the Java client's cleanup does.
//!
//! # Watchers
//!
//! A Java recipe names who a watch notifies: `exists(path, true)` registers
//! the handle's default watcher, `exists(path, watcher)` a `Watcher` object.
//! The Java client keeps, per path, the set of watcher objects (one object
//! registered twice on a path is notified once) and hands each state change
//! to the default watcher and to every distinct object with an armed watch.
//! Here [`Outbox::send`] with a `watch: true` request registers the default
//! watcher; [`Outbox::send_watched`] registers a [`WatcherId`] the recipe
//! picks: one id for one long-lived object (`exists(path, this)`), a fresh id
//! per registration for `new Watcher() { .. }` on every call
//! ([`FreshWatchers`] hands out small ones). Events for a
//! recipe-chosen watcher arrive as `Input::WatcherEvent { watcher, event }`.
//!
//! Outcomes are the recipe's answers to the application (Acquired, Released,
//! Item, Entered, Failed, ...), collected by the driver in emission order.

use crate::zk::{Request, SessionEvent, WatchedEvent, ZkResult};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt::Debug;
use std::hash::Hash;

/// A recipe-chosen label on a request, handed back with its reply. Tags need
/// not be unique: replies come back in request order. Recipes usually name
/// the step the request belongs to (`const CREATE: Tag = Tag(1)`), which
/// keeps model-checker states small.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Tag(pub u32);

/// A recipe-chosen timer name. At most one timer per id is pending.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TimerId(pub u32);

/// A watcher object a recipe registers watches for (a Java `Watcher`
/// instance other than the handle's default watcher). Recipe-chosen; the
/// session layer only compares ids: same id, same object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct WatcherId(pub u32);

/// Ids for watcher objects a recipe makes per registration (Java's
/// `new Watcher() { .. }` on every call). A new object takes the smallest id
/// no live object holds, so equal situations give equal recipe states (the
/// model checker stores them once). An object lives from its registration
/// until its node event arrives (a watch is one-shot) or its request fails
/// (the Java client registers a watch only on success).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FreshWatchers {
    live: BTreeSet<u32>,
}

impl FreshWatchers {
    /// A new watcher object, live from now on.
    pub fn make(&mut self) -> WatcherId {
        let id = (1..).find(|id| !self.live.contains(id)).unwrap_or(0);
        self.live.insert(id);
        WatcherId(id)
    }

    /// The object will see no more events (its watch fired, or was never
    /// armed); its id may be reused.
    pub fn release(&mut self, watcher: WatcherId) {
        self.live.remove(&watcher.0);
    }

    pub fn is_live(&self, watcher: WatcherId) -> bool {
        self.live.contains(&watcher.0)
    }
}

/// Who a watch notifies: the handle's default watcher (`watch=true` in the
/// Java API) or a recipe-chosen watcher object. Orders the default first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Watcher {
    Default,
    Id(WatcherId),
}

/// Everything a recipe can be told.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Input<C> {
    /// An application call: lock, unlock, offer, take, enter, leave, ...
    Call(C),
    /// The answer to a request this recipe emitted with `tag`.
    Reply { tag: Tag, result: ZkResult },
    /// A node event for the default watcher (a watch armed by a `watch: true`
    /// request sent with [`Outbox::send`]).
    Watch(WatchedEvent),
    /// An event for a recipe-chosen watcher (armed with
    /// [`Outbox::send_watched`]): a node event, or a connection state change
    /// (type None) while the watcher holds an armed watch.
    WatcherEvent {
        watcher: WatcherId,
        event: WatchedEvent,
    },
    /// A session state change seen by the default watcher.
    Session(SessionEvent),
    /// A timer this recipe set has fired.
    Timer(TimerId),
}

/// A timer command.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TimerCommand {
    /// Fire `id` after `after_ms` of (simulated) time, replacing a pending one.
    Set {
        id: TimerId,
        after_ms: u64,
    },
    Cancel {
        id: TimerId,
    },
}

/// What a recipe asks of its driver while handling one input.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Outbox<O> {
    /// Requests in emission order, each with the watcher its watch (if the
    /// request's `watch` flag is set) notifies.
    pub requests: Vec<(Tag, Request, Watcher)>,
    pub timers: Vec<TimerCommand>,
    pub outcomes: Vec<O>,
}

impl<O> Default for Outbox<O> {
    fn default() -> Self {
        Outbox {
            requests: Vec::new(),
            timers: Vec::new(),
            outcomes: Vec::new(),
        }
    }
}

impl<O> Outbox<O> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sends `request`; a `watch: true` flag registers the default watcher.
    pub fn send(&mut self, tag: Tag, request: Request) {
        self.requests.push((tag, request, Watcher::Default));
    }

    /// Sends `request` (with its `watch` flag set) registering `watcher`
    /// instead of the default watcher: Java's `exists(path, watcher)`.
    pub fn send_watched(&mut self, tag: Tag, request: Request, watcher: WatcherId) {
        self.requests.push((tag, request, Watcher::Id(watcher)));
    }

    /// Sends `request` registering `watcher` (either kind): for recipes that
    /// pass a watcher along, and for forwarding an inner recipe's requests.
    pub fn send_as(&mut self, tag: Tag, request: Request, watcher: Watcher) {
        self.requests.push((tag, request, watcher));
    }

    pub fn set_timer(&mut self, id: TimerId, after_ms: u64) {
        self.timers.push(TimerCommand::Set { id, after_ms });
    }

    pub fn cancel_timer(&mut self, id: TimerId) {
        self.timers.push(TimerCommand::Cancel { id });
    }

    pub fn emit(&mut self, outcome: O) {
        self.outcomes.push(outcome);
    }

    pub fn is_empty(&self) -> bool {
        self.requests.is_empty() && self.timers.is_empty() && self.outcomes.is_empty()
    }
}

/// Which client library's session rules a recipe is written against: they
/// differ in what happens to a request made while the connection is down.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientLibrary {
    /// The Java client (ClientCnxn): each failed reconnect attempt fails
    /// every request queued meanwhile with ConnectionLoss (rule 8 above).
    Java,
    /// The Rust `zookeeper-client` crate: a request made while disconnected
    /// waits for the next connection (failed with SessionExpired if the
    /// session is gone by then), however many attempts fail.
    ZookeeperClientRust,
}

/// A coordination recipe as a deterministic state machine.
pub trait Recipe: Clone + Debug + Eq + Hash {
    /// The client library whose session rules the driver follows.
    const CLIENT_LIBRARY: ClientLibrary = ClientLibrary::Java;

    /// Application calls (lock, unlock, offer(bytes), take, enter, leave, ...).
    type Call: Clone + Debug + Eq + Hash;
    /// Answers to the application (Acquired { token }, Released, Item, ...).
    type Outcome: Clone + Debug + Eq + Hash;

    /// Handle one input; push requests, timers and outcomes into `out`.
    /// Must not panic on any input sequence a driver can produce: a recipe
    /// that cannot go on emits a failure outcome instead.
    fn handle(&mut self, input: Input<Self::Call>, out: &mut Outbox<Self::Outcome>);
}

/// A fencing token: increases with every acquisition of a lock, so a shared
/// resource can reject a stale holder. Recipes use the creation zxid or the
/// sequence number of the node they hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FencingToken(pub i64);
