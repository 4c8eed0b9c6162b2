//! How the oracles see application calls, whatever the recipe's call type.
//!
//! A holder's tenure ends when the application *calls* release (it stops
//! using the resource then), not when the recipe confirms it; so the
//! oracles need to know which call is which.

/// One application call as the oracles understand it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CallObservation {
    /// Asks for a lock, a leadership, leases.
    Acquire,
    /// Gives up what the client holds (or stops waiting for it).
    Release,
    /// Puts an item into a queue.
    Offer { item: Vec<u8> },
    /// Asks a queue for its head.
    Take,
    /// Enters a barrier.
    Enter,
    /// Leaves a barrier.
    Leave,
    /// Anything the oracles do not judge.
    Other,
}

/// Implemented for every recipe's `Call` type (see `observe_impls`).
pub trait ObserveCall {
    fn observe_call(&self) -> CallObservation;

    /// The hold the call is about (see `zk_recipes::HoldId`).
    fn hold(&self) -> zk_recipes::HoldId {
        zk_recipes::HoldId::FIRST
    }
}
