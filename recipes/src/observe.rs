//! What the oracles see of a recipe: every outcome type maps its values onto a
//! few recipe-independent observations, so the simulator's oracles and the
//! model checker's properties are written once for all recipes of a kind.
//!
//! A recipe's `Outcome` type implements [`Observe`] next to its definition.
//!
//! A recipe (or an async recipe's application) states its own invariants
//! through [`Observation::Violated`]: an outcome observed as one is judged
//! as a violation of the property it names ([`check_property_name`] says
//! which names are valid).

use crate::recipe::FencingToken;
use serde::{Deserialize, Serialize};

/// What kind of hold an acquisition grants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Hold {
    /// A lock or a leadership: nobody else may hold anything at the same time.
    Exclusive,
    /// A read lock: other shared holders are fine, an exclusive one is not.
    Shared,
    /// `n` leases of a semaphore.
    Leases(u32),
}

/// One outcome as the oracles understand it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Observation {
    /// The client now holds the resource (lock, leadership, leases).
    Acquired { hold: Hold, token: FencingToken },
    /// The client gave up what it held, on request.
    Released,
    /// The client learned it no longer holds what it held (e.g. its session
    /// expired); it was possibly not the holder for a while before.
    Lost,
    /// A timed acquisition gave up.
    TimedOut,
    /// A queue accepted an item.
    Offered { item: Vec<u8> },
    /// A queue delivered an item to this client.
    Taken { item: Vec<u8> },
    /// A non-blocking take found the queue empty.
    Empty,
    /// The client passed a barrier's entry.
    Entered,
    /// The client passed a barrier's exit.
    Left,
    /// The recipe gave up on a call (an error escaped to the application).
    Failed { reason: String },
    /// The recipe found its own invariant `property` broken (`detail`: how,
    /// free text): judged as a violation of the user-named property
    /// `property`, which must pass [`check_property_name`]. It answers no
    /// call: a workload waiting for an outcome goes on waiting.
    Violated { property: String, detail: String },
}

/// Names no recipe may give its own invariant: the built-in properties of
/// the simulator's oracles and of the model checker, and `invariant` (what
/// a violation whose name was refused is reported as).
pub const RESERVED_PROPERTY_NAMES: &[&str] = &[
    "mutual_exclusion",
    "fenced_mutual_exclusion",
    "fifo",
    "herd",
    "liveness",
    "no_leaks",
    "exactly_once",
    "barrier",
    "one_leader",
    "node_churn",
    "invariant",
    "recipe_invariant",
    "no_stuck_waiter",
    "lock_acquired",
    "leader_elected",
    "item_consumed",
    "barrier_passed",
    "workload_can_complete",
    "stale_holder_overlap",
    "expiry_reported",
];

/// The longest name a recipe may give its own invariant, in bytes.
pub const MAX_PROPERTY_NAME_BYTES: usize = 48;

/// Why a name cannot name a recipe's own invariant.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PropertyNameError {
    #[error("an invariant's name cannot be empty")]
    Empty,
    #[error("invariant name `{0}` is longer than {MAX_PROPERTY_NAME_BYTES} bytes")]
    TooLong(String),
    #[error(
        "invariant name `{0}` is not an identifier: a letter, then letters, digits, `_` or `-`"
    )]
    NotIdentifier(String),
    #[error(
        "invariant name `{0}` is a built-in property's name: name your own invariant otherwise"
    )]
    Reserved(String),
}

/// Checks that `name` can name a recipe's own invariant: a short identifier
/// (an ASCII letter, then letters, digits, `_` or `-`; at most
/// [`MAX_PROPERTY_NAME_BYTES`]) that is no built-in property's name (compared
/// ignoring case, `-` as `_`), so a sweep's bucket `name/...` is the user's.
pub fn check_property_name(name: &str) -> Result<(), PropertyNameError> {
    let shown = || name.escape_debug().to_string();
    if name.is_empty() {
        return Err(PropertyNameError::Empty);
    }
    if name.len() > MAX_PROPERTY_NAME_BYTES {
        return Err(PropertyNameError::TooLong(shown()));
    }
    let mut chars = name.chars();
    let first_is_letter = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    if !first_is_letter || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err(PropertyNameError::NotIdentifier(shown()));
    }
    let folded = name.to_ascii_lowercase().replace('-', "_");
    if RESERVED_PROPERTY_NAMES.contains(&folded.as_str()) {
        return Err(PropertyNameError::Reserved(name.to_string()));
    }
    Ok(())
}

/// Which of a client's holds an observation is about: a client may hold
/// several at once (nested locks, a read lock taken under a write lock),
/// each judged on its own. A recipe whose clients hold one thing at a time
/// never names one (every observation is about `HoldId::FIRST`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct HoldId(pub u32);

impl HoldId {
    pub const FIRST: HoldId = HoldId(0);
}

/// Implemented by every recipe's `Outcome` type.
pub trait Observe {
    /// The names of the recipe's own invariants this outcome type can report
    /// broken ([`Observation::Violated`]). The stateful checker checks its
    /// `recipe_invariant` property only for an outcome type that names some:
    /// an always-property that cannot fail would keep a search that already
    /// has every other verdict from ending early. Reporting a name not listed
    /// here is a programmer error (the checker panics saying so).
    const INVARIANTS: &'static [&'static str] = &[];

    fn observe(&self) -> Observation;

    /// The observation, or None for an outcome the oracles do not judge
    /// (an async recipe's replies and watch events: only what its
    /// application reports is observed). Drivers call this one.
    fn observed(&self) -> Option<Observation> {
        Some(self.observe())
    }

    /// The hold the observation is about.
    fn hold(&self) -> HoldId {
        HoldId::FIRST
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_identifier_names_an_invariant() {
        assert_eq!(check_property_name("single_leader_node"), Ok(()));
        assert_eq!(check_property_name("latch-token-1"), Ok(()));
    }

    #[test]
    fn bad_names_are_refused() {
        assert_eq!(check_property_name(""), Err(PropertyNameError::Empty));
        let long = "a".repeat(MAX_PROPERTY_NAME_BYTES + 1);
        assert!(matches!(
            check_property_name(&long),
            Err(PropertyNameError::TooLong(_))
        ));
        for bad in ["1abc", "_x", "a/b", "a b", "é"] {
            assert!(
                matches!(
                    check_property_name(bad),
                    Err(PropertyNameError::NotIdentifier(_))
                ),
                "{bad}"
            );
        }
        for reserved in [
            "one_leader",
            "Mutual_Exclusion",
            "no-leaks",
            "node_churn",
            "invariant",
        ] {
            assert_eq!(
                check_property_name(reserved),
                Err(PropertyNameError::Reserved(reserved.to_string()))
            );
        }
    }
}
