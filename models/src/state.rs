//! The model state: the in-memory server, one client per contender (its
//! Java-client-like session around the recipe machine, what the server sent
//! it that it has not handled yet, its place in the workload and what its
//! application believes it holds), the remaining fault budget, and the few
//! facts the step-checked properties need (highest fencing token granted,
//! queue item tallies, violations seen on a step).

use crate::cached::Cached;
use crate::faults::FaultBudget;
use crate::server::ModelServer;
use std::collections::{BTreeMap, VecDeque};
use zk_recipes::zk::{SessionId, WatchedEvent, ZkResult, Zxid};
use zk_recipes::{FencingToken, Hold, Recipe};
use zk_sim::client::ClientSession;

/// Index of a client in the model.
pub type ClientId = usize;

/// The session id of `client` in its `generation`-th session (0 = first),
/// when client 0's first session is `first`. With the default first id
/// ([`crate::setup::FIRST_SESSION`], 257) all ids have the same number of
/// decimal digits (257.., 513.., ...), so their string and numeric orders
/// agree.
pub fn session_id(first: SessionId, client: ClientId, generation: u8) -> SessionId {
    SessionId(first.0 + 0x100 * i64::from(generation) + client as i64)
}

/// Something the server sent a client that the client has not handled yet.
/// A session's replies and events arrive in the order the server sent them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Inbound {
    Reply { result: ZkResult, zxid: Zxid },
    Event(WatchedEvent),
}

/// What a client's application believes it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Holding {
    pub hold: Hold,
    pub token: FencingToken,
    /// The session the hold was granted under: while it is alive on the
    /// server the hold is real, afterwards the client is a stale holder.
    pub session: SessionId,
}

/// An application call waiting for its outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pending {
    /// Index of the call in the client's workload.
    pub step: u8,
    /// The client held something when it made the call (an unlock): a
    /// `Lost` outcome then answers the call too.
    pub while_holding: bool,
}

/// One client: its session layer with the recipe inside, and its inbox.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientState<R: Recipe> {
    pub session: ClientSession<R>,
    /// The id of the client's current session (see [`session_id`]).
    pub session_id: SessionId,
    /// Replies and watch events sent by the server, not yet handled.
    pub inbox: VecDeque<Inbound>,
    /// How many sessions this client had before the current one.
    pub generation: u8,
    /// The next workload step to call.
    pub next_step: u8,
    pub pending: Option<Pending>,
    pub holding: Option<Holding>,
    /// The last answered call failed (`Failed`, `TimedOut`).
    pub last_call_failed: bool,
}

/// What happened to one queue item.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ItemTally {
    /// Offers acknowledged with `Offered`.
    pub acknowledged: u8,
    /// Deliveries to a consumer.
    pub taken: u8,
    /// Bit `c` is set when client `c` took the item.
    pub takers: u32,
}

/// Violations detected on a step (they cannot be read off a single state).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Violations(u16);

impl Violations {
    /// An acquisition's token was not above every token granted before.
    pub const FENCE: Violations = Violations(1);
    /// A client acquired although an older contender's node was still there.
    pub const FIFO: Violations = Violations(1 << 1);
    /// One release (a delete, or an expiry's deletions) notified more
    /// clients of one change than the herd bound.
    pub const HERD: Violations = Violations(1 << 2);
    /// A client passed a barrier's entry before every member called enter.
    pub const BARRIER_ENTER: Violations = Violations(1 << 3);
    /// A client passed a barrier's exit before every member called leave.
    pub const BARRIER_LEAVE: Violations = Violations(1 << 4);
    /// A queue delivered an item twice.
    pub const DUPLICATE_ITEM: Violations = Violations(1 << 5);
    /// A queue delivered an item nobody offered.
    pub const UNKNOWN_ITEM: Violations = Violations(1 << 6);
    /// A consumer took a producer's items out of the order they were offered.
    pub const QUEUE_ORDER: Violations = Violations(1 << 7);
    /// A recipe reported that its own invariant broke
    /// (`Observation::Violated`; which one, the replay on the simulator says).
    pub const RECIPE_INVARIANT: Violations = Violations(1 << 8);

    pub fn insert(&mut self, other: Violations) {
        self.0 |= other.0;
    }

    pub fn contains(self, other: Violations) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn intersects(self, other: Violations) -> bool {
        self.0 & other.0 != 0
    }

    pub const fn union(self, other: Violations) -> Violations {
        Violations(self.0 | other.0)
    }
}

/// The whole model state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ModelState<R: Recipe> {
    /// The one server, or the ensemble (dereferences to the committed state).
    pub server: Cached<ModelServer>,
    pub clients: Vec<Cached<ClientState<R>>>,
    pub budget: FaultBudget,
    /// The highest fencing token of an exclusive acquisition so far.
    pub fence: Option<FencingToken>,
    /// Queue items by content.
    pub items: BTreeMap<Vec<u8>, ItemTally>,
    pub violations: Violations,
}

impl<R: Recipe> ModelState<R> {
    /// The client's current session is alive on the server.
    pub fn is_alive(&self, client: ClientId) -> bool {
        self.server
            .is_session_alive(self.clients[client].session_id)
    }

    /// The client holds something under a session the server still has.
    pub fn live_holding(&self, client: ClientId) -> Option<Holding> {
        let holding = self.clients[client].holding?;
        self.server
            .is_session_alive(holding.session)
            .then_some(holding)
    }
}
