//! Exclusive lock: ZooKeeper's `WriteLock` recipe (seed 000, the blog post
//! "基于ZooKeeper的分布式锁和队列" quoting `org.apache.zookeeper.recipes.lock`).
//!
//! Protocol: every contender creates an EPHEMERAL_SEQUENTIAL child of the
//! lock directory, lists the children, and holds the lock when its node sorts
//! first; otherwise it sets an exists watch on the node just before its own
//! and checks again when that watch fires. Unlock deletes the node.
//!
//! - [`original::OriginalLock`] ports `WriteLock`, `ZNodeName`,
//!   `ProtocolSupport.retryOperation` / `ensurePathExists` and `LockWatcher`
//!   step by step, with the upstream code the blog's author criticises
//!   (ordering by name prefix first: known bug 1; a recovered id stored as a
//!   bare child name: known bug 3), not the author's patched copies.
//! - [`fixed::FixedLock`] orders by sequence only (wrap-aware), names its
//!   node after a unique id so a retry finds it instead of creating again,
//!   watches only its predecessor, re-lists after every wakeup, deletes by
//!   full path tolerating NoNode, reports `Lost` when its session ends while
//!   it holds, and starts over in a new session when a lock call is pending.
//!
//! Both speak [`LockCall`] and [`LockOutcome`]. A holder's tenure ends when
//! it *calls* `Unlock` (the application stops using the resource then);
//! `Released` confirms the node is gone, so the next holder's `Acquired` may
//! be emitted before it.

pub mod fixed;
mod names;
pub mod original;
mod znode_name;

pub use fixed::FixedLock;
pub use names::{parse_lock_node, LockNodeName};
pub use original::OriginalLock;
pub use znode_name::ZNodeName;

use crate::observe::{Hold, Observation, Observe};
use crate::recipe::FencingToken;
use crate::zk::{PathError, ZkError};
use serde::{Deserialize, Serialize};

/// What the application asks of a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum LockCall {
    /// Acquire the lock; answered by `Acquired` (maybe much later) or `Failed`.
    Lock,
    /// Give the lock up, or stop waiting for it; answered by `Released`
    /// (`Lost` if the fixed variant finds it had lost the lock meanwhile).
    Unlock,
}

/// What a lock tells the application.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LockOutcome {
    /// This client holds the lock; `token` grows with every new holder.
    Acquired { token: FencingToken },
    /// The lock is given up (`LockListener.lockReleased()` for the original).
    Released,
    /// The client learned it no longer holds the lock it had acquired (its
    /// session ended); it was possibly not the holder for a while before.
    Lost,
    /// An error reached the application.
    Failed(LockError),
}

/// Why a lock call failed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error, Serialize, Deserialize)]
pub enum LockError {
    /// A ZooKeeper error reached the application (a Java `KeeperException`).
    #[error("ZooKeeper error: {0}")]
    Zk(ZkError),
    /// The client library refused a path before sending the request (Java's
    /// `IllegalArgumentException` from `PathUtils.validatePath`).
    #[error("invalid path: {0}")]
    InvalidPath(PathError),
    /// A call arrived while another call of this client was still waiting
    /// for its turn; the waiting call is unaffected.
    #[error("another call is still waiting to run")]
    Busy,
    /// The lock directory's sequence counter has reached 2^31-1, where
    /// ZooKeeper 3.8 stops counting: our node shares its number with later
    /// ones and cannot be ordered, so the fixed lock gave it up.
    #[error("the lock directory's sequence counter is exhausted")]
    SequenceExhausted,
}

impl LockOutcome {
    /// The outcome of a ZooKeeper error escaping to the application.
    pub fn zk_failure(error: ZkError) -> LockOutcome {
        LockOutcome::Failed(LockError::Zk(error))
    }
}

impl Observe for LockOutcome {
    fn observe(&self) -> Observation {
        match self {
            LockOutcome::Acquired { token } => Observation::Acquired {
                hold: Hold::Exclusive,
                token: *token,
            },
            LockOutcome::Released => Observation::Released,
            LockOutcome::Lost => Observation::Lost,
            LockOutcome::Failed(error) => Observation::Failed {
                reason: error.to_string(),
            },
        }
    }
}
