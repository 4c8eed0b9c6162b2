//! What the built-in workloads need to know about a recipe's calls, as
//! values given when the recipe is registered: which calls acquire and
//! which releases, how to offer an item and take one, how to enter and
//! leave a barrier. Values, not traits: two instances of one recipe type
//! may be registered with different calls (a read/write lock as a read
//! lock and as a write lock).

use std::sync::Arc;

/// A recipe that is acquired and released: a lock, an election, a semaphore.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HoldCalls<C> {
    /// The acquisition calls a client may make (e.g. read or write for a
    /// shared lock); the workload picks one per cycle.
    pub acquire: Vec<C>,
    pub release: C,
}

impl<C> HoldCalls<C> {
    /// One acquisition call and its release.
    pub fn new(acquire: C, release: C) -> Self {
        HoldCalls {
            acquire: vec![acquire],
            release,
        }
    }

    /// Several acquisition calls (the workload picks one per cycle).
    pub fn any_of(acquire: Vec<C>, release: C) -> Self {
        assert!(!acquire.is_empty(), "a hold recipe needs an acquire call");
        HoldCalls { acquire, release }
    }
}

/// A queue.
#[derive(Clone)]
pub struct QueueCalls<C> {
    /// The call that offers one item.
    pub offer: Arc<dyn Fn(Vec<u8>) -> C + Send + Sync>,
    /// A take that waits for an item (or answers Empty at once).
    pub take: C,
}

impl<C> QueueCalls<C> {
    pub fn new(offer: impl Fn(Vec<u8>) -> C + Send + Sync + 'static, take: C) -> Self {
        QueueCalls {
            offer: Arc::new(offer),
            take,
        }
    }
}

/// A barrier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BarrierCalls<C> {
    pub enter: C,
    pub leave: C,
}

impl<C> BarrierCalls<C> {
    pub fn new(enter: C, leave: C) -> Self {
        BarrierCalls { enter, leave }
    }
}
