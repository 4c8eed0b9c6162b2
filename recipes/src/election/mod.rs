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
use std::cmp::Ordering;

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

/// Parses a sequence suffix as ZooKeeper writes it (`%010d` of a signed
/// 32-bit counter: `0000000004`, or `-2147483648` after wrap-around).
pub fn parse_sequence(suffix: &str) -> Option<i32> {
    let digits = suffix.strip_prefix('-').unwrap_or(suffix);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    suffix.parse().ok()
}

/// Orders two sequence numbers of one parent by creation, across the
/// counter's wrap from `i32::MAX` to `i32::MIN` (serial number arithmetic,
/// RFC 1982): `a` comes first when `b` is less than 2^31 creates after it.
/// A total order as long as the live numbers span less than 2^31 creates.
/// (ZooKeeper 3.8 wraps only inside one multi; between requests its counter
/// sticks at `i32::MAX`, which makes equal numbers instead.)
pub fn serial_order(a: i32, b: i32) -> Ordering {
    match b.wrapping_sub(a) {
        0 => Ordering::Equal,
        gap if gap > 0 => Ordering::Less,
        _ => Ordering::Greater,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_padded_and_wrapped_sequences() {
        assert_eq!(parse_sequence("0000000004"), Some(4));
        assert_eq!(parse_sequence("2147483647"), Some(i32::MAX));
        assert_eq!(parse_sequence("-2147483648"), Some(i32::MIN));
        assert_eq!(parse_sequence("-000000005"), Some(-5));
        assert_eq!(parse_sequence(""), None);
        assert_eq!(parse_sequence("-"), None);
        assert_eq!(parse_sequence("+12"), None);
        assert_eq!(parse_sequence("12a"), None);
    }

    #[test]
    fn serial_order_survives_wrap_around() {
        assert_eq!(serial_order(3, 4), Ordering::Less);
        assert_eq!(serial_order(4, 3), Ordering::Greater);
        assert_eq!(serial_order(7, 7), Ordering::Equal);
        assert_eq!(serial_order(i32::MAX, i32::MIN), Ordering::Less);
        assert_eq!(serial_order(i32::MIN, i32::MAX), Ordering::Greater);
        assert_eq!(serial_order(i32::MAX - 1, i32::MIN + 1), Ordering::Less);
    }
}
