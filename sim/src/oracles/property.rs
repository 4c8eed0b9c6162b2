//! The names of the properties a scenario can ask for.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A property the oracles can check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Property {
    /// Never two holders at once (shared holders and semaphore leases counted).
    MutualExclusion,
    /// Mutual exclusion as a resource that rejects stale fencing tokens sees
    /// it: tokens grow with every acquisition, no two holders share a token.
    FencedMutualExclusion,
    /// First come, first served; its meaning is per recipe kind. A lock or
    /// an election: the hold goes to the contender with the lowest sequence
    /// number. A queue: each consumer takes one producer's items in the
    /// order that producer offered them.
    Fifo,
    /// At most `herd_bound` watch notifications per release.
    Herd,
    /// After the faults heal, every workload finishes within the bound.
    Liveness,
    /// No node the recipe created is left once the workload is over.
    NoLeaks,
    /// Every acknowledged queue item is taken exactly once, none twice, none
    /// that nobody offered (in any order: order is the queue's `fifo`).
    ExactlyOnce,
    /// Nobody passes a barrier early.
    Barrier,
    /// Never two leaders at once (mutual exclusion for elections).
    OneLeader,
    /// No client creates nodes beyond what its calls and its faults explain:
    /// each acquisition attempt may create one node, and so may each create
    /// whose fate a connection loss left in doubt and each session expiry
    /// (its ephemerals are gone); more than [`NODE_CHURN_MARGIN`] creates
    /// beyond that allowance is churn (a recipe that deletes and re-creates
    /// its node on every reconnect, or whenever it does not see itself first).
    ///
    /// [`NODE_CHURN_MARGIN`]: super::NODE_CHURN_MARGIN
    NodeChurn,
    /// A recipe's own invariant, named by the recipe or its application
    /// ([`zk_recipes::Observation::Violated`], `ctx.violation`): always
    /// judged, never selected. A violation carries the user's name
    /// ([`super::Violation::invariant`]) and is printed and bucketed under
    /// it; `invariant` itself names only a report whose name was refused.
    Invariant,
}

impl Property {
    pub const ALL: [Property; 11] = [
        Property::MutualExclusion,
        Property::FencedMutualExclusion,
        Property::Fifo,
        Property::Herd,
        Property::Liveness,
        Property::NoLeaks,
        Property::ExactlyOnce,
        Property::Barrier,
        Property::OneLeader,
        Property::NodeChurn,
        Property::Invariant,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Property::MutualExclusion => "mutual_exclusion",
            Property::FencedMutualExclusion => "fenced_mutual_exclusion",
            Property::Fifo => "fifo",
            Property::Herd => "herd",
            Property::Liveness => "liveness",
            Property::NoLeaks => "no_leaks",
            Property::ExactlyOnce => "exactly_once",
            Property::Barrier => "barrier",
            Property::OneLeader => "one_leader",
            Property::NodeChurn => "node_churn",
            Property::Invariant => "invariant",
        }
    }
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A property name that is not one of [`Property::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown property `{0}` (expected one of: {list})", list = Property::ALL.map(Property::name).join(", "))]
pub struct PropertyError(pub String);

impl FromStr for Property {
    type Err = PropertyError;
    fn from_str(s: &str) -> Result<Property, PropertyError> {
        Property::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| PropertyError(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_lists_every_property_in_declaration_order() {
        // `Oracles` indexes its switches by `property as usize`.
        for (index, property) in Property::ALL.into_iter().enumerate() {
            assert_eq!(property as usize, index);
            assert_eq!(property.name().parse::<Property>(), Ok(property));
        }
    }

    #[test]
    fn no_recipe_may_name_its_invariant_as_a_built_in_property() {
        for property in Property::ALL {
            assert!(
                zk_recipes::RESERVED_PROPERTY_NAMES.contains(&property.name()),
                "{property}"
            );
        }
    }
}
