//! Semaphore with leases: at most `max_leases` leases are held at a time
//! (InterProcessSemaphoreV2 semantics, as seed 002's
//! `doServiceBySemaphoreLock` / `releaseSemaphoreLock` use it).
//!
//! - [`original::OriginalSemaphore`] is Curator 2.5.0's V2: per lease, take
//!   the InterProcessMutex at `<path>/locks` (the original curator lock),
//!   create a protected EPHEMERAL_SEQUENTIAL `<path>/leases/_c_<id>-lease-`,
//!   and wait (child watch) until `<path>/leases` has at most `max_leases`
//!   children, then release the mutex. Found wrong: the persistent parents
//!   `<path>`, `<path>/locks`, `<path>/leases` stay behind (bug 7); a
//!   request for several leases takes them one at a time, so two clients
//!   each holding part of what they need wait for each other while one of
//!   them keeps the mutex (deadlock until a timeout); a lease whose node
//!   vanished with an expired session stays in the result (acquired counts
//!   one lease too many); a holder never learns its session expired (more
//!   than `max_leases` holders after a pause, bug 8's twin).
//! - [`fixed::FixedSemaphore`] takes all its leases at once with one ticket
//!   `_c_<id>-<count>-lease-` under a container `<path>`: it holds when the
//!   leases asked by its node and all older nodes add up to at most
//!   `max_leases` (FIFO, all or nothing, no mutex), and reports `Lost` when
//!   its session expires.
//!
//! Both variants share [`SemaphoreCall`] and [`SemaphoreOutcome`]. The
//! fencing token of an acquisition is its newest lease node's token.

pub mod fixed;
pub mod original;

pub use fixed::FixedSemaphore;
pub use original::OriginalSemaphore;

use crate::curator_lock::LockError;
use crate::observe::{Hold, Observation, Observe};
use crate::recipe::FencingToken;
use crate::zk::ZkError;
use serde::{Deserialize, Serialize};

/// What the application asks of the semaphore.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum SemaphoreCall {
    /// `acquire(count, time, unit)`: answered by `Acquired` or `TimedOut`.
    Acquire { count: u32, timeout_ms: Option<u64> },
    /// `returnAll(leases)`: return every lease held.
    Return,
}

/// What the semaphore tells the application.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SemaphoreOutcome {
    /// The client holds `leases` leases.
    Acquired {
        leases: u32,
        token: FencingToken,
    },
    /// A timed acquire gave up; any lease it had taken is returned.
    TimedOut,
    /// Every lease held was returned.
    Returned,
    /// The client learned its leases are gone (its session expired); it
    /// possibly held nothing for a while before.
    Lost,
    Failed(SemaphoreError),
}

/// Why a semaphore call failed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error, Serialize, Deserialize)]
pub enum SemaphoreError {
    #[error("ZooKeeper error: {0}")]
    Zk(ZkError),
    /// The mutex guarding lease creation failed.
    #[error("the semaphore's mutex failed: {0}")]
    Mutex(LockError),
    /// A count of 0 (Curator: "qty cannot be 0"), or above `max_leases`.
    #[error("cannot acquire {0} leases")]
    BadCount(u32),
    #[error("no lease to return")]
    NothingToReturn,
    /// The call came while another call was still being answered, or an
    /// acquire while leases are held.
    #[error("{0:?} is not allowed now")]
    CallOutOfTurn(SemaphoreCall),
    /// The node carrying this client's id belongs to another session.
    #[error("the lease node with this client's id belongs to another session")]
    NodeNotOwned,
    /// The parent's sequence counter is used up (it sticks at 2147483647).
    #[error("the semaphore's sequence counter is exhausted")]
    SequenceExhausted,
}

impl Observe for SemaphoreOutcome {
    fn observe(&self) -> Observation {
        match self {
            SemaphoreOutcome::Acquired { leases, token } => Observation::Acquired {
                hold: Hold::Leases(*leases),
                token: *token,
            },
            SemaphoreOutcome::TimedOut => Observation::TimedOut,
            SemaphoreOutcome::Returned => Observation::Released,
            SemaphoreOutcome::Lost => Observation::Lost,
            SemaphoreOutcome::Failed(error) => Observation::Failed {
                reason: error.to_string(),
            },
        }
    }
}
