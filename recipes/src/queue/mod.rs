//! Distributed FIFO queues: seed 000's `DistributedQueue` (ZooKeeper's
//! `recipes/queue`), seed 001's tutorial producer/consumer `Queue`, and a
//! fixed queue with exactly-once delivery in FIFO order.
//!
//! The protocol all three share: a queue is a directory znode; a producer
//! offers an item by creating a PERSISTENT_SEQUENTIAL child holding the
//! payload; a consumer lists the children, picks the one with the smallest
//! sequence number, reads its data and deletes it (whoever deletes it owns
//! it); a blocking take that finds the queue empty waits on a child watch.
//!
//! What goes wrong in the originals (known bug 6 and more): the
//! read-then-delete and the sequential create are not idempotent, so a
//! connection loss after the server applied them loses an item (the delete)
//! or duplicates one when the application retries (the create); the tutorial
//! fails with NoNode when two consumers race for one head. [`fixed::FixedQueue`]
//! pairs every write with a receipt node in one multi so that after a
//! connection loss it can tell whether its write was applied.
//!
//! All variants speak [`QueueCall`] and [`QueueOutcome`], one call at a time
//! per client: each call is answered by exactly one outcome (a call made
//! while another runs is answered at once with `Failed(Busy)`). An oracle
//! checks exactly-once by payload (workloads offer distinct payloads, known
//! from the `Offer` calls) and FIFO as: each consumer receives one
//! producer's items in the order that producer offered them. `Failed` on an
//! offer means "maybe enqueued", on a take "maybe removed".

pub mod distributed_original;
pub mod fixed;
mod naming;
mod seed_constructor;
pub mod tutorial_original;

pub use distributed_original::DistributedQueueOriginal;
pub use fixed::FixedQueue;
pub use naming::{fifo_order, java_long_order, tutorial_min_child, NameError};
pub use tutorial_original::TutorialQueueOriginal;

use crate::zk::{ZkError, ZkResult};
use crate::{Observation, Observe};

/// An application call on a queue.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueueCall {
    /// Append an item (answered by `Offered` or `Failed`).
    Offer(Vec<u8>),
    /// Remove the head, waiting until there is one (answered by `Item` or `Failed`).
    Take,
    /// Remove the head if there is one (answered by `Item`, `Empty` or `Failed`).
    Poll,
}

/// The answer to one [`QueueCall`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum QueueOutcome {
    /// The item is in the queue.
    Offered,
    /// This client removed the item and owns it; no other client gets it.
    Item(Vec<u8>),
    /// A poll found the queue empty.
    Empty,
    /// The call ended without its effect being known to have happened: an
    /// `Offer` may or may not have enqueued the item, a `Take`/`Poll` may or
    /// may not have removed one (that is the originals' bug 6).
    Failed(QueueFailure),
}

/// Why a queue call failed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum QueueFailure {
    /// A ZooKeeper error escaped to the application (a Java `KeeperException`).
    #[error("ZooKeeper error: {0}")]
    Keeper(ZkError),
    /// A child name the seed code cannot parse (a Java `NumberFormatException`
    /// or `StringIndexOutOfBoundsException`).
    #[error("malformed child name {0:?}")]
    MalformedChild(String),
    /// A call arrived while another call of this client was still running;
    /// the running call is unaffected and answers later.
    #[error("another call is still running")]
    Busy,
}

impl QueueOutcome {
    /// The outcome of a ZooKeeper error escaping to the application (for a
    /// failed multi, the error of its failing op).
    pub fn keeper(error: &ZkError) -> QueueOutcome {
        QueueOutcome::Failed(QueueFailure::Keeper(error.root_cause().clone()))
    }
}

impl Observe for QueueOutcome {
    fn observe(&self) -> Observation {
        match self {
            // The item is known from the Offer call this answers.
            QueueOutcome::Offered => Observation::Offered { item: Vec::new() },
            QueueOutcome::Item(item) => Observation::Taken { item: item.clone() },
            QueueOutcome::Empty => Observation::Empty,
            QueueOutcome::Failed(failure) => Observation::Failed {
                reason: failure.to_string(),
            },
        }
    }
}

/// An error that escapes to the application, or a reply of the wrong kind
/// (which no ZooKeeper server sends) reported as an inconsistency.
fn escaped(result: ZkResult) -> QueueOutcome {
    match result {
        Err(error) => QueueOutcome::keeper(&error),
        Ok(_) => QueueOutcome::keeper(&ZkError::RuntimeInconsistency),
    }
}

/// A child name that is not a valid path segment.
fn malformed(name: &str) -> QueueOutcome {
    QueueOutcome::Failed(QueueFailure::MalformedChild(name.to_string()))
}
