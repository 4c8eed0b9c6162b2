//! The corrected semaphore: one ticket per acquisition, all leases at once.
//!
//! A client asking for `count` leases creates `<path>/_c_<id>-<count>-lease-`
//! (a [`Ticket`]: id-checked create, container parents, Lost on expiry). Its
//! node holds when the counts of its node and of every node created before
//! it add up to at most `max_leases`; otherwise it waits for any change of
//! the children (child watch) and counts again.
//!
//! Why at most `max_leases` leases are ever held: a node that holds stays
//! holding until deleted, and when the newest holder counted, every older
//! holder already existed (it was created earlier and has not gone since),
//! so the holders' counts are part of a sum that was at most `max_leases`.
//! All or nothing: no client sits on part of its leases while waiting for
//! the rest, so two clients cannot wait for each other. FIFO: a large
//! request at the head makes later small ones wait.

use super::{SemaphoreCall, SemaphoreError, SemaphoreOutcome};
use crate::curator_lock::ticket::{self, Decision, Rule, Ticket, TicketError, TicketOutcome};
use crate::recipe::{Input, Outbox, Recipe};
use crate::sequence::{creates_after, prefixed_sequence};
use crate::zk::Path;

/// The marker before a lease node's sequence.
const LEASE_NAME: &str = "lease-";

/// A lease node `_c_<id>-<count>-lease-<sequence>`: (count, sequence).
pub fn parse_lease_node(name: &str) -> Option<(u32, i32)> {
    let rest = name.strip_prefix("_c_")?;
    let (_id, rest) = rest.split_once('-')?;
    let (count, rest) = rest.split_once('-')?;
    Some((count.parse().ok()?, prefixed_sequence(rest, LEASE_NAME)?))
}

/// Holds when the leases asked by our node and every older node fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LeaseRule {
    pub max_leases: u32,
}

impl Rule for LeaseRule {
    const WATCH_CHILDREN: bool = true;

    fn decide(&self, own: &str, children: &[String]) -> Decision {
        let Some((_, own)) = parse_lease_node(own) else {
            return Decision::WaitForChildren;
        };
        let asked: u64 = children
            .iter()
            .filter_map(|child| parse_lease_node(child))
            .filter(|(_, sequence)| creates_after(own, *sequence) <= 0)
            .map(|(count, _)| u64::from(count))
            .sum();
        if asked <= u64::from(self.max_leases) {
            Decision::Holds
        } else {
            Decision::WaitForChildren
        }
    }
}

/// A client of the corrected semaphore.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FixedSemaphore {
    ticket: Ticket<LeaseRule>,
    max_leases: u32,
    /// The leases asked for by the current acquisition (or held).
    count: u32,
}

impl FixedSemaphore {
    /// A client of the semaphore at `path` (created as needed) allowing
    /// `max_leases` leases, with a unique id.
    pub fn new(path: Path, max_leases: u32, unique_id: u64) -> FixedSemaphore {
        FixedSemaphore {
            ticket: Ticket::new(path, unique_id, LeaseRule { max_leases }),
            max_leases,
            count: 0,
        }
    }

    /// The leases this client believes it holds.
    pub fn leases_held(&self) -> u32 {
        if self.ticket.is_holding() {
            self.count
        } else {
            0
        }
    }

    fn on_call(
        &mut self,
        call: SemaphoreCall,
        inner: &mut Outbox<TicketOutcome>,
        out: &mut Outbox<SemaphoreOutcome>,
    ) {
        match call {
            SemaphoreCall::Acquire { count, .. } if count == 0 || count > self.max_leases => {
                out.emit(SemaphoreOutcome::Failed(SemaphoreError::BadCount(count)))
            }
            SemaphoreCall::Acquire { count, timeout_ms } if self.ticket.is_idle() => {
                self.count = count;
                self.ticket
                    .acquire(format!("{count}-{LEASE_NAME}"), timeout_ms, inner);
            }
            SemaphoreCall::Return if self.ticket.is_holding() => self.ticket.release(inner),
            SemaphoreCall::Return if self.ticket.is_idle() => {
                out.emit(SemaphoreOutcome::Failed(SemaphoreError::NothingToReturn))
            }
            call => out.emit(SemaphoreOutcome::Failed(SemaphoreError::CallOutOfTurn(
                call,
            ))),
        }
    }

    fn translate(&self, outcome: TicketOutcome) -> SemaphoreOutcome {
        match outcome {
            TicketOutcome::Acquired { token } => SemaphoreOutcome::Acquired {
                leases: self.count,
                token,
            },
            TicketOutcome::TimedOut => SemaphoreOutcome::TimedOut,
            TicketOutcome::Released => SemaphoreOutcome::Returned,
            TicketOutcome::Lost => SemaphoreOutcome::Lost,
            TicketOutcome::Failed(error) => SemaphoreOutcome::Failed(error.into()),
        }
    }
}

impl From<TicketError> for SemaphoreError {
    fn from(error: TicketError) -> SemaphoreError {
        match error {
            TicketError::Zk(error) => SemaphoreError::Zk(error),
            TicketError::NodeNotOwned => SemaphoreError::NodeNotOwned,
            TicketError::SequenceExhausted => SemaphoreError::SequenceExhausted,
        }
    }
}

impl Recipe for FixedSemaphore {
    type Call = SemaphoreCall;
    type Outcome = SemaphoreOutcome;

    fn handle(&mut self, input: Input<SemaphoreCall>, out: &mut Outbox<SemaphoreOutcome>) {
        let mut inner = Outbox::new();
        if let Some(call) = self.ticket.on_input(input, &mut inner) {
            self.on_call(call, &mut inner, out);
        }
        for outcome in ticket::forward(inner, out) {
            out.emit(self.translate(outcome));
        }
    }
}

impl crate::rename::Rename for FixedSemaphore {
    fn rename(&mut self, r: &mut crate::rename::Renaming) {
        self.ticket.rename(r);
    }
}

impl crate::rename::RenameRecipe for FixedSemaphore {
    /// `_c_<unique id>-<count>-lease-<sequence>`.
    fn rename_node(r: &mut crate::rename::Renaming, parent: &str, name: &str) -> String {
        crate::curator_lock::protection::rename_protected_node(r, parent, name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_lease_nodes() {
        assert_eq!(parse_lease_node("_c_7-2-lease-0000000004"), Some((2, 4)));
        assert_eq!(
            parse_lease_node("_c_7-2-lease--2147483648"),
            Some((2, i32::MIN))
        );
        assert_eq!(parse_lease_node("_c_7-lease-0000000004"), None);
        assert_eq!(parse_lease_node("locks"), None);
    }

    #[test]
    fn holds_while_older_requests_and_ours_fit() {
        let rule = LeaseRule { max_leases: 3 };
        let children = names(&[
            "_c_1-2-lease-0000000000",
            "_c_2-1-lease-0000000001",
            "_c_3-1-lease-0000000002",
        ]);
        assert_eq!(
            rule.decide("_c_1-2-lease-0000000000", &children),
            Decision::Holds
        );
        assert_eq!(
            rule.decide("_c_2-1-lease-0000000001", &children),
            Decision::Holds
        );
        assert_eq!(
            rule.decide("_c_3-1-lease-0000000002", &children),
            Decision::WaitForChildren
        );
    }
}
