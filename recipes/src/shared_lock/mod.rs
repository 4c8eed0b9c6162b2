//! Shared (read/write) lock, as in the ZooKeeper recipes documentation
//! ("Shared Locks"). There is no seed for it.
//!
//! Protocol: a reader creates EPHEMERAL_SEQUENTIAL `<lock>/read-`, a writer
//! `<lock>/write-`; both read the children. A reader holds when no `write-`
//! node has a lower sequence number, else it waits (exists watch) for the
//! last `write-` node below it; a writer holds when no node at all is below
//! it, else it waits for the node just below it. Release deletes the node.
//! Property: never a writer together with any other holder.
//!
//! - [`original::OriginalSharedLock`] is the straightforward recipe: the
//!   lock node must exist, and a create that failed with ConnectionLoss is
//!   retried blindly (the pitfall the documentation warns about, known bug
//!   2): if the lost create was applied, an orphan node of the client's own
//!   live session stays in the queue (a writer then waits for itself; a
//!   reader's orphan blocks every later writer until the session ends).
//!   Session expiry is never noticed by a holder.
//! - [`fixed::FixedSharedLock`] is a [`Ticket`](crate::curator_lock::ticket)
//!   named `_c_<id>-read-` / `_c_<id>-write-` (the documented GUID fix:
//!   look for our id before creating again), container parents, creation
//!   order with wrap-around arithmetic, the creation zxid as fencing token,
//!   and `Lost` on session expiry.
//!
//! Both variants share [`SharedLockCall`] and [`SharedLockOutcome`].

pub mod fixed;
pub mod original;

pub use fixed::FixedSharedLock;
pub use original::OriginalSharedLock;

use crate::observe::{Hold, Observation, Observe};
use crate::recipe::FencingToken;
use crate::zk::ZkError;
use serde::{Deserialize, Serialize};

/// Read (shared) or write (exclusive).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum LockMode {
    Read,
    Write,
}

impl LockMode {
    /// The node name marker before the sequence: `read-` or `write-`.
    pub fn marker(self) -> &'static str {
        match self {
            LockMode::Read => "read-",
            LockMode::Write => "write-",
        }
    }
}

/// What the application asks of the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum SharedLockCall {
    /// Answered by `Acquired` once held.
    Acquire { mode: LockMode },
    /// Answered by `Released` (or `Lost`).
    Release,
}

/// What the lock tells the application.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SharedLockOutcome {
    Acquired {
        mode: LockMode,
        token: FencingToken,
    },
    Released,
    /// The client learned it no longer holds the lock (its session expired
    /// or its node was deleted); it was possibly not a holder for a while.
    Lost,
    Failed(SharedLockError),
}

/// Why a call failed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error, Serialize, Deserialize)]
pub enum SharedLockError {
    #[error("ZooKeeper error: {0}")]
    Zk(ZkError),
    #[error("release without holding the lock")]
    NotHeld,
    /// The call came while another call was still being answered, or an
    /// acquire while holding (the recipe is not re-entrant).
    #[error("{0:?} is not allowed now")]
    CallOutOfTurn(SharedLockCall),
    /// The node carrying this client's id belongs to another session.
    #[error("the lock node with this client's id belongs to another session")]
    NodeNotOwned,
    /// The lock node's sequence counter is used up (it sticks at 2147483647).
    #[error("the lock's sequence counter is exhausted")]
    SequenceExhausted,
}

impl Observe for SharedLockOutcome {
    fn observe(&self) -> Observation {
        match self {
            SharedLockOutcome::Acquired { mode, token } => {
                let hold = match mode {
                    LockMode::Read => Hold::Shared,
                    LockMode::Write => Hold::Exclusive,
                };
                Observation::Acquired {
                    hold,
                    token: *token,
                }
            }
            SharedLockOutcome::Released => Observation::Released,
            SharedLockOutcome::Lost => Observation::Lost,
            SharedLockOutcome::Failed(error) => Observation::Failed {
                reason: error.to_string(),
            },
        }
    }
}
