//! Curator-style re-entrant lock (InterProcessMutex with LockInternals and
//! StandardLockInternalsDriver, Curator 2.5.0 as seeds 002 and 004 use it).
//!
//! Protocol: make sure the lock path `/locks/<key>` exists (created on the
//! first NoNode); create EPHEMERAL_SEQUENTIAL `<lock path>/_c_<id>-lock-`
//! ("protection": after a connection loss, look for the `_c_<id>-` prefix
//! among the children before creating again); read the children and sort
//! them by the sequence suffix; first means acquired, else getData with a
//! watch on the node just before ours (NoNode: read again at once) and wait.
//! A timed acquire that runs out deletes its node. Release deletes the node.
//!
//! - [`original::OriginalCuratorLock`] is Curator 2.5.0 as seed 002 uses it:
//!   persistent parents left behind after release (known bug 7, hence the
//!   seed's cleanup job), the sequence suffixes compared as strings (once
//!   the counter sticks at `2147483647`, later nodes get the same number and
//!   the order of getChildren decides: two holders), a holder that never learns its session
//!   expired (known bug 8: its fencing token is smaller than the next
//!   holder's), and a new `InterProcessMutex` per call, so a second acquire of
//!   the same key before the (transaction-deferred) release waits for its own
//!   node until it times out (the seed author's own warning).
//! - [`fixed::FixedCuratorLock`] uses container parents (the server reaps them
//!   once empty), orders by sequence with wrap-around arithmetic, counts
//!   re-entrant acquires per instance, checks a recovered node's owner,
//!   takes the node's creation zxid as fencing token (sequence numbers
//!   restart when a container parent is reaped and created again) and
//!   reports `Lost` when its session expires. A node numbered `2147483647`
//!   is given up with `SequenceExhausted`: ZooKeeper's counter sticks there,
//!   so every later node gets the same number and no order is left.
//!
//! Both variants share [`LockCall`] and [`LockOutcome`].

pub mod fixed;
pub mod original;
pub mod parents;
pub(crate) mod protection;
pub mod sequence;
pub mod ticket;

pub use fixed::FixedCuratorLock;
pub use original::OriginalCuratorLock;

use crate::observe::{Hold, Observation, Observe};
use crate::recipe::FencingToken;
use crate::zk::ZkError;
use serde::{Deserialize, Serialize};

/// The marker Curator puts before the sequence of a lock node.
pub const LOCK_NAME: &str = "lock-";

/// What the application asks of the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum LockCall {
    /// `acquire()` or `acquire(time, unit)`: answered by `Acquired` or, once
    /// `timeout_ms` has passed, `TimedOut`.
    Acquire { timeout_ms: Option<u64> },
    /// `release()`: answered by `Released` (or `Lost`).
    Release,
}

/// What the lock tells the application.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LockOutcome {
    /// The client holds the lock; a re-entrant acquire repeats the token.
    Acquired { token: FencingToken },
    /// A timed acquire gave up; the client holds nothing new.
    TimedOut,
    /// One acquire was undone on request (the lock is free once every
    /// re-entrant acquire is released).
    Released,
    /// The client learned it no longer holds the lock (its session expired or
    /// its node was deleted); it was possibly not the holder for a while.
    Lost,
    /// The call could not be carried out.
    Failed(LockError),
}

/// Why a lock call failed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error, Serialize, Deserialize)]
pub enum LockError {
    /// A ZooKeeper error reached the application.
    #[error("ZooKeeper error: {0}")]
    Zk(ZkError),
    /// Release without holding the lock (Curator: IllegalMonitorStateException).
    #[error("release without holding the lock")]
    NotHeld,
    /// The call came while another call was still being answered.
    #[error("{0:?} while another call is in progress")]
    CallOutOfTurn(LockCall),
    /// The node carrying this client's id belongs to another session.
    #[error("the lock node with this client's id belongs to another session")]
    NodeNotOwned,
    /// The parent's sequence counter reached `i32::MAX` and sticks there
    /// (ZooKeeper names every later child `...2147483647`), so the order of
    /// the nodes is lost. The node was deleted; once the parent is empty the
    /// server reaps it and a new one counts from 0 again.
    #[error("the lock path's sequence counter is exhausted")]
    SequenceExhausted,
}

impl Observe for LockOutcome {
    fn observe(&self) -> Observation {
        match self {
            LockOutcome::Acquired { token } => Observation::Acquired {
                hold: Hold::Exclusive,
                token: *token,
            },
            LockOutcome::TimedOut => Observation::TimedOut,
            LockOutcome::Released => Observation::Released,
            LockOutcome::Lost => Observation::Lost,
            LockOutcome::Failed(error) => Observation::Failed {
                reason: error.to_string(),
            },
        }
    }
}
