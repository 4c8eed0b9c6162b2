//! Barriers: `size` members enter together and leave together.
//!
//! Protocol (seed 001, a Chinese translation of ZooKeeper's tutorial
//! "Programming with ZooKeeper - A basic tutorial", class `Barrier`): each
//! member creates a child of the barrier root; `enter` waits until the root
//! has `size` children, `leave` deletes the member's child and waits until the
//! root has none.
//!
//! - [`original::OriginalBarrier`] follows the tutorial step by step: the
//!   child is named after the host (two members on one host collide, known
//!   bug 5a) and members re-count the children after every wakeup, so a member
//!   that re-counts after the fast ones already left waits forever (known
//!   bug 5b); errors, including a lost create reply, escape to the
//!   application and leave the member's node behind.
//! - [`fixed::FixedBarrier`] is the double barrier of the ZooKeeper recipes
//!   documentation: unique child names, a `ready` node created by the member
//!   that sees the count reached (the others wait for it with an exists
//!   watch), and the documented leave protocol (the lowest member waits for
//!   the highest, the others delete their node and wait for the lowest).
//!   Every step is safe to retry; nodes it created are gone after `Left`.
//!
//! Both variants share [`BarrierCall`] and [`BarrierOutcome`].

pub mod fixed;
pub mod original;

pub use fixed::FixedBarrier;
pub use original::{OriginalBarrier, TutorialNodeMode};

use crate::observe::{Observation, Observe};
use crate::zk::ZkError;
use serde::{Deserialize, Serialize};

/// What the application asks of a barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum BarrierCall {
    /// Join; answered by `Entered` once `size` members have joined.
    Enter,
    /// Leave; answered by `Left` once every member has left.
    Leave,
}

/// What a barrier tells the application.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BarrierOutcome {
    /// Passed the entry: `size` members are in.
    Entered,
    /// Passed the exit: every member is out.
    Left,
    /// The call could not be carried out.
    Failed(BarrierError),
}

/// Why a barrier call failed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error, Serialize, Deserialize)]
pub enum BarrierError {
    /// A ZooKeeper error reached the application.
    #[error("ZooKeeper error: {0}")]
    Zk(ZkError),
    /// The call does not fit the current state (Enter twice, Leave before Enter).
    #[error("{0:?} is not allowed now")]
    CallOutOfTurn(BarrierCall),
    /// The member node carrying this client's unique id belongs to another session.
    #[error("the member node with this client's id belongs to another session")]
    NodeNotOwned,
}

impl Observe for BarrierOutcome {
    fn observe(&self) -> Observation {
        match self {
            BarrierOutcome::Entered => Observation::Entered,
            BarrierOutcome::Left => Observation::Left,
            BarrierOutcome::Failed(error) => Observation::Failed {
                reason: error.to_string(),
            },
        }
    }
}
