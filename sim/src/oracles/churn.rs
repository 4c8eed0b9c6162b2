//! Node churn: a client that creates nodes beyond what its calls and the
//! run's faults explain. Each acquisition attempt may create one node; so
//! may each create whose fate a connection loss left in doubt (the recipe
//! cannot know whether it was applied, and may create again) and each
//! expiry of the client's session (its ephemerals are gone). A client whose
//! ephemeral creates exceed that allowance by more than
//! [`NODE_CHURN_MARGIN`] churns: it deletes and re-creates its node for
//! reasons no fault forced, e.g. on every reconnect, or whenever it does not
//! see itself first, which moves it to the back of the line each time.
//!
//! The counts of creates come from the session layer
//! ([`crate::client::CreateTally`]), the calls and expiries from what the
//! world shows the oracles; judged at the end of a run.

use super::{CallObservation, Property};
use super::{ClientIndex, Seen, SimNanos, Violation};
use crate::client::CreateTally;

/// Creates a client may make beyond its allowance before it churns.
pub const NODE_CHURN_MARGIN: u64 = 2;

/// Per client, what explains a create: its acquisition attempts and the
/// expiries of its sessions.
pub(super) struct ChurnCheck {
    attempts: Vec<u64>,
    expiries: Vec<u64>,
}

impl ChurnCheck {
    pub(super) fn new(clients: usize) -> ChurnCheck {
        ChurnCheck {
            attempts: vec![0; clients],
            expiries: vec![0; clients],
        }
    }

    pub(super) fn seen(&mut self, client: ClientIndex, seen: &Seen) {
        match seen {
            Seen::Call(CallObservation::Acquire) => self.attempts[client] += 1,
            Seen::SessionEnded => self.expiries[client] += 1,
            _ => {}
        }
    }

    /// The creates each client's session layer counted, against the
    /// allowance; the first client (by index) beyond it, if any.
    pub(super) fn judge(&self, at: SimNanos, tallies: &[CreateTally]) -> Option<Violation> {
        let churned: Vec<String> = tallies
            .iter()
            .enumerate()
            .filter_map(|(client, tally)| self.excess(client, tally))
            .collect();
        (!churned.is_empty()).then(|| Violation {
            property: Property::NodeChurn,
            at_ns: at,
            message: format!(
                "{} client(s) created more nodes than their acquisition attempts, in-doubt creates and expiries explain (margin {NODE_CHURN_MARGIN})",
                churned.len()
            ),
            events: churned,
            diagnosis: None,
            invariant: None,
        })
    }

    fn excess(&self, client: ClientIndex, tally: &CreateTally) -> Option<String> {
        let attempts = self.attempts.get(client).copied().unwrap_or(0);
        let expiries = self.expiries.get(client).copied().unwrap_or(0);
        let allowance = attempts + tally.in_doubt + expiries;
        (tally.created > allowance + NODE_CHURN_MARGIN).then(|| {
            format!(
                "c{client}: created {} node(s); allowance {allowance} = {attempts} attempt(s) + {} in-doubt create(s) + {expiries} expiry(ies)",
                tally.created, tally.in_doubt
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(created: u64, in_doubt: u64) -> CreateTally {
        CreateTally { created, in_doubt }
    }

    #[test]
    fn creates_within_the_allowance_and_margin_hold() {
        let mut check = ChurnCheck::new(1);
        check.seen(0, &Seen::Call(CallObservation::Acquire));
        check.seen(0, &Seen::SessionEnded);
        // 1 attempt + 1 in doubt + 1 expiry + the margin.
        assert_eq!(check.judge(7, &[tally(3 + NODE_CHURN_MARGIN, 1)]), None);
    }

    #[test]
    fn one_create_beyond_the_margin_churns() {
        let mut check = ChurnCheck::new(2);
        check.seen(1, &Seen::Call(CallObservation::Acquire));
        let violation = check
            .judge(7, &[tally(0, 0), tally(2 + NODE_CHURN_MARGIN, 0)])
            .expect("churn");
        assert_eq!(violation.property, Property::NodeChurn);
        assert_eq!(violation.events.len(), 1);
        assert!(
            violation.events[0].starts_with("c1: created 4"),
            "{violation}"
        );
    }
}
