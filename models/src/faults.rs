//! The fault budget of a model: how many faults of each kind the checker may
//! inject along one path, parsed from `KIND=BUDGET,...` on the command line.
//!
//! Kinds (names as on the command line):
//! - `connection-loss`: the connection drops. Three shapes share this budget:
//!   the client's next request is applied and its reply lost, the next
//!   request is lost before the server sees it, or the connection drops with
//!   nothing unsent (replies and events already queued are lost). Requests in
//!   flight fail with ConnectionLoss; the client reconnects later (a heal step,
//!   not budgeted).
//! - `expiry`: the server expires a client's session. The client learns it
//!   late (a heal step): until then it keeps acting on what it believes, which
//!   is the process pause of known bug 8.
//! - `client-expiry`: a disconnected client gives up on its session, as
//!   Curator 3.0+ does once it spent the session timeout disconnected (the
//!   untimed model does not measure it: any disconnected client whose
//!   session the server still has may): it sees Expired and opens a new
//!   session, while the server keeps the old one and its ephemerals. The
//!   server expires the abandoned session later (a heal step, not
//!   budgeted), deleting its ephemerals and firing their watches. It needs
//!   a `connection-loss` or `leader-loss` budget too (a client gives up only
//!   while disconnected): alone it is refused, not silently never spent.
//! - `leader-loss`: every connected client is disconnected at once (the
//!   followers close every connection when the leader is lost; with one
//!   server, a standalone server restarting, whose sessions survive in its
//!   log, does the same to its clients). Requests in flight fail with
//!   ConnectionLoss, queued replies and events are lost; the clients
//!   reconnect through the usual heal steps.
//! - `reorder`: a watch event overtakes replies queued before it (beyond
//!   ZooKeeper's guarantees; opt-in).
//! - `spurious`: a watch fires although its node did not change (beyond
//!   ZooKeeper's guarantees; opt-in).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Remaining faults per kind.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub struct FaultBudget {
    pub connection_loss: u8,
    pub expiry: u8,
    pub reorder: u8,
    pub spurious: u8,
    #[serde(default)]
    pub client_expiry: u8,
    #[serde(default)]
    pub leader_loss: u8,
}

/// One kind of fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum FaultKind {
    ConnectionLoss,
    Expiry,
    Reorder,
    Spurious,
    ClientExpiry,
    LeaderLoss,
}

impl FaultKind {
    pub const ALL: [FaultKind; 6] = [
        FaultKind::ConnectionLoss,
        FaultKind::Expiry,
        FaultKind::Reorder,
        FaultKind::Spurious,
        FaultKind::ClientExpiry,
        FaultKind::LeaderLoss,
    ];

    /// The name used on the command line and in schedules.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::ConnectionLoss => "connection-loss",
            FaultKind::Expiry => "expiry",
            FaultKind::Reorder => "reorder",
            FaultKind::Spurious => "spurious",
            FaultKind::ClientExpiry => "client-expiry",
            FaultKind::LeaderLoss => "leader-loss",
        }
    }
}

/// Why a `--faults` value was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FaultSpecError {
    #[error("fault entry {0:?} is not KIND=BUDGET")]
    Malformed(String),
    #[error("unknown fault kind {0:?} (known: connection-loss, expiry, reorder, spurious, client-expiry, leader-loss)")]
    UnknownKind(String),
    #[error("budget {value:?} of fault {kind} is not a number in 0..=255")]
    BadBudget { kind: String, value: String },
    #[error("fault {0} is given twice")]
    Duplicate(String),
    /// `client-expiry` without a fault that disconnects a client: a client
    /// gives up on its session only while disconnected, so the budget
    /// would never be spent and the check would say nothing about it.
    #[error("client-expiry={0} needs a disconnect to act on: a client gives up on its session only after it lost its connection, and no other fault given disconnects one; add connection-loss=N or leader-loss=N")]
    ClientExpiryWithoutDisconnect(u8),
}

impl FaultBudget {
    /// No faults at all.
    pub const NONE: FaultBudget = FaultBudget {
        connection_loss: 0,
        expiry: 0,
        reorder: 0,
        spurious: 0,
        client_expiry: 0,
        leader_loss: 0,
    };

    pub fn get(&self, kind: FaultKind) -> u8 {
        match kind {
            FaultKind::ConnectionLoss => self.connection_loss,
            FaultKind::Expiry => self.expiry,
            FaultKind::Reorder => self.reorder,
            FaultKind::Spurious => self.spurious,
            FaultKind::ClientExpiry => self.client_expiry,
            FaultKind::LeaderLoss => self.leader_loss,
        }
    }

    fn slot(&mut self, kind: FaultKind) -> &mut u8 {
        match kind {
            FaultKind::ConnectionLoss => &mut self.connection_loss,
            FaultKind::Expiry => &mut self.expiry,
            FaultKind::Reorder => &mut self.reorder,
            FaultKind::Spurious => &mut self.spurious,
            FaultKind::ClientExpiry => &mut self.client_expiry,
            FaultKind::LeaderLoss => &mut self.leader_loss,
        }
    }

    /// Sets the budget of one kind (builder style).
    pub fn with(mut self, kind: FaultKind, budget: u8) -> FaultBudget {
        *self.slot(kind) = budget;
        self
    }

    pub fn allows(&self, kind: FaultKind) -> bool {
        self.get(kind) > 0
    }

    /// Uses one fault of `kind`; the caller checked [`FaultBudget::allows`].
    pub fn spend(&mut self, kind: FaultKind) {
        let slot = self.slot(kind);
        assert!(*slot > 0, "fault {} spent beyond its budget", kind.name());
        *slot -= 1;
    }
}

impl FromStr for FaultBudget {
    type Err = FaultSpecError;

    /// Parses `connection-loss=1,expiry=1`; an empty string or `none` is no faults.
    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let mut budget = FaultBudget::NONE;
        let mut seen = Vec::new();
        let spec = spec.trim();
        if spec.is_empty() || spec == "none" {
            return Ok(budget);
        }
        for entry in spec.split(',').map(str::trim) {
            let (name, value) = entry
                .split_once('=')
                .ok_or_else(|| FaultSpecError::Malformed(entry.to_string()))?;
            let (name, value) = (name.trim(), value.trim());
            let kind = FaultKind::ALL
                .into_iter()
                .find(|kind| kind.name() == name)
                .ok_or_else(|| FaultSpecError::UnknownKind(name.to_string()))?;
            if seen.contains(&kind) {
                return Err(FaultSpecError::Duplicate(name.to_string()));
            }
            seen.push(kind);
            let count = value.parse::<u8>().map_err(|_| FaultSpecError::BadBudget {
                kind: name.to_string(),
                value: value.to_string(),
            })?;
            *budget.slot(kind) = count;
        }
        if budget.client_expiry > 0 && budget.connection_loss == 0 && budget.leader_loss == 0 {
            return Err(FaultSpecError::ClientExpiryWithoutDisconnect(
                budget.client_expiry,
            ));
        }
        Ok(budget)
    }
}

impl fmt::Display for FaultBudget {
    /// The same `KIND=BUDGET,...` form the parser reads (zero budgets omitted).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let entries: Vec<String> = FaultKind::ALL
            .into_iter()
            .filter(|kind| self.get(*kind) > 0)
            .map(|kind| format!("{}={}", kind.name(), self.get(kind)))
            .collect();
        if entries.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&entries.join(","))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_budgets() {
        let budget: FaultBudget = "connection-loss=1, expiry=2".parse().unwrap();
        assert_eq!(
            budget,
            FaultBudget::NONE
                .with(FaultKind::ConnectionLoss, 1)
                .with(FaultKind::Expiry, 2)
        );
        assert_eq!(budget.to_string(), "connection-loss=1,expiry=2");
        assert_eq!("none".parse::<FaultBudget>().unwrap(), FaultBudget::NONE);
        assert_eq!(FaultBudget::NONE.to_string(), "none");
    }

    #[test]
    fn parses_the_session_layer_kinds() {
        let budget: FaultBudget = "client-expiry=1,leader-loss=2".parse().unwrap();
        assert_eq!(budget.get(FaultKind::ClientExpiry), 1);
        assert_eq!(budget.get(FaultKind::LeaderLoss), 2);
        assert_eq!(budget.to_string(), "client-expiry=1,leader-loss=2");
    }

    #[test]
    fn client_expiry_needs_a_fault_that_disconnects() {
        for alone in ["client-expiry=1", "client-expiry=2,expiry=1,spurious=1"] {
            let error = alone.parse::<FaultBudget>().unwrap_err();
            assert!(
                matches!(error, FaultSpecError::ClientExpiryWithoutDisconnect(_)),
                "{alone}: {error:?}"
            );
            assert!(error.to_string().contains("after it lost its connection"));
        }
        for with in [
            "client-expiry=1,connection-loss=1",
            "leader-loss=1,client-expiry=1",
        ] {
            assert!(with.parse::<FaultBudget>().is_ok(), "{with}");
        }
    }

    #[test]
    fn rejects_bad_specs() {
        assert!(matches!(
            "expiry".parse::<FaultBudget>(),
            Err(FaultSpecError::Malformed(_))
        ));
        assert!(matches!(
            "gc=1".parse::<FaultBudget>(),
            Err(FaultSpecError::UnknownKind(_))
        ));
        assert!(matches!(
            "expiry=-1".parse::<FaultBudget>(),
            Err(FaultSpecError::BadBudget { .. })
        ));
        assert!(matches!(
            "expiry=1,expiry=2".parse::<FaultBudget>(),
            Err(FaultSpecError::Duplicate(_))
        ));
    }

    #[test]
    fn spending_counts_down() {
        let mut budget = FaultBudget::NONE.with(FaultKind::Reorder, 1);
        assert!(budget.allows(FaultKind::Reorder));
        budget.spend(FaultKind::Reorder);
        assert!(!budget.allows(FaultKind::Reorder));
    }
}
