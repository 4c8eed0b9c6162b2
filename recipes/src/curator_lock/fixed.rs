//! The corrected Curator-style re-entrant lock: a [`Ticket`] named
//! `_c_<id>-lock-` whose rule is "no lock node before mine in creation
//! order", waiting with a getData watch on the node just before ours.
//!
//! What the ticket fixes (see [`super::ticket`]): container parents instead
//! of persistent ones (bug 7), creation order with wrap-around arithmetic
//! instead of Curator's string order, a node numbered `2147483647` given up
//! (the counter sticks there), the creation zxid as fencing token (bug 8's
//! fence), `Lost` on session expiry, a recovered node checked for its owner.
//! Re-entrance is counted here, per instance: a nested acquire answers at
//! once with the same token, and only the release that brings the count back
//! to 0 deletes the node.

use super::ticket::{self, Decision, Rule, Ticket, TicketError, TicketOutcome};
use super::{LockCall, LockError, LockOutcome, LOCK_NAME};
use crate::recipe::{Input, Outbox, Recipe};
use crate::sequence::{last_before, sequence_after};
use crate::zk::Path;

/// A lock node holds when no lock node was created before it; it waits for
/// the one created just before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ExclusiveRule;

impl Rule for ExclusiveRule {
    const WATCH_CHILDREN: bool = false;

    fn decide(&self, own: &str, children: &[String]) -> Decision {
        let Some(own) = sequence_after(own, LOCK_NAME) else {
            return Decision::Holds;
        };
        let others = children
            .iter()
            .filter_map(|child| Some((child.as_str(), sequence_after(child, LOCK_NAME)?)));
        match last_before(own, others) {
            None => Decision::Holds,
            Some(predecessor) => Decision::WaitFor(predecessor.to_string()),
        }
    }
}

/// A client of the corrected lock.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FixedCuratorLock {
    ticket: Ticket<ExclusiveRule>,
    /// Acquires beyond the first that are not released yet.
    reentries: u32,
}

impl FixedCuratorLock {
    /// A client of the lock at `lock_path` (created as needed) with a unique id.
    pub fn new(lock_path: Path, unique_id: u64) -> FixedCuratorLock {
        FixedCuratorLock {
            ticket: Ticket::new(lock_path, unique_id, ExclusiveRule),
            reentries: 0,
        }
    }

    /// How many acquires are not released yet (0 when not holding).
    pub fn hold_count(&self) -> u32 {
        if self.ticket.is_holding() {
            self.reentries + 1
        } else {
            0
        }
    }

    fn on_call(
        &mut self,
        call: LockCall,
        inner: &mut Outbox<TicketOutcome>,
        out: &mut Outbox<LockOutcome>,
    ) {
        let holding = self.ticket.is_holding();
        match call {
            LockCall::Acquire { .. } if holding => {
                self.reentries = self.reentries.saturating_add(1);
                if let Some(token) = self.ticket.token() {
                    out.emit(LockOutcome::Acquired { token });
                }
            }
            LockCall::Acquire { timeout_ms } if self.ticket.is_idle() => {
                self.ticket
                    .acquire(LOCK_NAME.to_string(), timeout_ms, inner)
            }
            LockCall::Release if holding && self.reentries > 0 => {
                self.reentries -= 1;
                out.emit(LockOutcome::Released);
            }
            LockCall::Release if holding => self.ticket.release(inner),
            LockCall::Release if self.ticket.is_idle() => {
                out.emit(LockOutcome::Failed(LockError::NotHeld))
            }
            call => out.emit(LockOutcome::Failed(LockError::CallOutOfTurn(call))),
        }
    }

    fn translate(&mut self, outcome: TicketOutcome) -> LockOutcome {
        match outcome {
            TicketOutcome::Acquired { token } => LockOutcome::Acquired { token },
            TicketOutcome::TimedOut => LockOutcome::TimedOut,
            TicketOutcome::Released => LockOutcome::Released,
            TicketOutcome::Lost => {
                self.reentries = 0;
                LockOutcome::Lost
            }
            TicketOutcome::Failed(error) => LockOutcome::Failed(error.into()),
        }
    }
}

impl From<TicketError> for LockError {
    fn from(error: TicketError) -> LockError {
        match error {
            TicketError::Zk(error) => LockError::Zk(error),
            TicketError::NodeNotOwned => LockError::NodeNotOwned,
            TicketError::SequenceExhausted => LockError::SequenceExhausted,
        }
    }
}

impl Recipe for FixedCuratorLock {
    type Call = LockCall;
    type Outcome = LockOutcome;

    fn handle(&mut self, input: Input<LockCall>, out: &mut Outbox<LockOutcome>) {
        let mut inner = Outbox::new();
        if let Some(call) = self.ticket.on_input(input, &mut inner) {
            self.on_call(call, &mut inner, out);
        }
        for outcome in ticket::forward(inner, out) {
            let outcome = self.translate(outcome);
            out.emit(outcome);
        }
    }
}

impl crate::rename::Rename for FixedCuratorLock {
    fn rename(&mut self, r: &mut crate::rename::Renaming) {
        self.ticket.rename(r);
    }
}

impl crate::rename::RenameRecipe for FixedCuratorLock {
    /// `_c_<unique id>-lock-<sequence>`.
    fn rename_node(r: &mut crate::rename::Renaming, parent: &str, name: &str) -> String {
        super::protection::rename_protected_node(r, parent, name)
    }
}
