//! The corrected shared lock: a [`Ticket`] named `_c_<id>-read-` or
//! `_c_<id>-write-` (the documented GUID fix: after a connection loss, look
//! for our id among the children before creating again) whose rule is the
//! documented one, in creation order: a reader waits for the last writer
//! created before it, a writer for the node created just before it.
//! Container parents, the creation zxid as fencing token, `Lost` on session
//! expiry, a node numbered `2147483647` given up (see [`crate::curator_lock::ticket`]).

use super::{LockMode, SharedLockCall, SharedLockError, SharedLockOutcome};
use crate::curator_lock::ticket::{self, Decision, Rule, Ticket, TicketError, TicketOutcome};
use crate::recipe::{Input, Outbox, Recipe};
use crate::sequence::{last_before, prefixed_sequence};
use crate::zk::{Path, ZkError};

/// A node `_c_<id>-read-<sequence>` or `_c_<id>-write-<sequence>`.
pub fn parse_node(name: &str) -> Option<(LockMode, i32)> {
    let (_id, rest) = name.strip_prefix("_c_")?.split_once('-')?;
    [LockMode::Read, LockMode::Write]
        .into_iter()
        .find_map(|mode| Some((mode, prefixed_sequence(rest, mode.marker())?)))
}

/// The documented rule, in creation order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReadWriteRule;

impl Rule for ReadWriteRule {
    const WATCH_CHILDREN: bool = false;

    fn decide(&self, own: &str, children: &[String]) -> Decision {
        let Some((mode, own)) = parse_node(own) else {
            return Decision::Holds;
        };
        let blockers = children.iter().filter_map(|child| {
            let (child_mode, sequence) = parse_node(child)?;
            let blocks = mode == LockMode::Write || child_mode == LockMode::Write;
            blocks.then_some((child.as_str(), sequence))
        });
        match last_before(own, blockers) {
            None => Decision::Holds,
            Some(blocker) => Decision::WaitFor(blocker.to_string()),
        }
    }
}

/// A client of the corrected shared lock.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FixedSharedLock {
    ticket: Ticket<ReadWriteRule>,
    /// The mode of the current acquisition (or hold).
    mode: LockMode,
}

impl FixedSharedLock {
    /// A client of the lock at `lock_path` (created as needed) with a unique id.
    pub fn new(lock_path: Path, unique_id: u64) -> FixedSharedLock {
        FixedSharedLock {
            ticket: Ticket::new(lock_path, unique_id, ReadWriteRule),
            mode: LockMode::Read,
        }
    }

    /// The mode held, if any.
    pub fn holding(&self) -> Option<LockMode> {
        self.ticket.is_holding().then_some(self.mode)
    }

    fn on_call(
        &mut self,
        call: SharedLockCall,
        inner: &mut Outbox<TicketOutcome>,
        out: &mut Outbox<SharedLockOutcome>,
    ) {
        match call {
            SharedLockCall::Acquire { mode } if self.ticket.is_idle() => {
                self.mode = mode;
                self.ticket.acquire(mode.marker().to_string(), None, inner);
            }
            SharedLockCall::Release if self.ticket.is_holding() => self.ticket.release(inner),
            SharedLockCall::Release if self.ticket.is_idle() => {
                out.emit(SharedLockOutcome::Failed(SharedLockError::NotHeld))
            }
            call => out.emit(SharedLockOutcome::Failed(SharedLockError::CallOutOfTurn(
                call,
            ))),
        }
    }

    fn translate(&self, outcome: TicketOutcome) -> SharedLockOutcome {
        match outcome {
            TicketOutcome::Acquired { token } => SharedLockOutcome::Acquired {
                mode: self.mode,
                token,
            },
            TicketOutcome::Released => SharedLockOutcome::Released,
            TicketOutcome::Lost => SharedLockOutcome::Lost,
            // This lock sets no deadline, so the ticket never times out.
            TicketOutcome::TimedOut => {
                SharedLockOutcome::Failed(SharedLockError::Zk(ZkError::OperationTimeout))
            }
            TicketOutcome::Failed(error) => SharedLockOutcome::Failed(error.into()),
        }
    }
}

impl From<TicketError> for SharedLockError {
    fn from(error: TicketError) -> SharedLockError {
        match error {
            TicketError::Zk(error) => SharedLockError::Zk(error),
            TicketError::NodeNotOwned => SharedLockError::NodeNotOwned,
            TicketError::SequenceExhausted => SharedLockError::SequenceExhausted,
        }
    }
}

impl Recipe for FixedSharedLock {
    type Call = SharedLockCall;
    type Outcome = SharedLockOutcome;

    fn handle(&mut self, input: Input<SharedLockCall>, out: &mut Outbox<SharedLockOutcome>) {
        let mut inner = Outbox::new();
        if let Some(call) = self.ticket.on_input(input, &mut inner) {
            self.on_call(call, &mut inner, out);
        }
        for outcome in ticket::forward(inner, out) {
            out.emit(self.translate(outcome));
        }
    }
}

impl crate::rename::Rename for FixedSharedLock {
    fn rename(&mut self, r: &mut crate::rename::Renaming) {
        self.ticket.rename(r);
    }
}

impl crate::rename::RenameRecipe for FixedSharedLock {
    /// `_c_<unique id>-read-<sequence>` or `_c_<unique id>-write-<sequence>`.
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
    fn parses_read_and_write_nodes() {
        assert_eq!(
            parse_node("_c_3-read-0000000004"),
            Some((LockMode::Read, 4))
        );
        assert_eq!(
            parse_node("_c_3-write-0000000005"),
            Some((LockMode::Write, 5))
        );
        assert_eq!(parse_node("read-0000000004"), None);
        assert_eq!(parse_node("_c_3-lock-0000000004"), None);
    }

    #[test]
    fn readers_wait_for_the_last_older_writer_writers_for_their_predecessor() {
        let children = names(&[
            "_c_1-read-0000000000",
            "_c_2-write-0000000001",
            "_c_3-read-0000000002",
            "_c_4-read-0000000003",
            "_c_5-write-0000000004",
        ]);
        let decide = |own: &str| ReadWriteRule.decide(own, &children);
        assert_eq!(decide("_c_1-read-0000000000"), Decision::Holds);
        assert_eq!(
            decide("_c_2-write-0000000001"),
            Decision::WaitFor("_c_1-read-0000000000".into())
        );
        assert_eq!(
            decide("_c_3-read-0000000002"),
            Decision::WaitFor("_c_2-write-0000000001".into())
        );
        assert_eq!(
            decide("_c_4-read-0000000003"),
            Decision::WaitFor("_c_2-write-0000000001".into())
        );
        assert_eq!(
            decide("_c_5-write-0000000004"),
            Decision::WaitFor("_c_4-read-0000000003".into())
        );
    }
}
