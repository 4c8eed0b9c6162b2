//! What the oracles see of a recipe: every outcome type maps its values onto a
//! few recipe-independent observations, so the simulator's oracles and the
//! model checker's properties are written once for all recipes of a kind.
//!
//! A recipe's `Outcome` type implements [`Observe`] next to its definition.

use crate::recipe::FencingToken;
use serde::{Deserialize, Serialize};

/// What kind of hold an acquisition grants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Hold {
    /// A lock or a leadership: nobody else may hold anything at the same time.
    Exclusive,
    /// A read lock: other shared holders are fine, an exclusive one is not.
    Shared,
    /// `n` leases of a semaphore.
    Leases(u32),
}

/// One outcome as the oracles understand it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Observation {
    /// The client now holds the resource (lock, leadership, leases).
    Acquired { hold: Hold, token: FencingToken },
    /// The client gave up what it held, on request.
    Released,
    /// The client learned it no longer holds what it held (e.g. its session
    /// expired); it was possibly not the holder for a while before.
    Lost,
    /// A timed acquisition gave up.
    TimedOut,
    /// A queue accepted an item.
    Offered { item: Vec<u8> },
    /// A queue delivered an item to this client.
    Taken { item: Vec<u8> },
    /// A non-blocking take found the queue empty.
    Empty,
    /// The client passed a barrier's entry.
    Entered,
    /// The client passed a barrier's exit.
    Left,
    /// The recipe gave up on a call (an error escaped to the application).
    Failed { reason: String },
}

/// Which of a client's holds an observation is about: a client may hold
/// several at once (nested locks, a read lock taken under a write lock),
/// each judged on its own. A recipe whose clients hold one thing at a time
/// never names one (every observation is about `HoldId::FIRST`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct HoldId(pub u32);

impl HoldId {
    pub const FIRST: HoldId = HoldId(0);
}

/// Implemented by every recipe's `Outcome` type.
pub trait Observe {
    fn observe(&self) -> Observation;

    /// The observation, or None for an outcome the oracles do not judge
    /// (an async recipe's replies and watch events: only what its
    /// application reports is observed). Drivers call this one.
    fn observed(&self) -> Option<Observation> {
        Some(self.observe())
    }

    /// The hold the observation is about.
    fn hold(&self) -> HoldId {
        HoldId::FIRST
    }
}
