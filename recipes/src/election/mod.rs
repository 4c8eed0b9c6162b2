//! Leader election: contenders volunteer, exactly one of them leads at a time,
//! and the next one takes over when the leader resigns or its session ends.
//!
//! Protocol (seed 003, a Chinese blog post on election, after "Hadoop: The
//! Definitive Guide"): every contender creates an EPHEMERAL_SEQUENTIAL node
//! under the election parent; the contender whose node has the smallest
//! sequence number leads; the others wait for a change and check again.
//!
//! - [`original::OriginalElection`] follows the seed step by step: every
//!   contender watches the whole children list, so every change wakes all of
//!   them (the herd effect, known bug 4); a create that lost its reply is
//!   retried blindly and leaves an orphan node behind (known bug 2); errors
//!   inside the watcher are swallowed; session expiry is never noticed.
//! - [`fixed::FixedElection`] watches only its immediate predecessor, orders
//!   by the sequence number with wrap-around (serial) arithmetic, puts a unique
//!   id in its node name and looks for it before creating again, checks that
//!   the node it leads with belongs to its current session, reports `Lost`
//!   when its session expires and starts over in a new session when still
//!   volunteering; it refuses to guess when the parent's counter is stuck at
//!   `i32::MAX` and sequence numbers repeat.
//!
//! Both variants share [`ElectionCall`] and [`ElectionOutcome`] so drivers and
//! oracles treat them alike.

pub mod fixed;
pub mod original;

pub use fixed::FixedElection;
pub use original::OriginalElection;

use crate::observe::{Hold, Observation, Observe};
use crate::recipe::FencingToken;
use crate::zk::ZkError;
use serde::{Deserialize, Serialize};

/// Sequence suffixes and creation order, shared with the other recipes.
pub use crate::sequence::{parse_sequence, serial_order};

/// What the application asks of an election.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ElectionCall {
    /// Join the election; answered by `Elected` once this client leads.
    Volunteer,
    /// Leave the election (step down if leading); answered by `Resigned`.
    Resign,
}

/// What an election tells the application.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ElectionOutcome {
    /// This client leads from now on; `token` grows with every new leader.
    Elected { token: FencingToken },
    /// The client left the election on request; it no longer leads.
    Resigned,
    /// The client learned it no longer leads (e.g. its session expired); it
    /// was possibly not the leader for a while before.
    Lost,
    /// The call could not be carried out.
    Failed(ElectionError),
}

/// Why an election call failed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error, Serialize, Deserialize)]
pub enum ElectionError {
    /// A ZooKeeper error reached the application.
    #[error("ZooKeeper error: {0}")]
    Zk(ZkError),
    /// The call does not fit the current state (Volunteer while volunteering,
    /// Resign while not volunteering).
    #[error("{0:?} is not allowed now")]
    CallOutOfTurn(ElectionCall),
    /// The node carrying this client's unique id belongs to another session.
    #[error("the election node with this client's id belongs to another session")]
    NodeNotOwned,
    /// Another node has this client's sequence number: the parent's counter
    /// is stuck at `i32::MAX` (ZooKeeper does not wrap it), so the creation
    /// order is unknown. Use a new parent.
    #[error("the parent's sequence counter is exhausted")]
    SequenceExhausted,
}

impl Observe for ElectionOutcome {
    fn observe(&self) -> Observation {
        match self {
            ElectionOutcome::Elected { token } => Observation::Acquired {
                hold: Hold::Exclusive,
                token: *token,
            },
            ElectionOutcome::Resigned => Observation::Released,
            ElectionOutcome::Lost => Observation::Lost,
            ElectionOutcome::Failed(error) => Observation::Failed {
                reason: error.to_string(),
            },
        }
    }
}
