//! Barrier safety: nobody passes early.
//!
//! A client's k-th `Entered` needs `size` members to have called enter at
//! least k times; its k-th `Left` needs `size` members to have called leave
//! at least k times (a double barrier lets nobody out before everyone is
//! done). A member whose session the server ended is out of its round (it
//! crashed, as far as the others can tell). Stranded members are a
//! liveness failure, judged by the world.

use super::{fmt_time, CallObservation, ClientIndex, Property, Seen, SimNanos, Violation};
use zk_recipes::Observation;

pub struct BarrierCheck {
    size: usize,
    enter_calls: Vec<usize>,
    leave_calls: Vec<usize>,
    entered: Vec<usize>,
    left: Vec<usize>,
}

impl BarrierCheck {
    pub fn new(clients: usize, size: usize) -> BarrierCheck {
        BarrierCheck {
            size: if size == 0 { clients } else { size },
            enter_calls: vec![0; clients],
            leave_calls: vec![0; clients],
            entered: vec![0; clients],
            left: vec![0; clients],
        }
    }

    pub fn seen(&mut self, at: SimNanos, client: ClientIndex, seen: &Seen) -> Option<Violation> {
        match seen {
            Seen::Call(CallObservation::Enter) => {
                self.enter_calls[client] += 1;
                None
            }
            Seen::Call(CallObservation::Leave) => {
                self.leave_calls[client] += 1;
                None
            }
            Seen::SessionEnded => {
                self.leave_calls[client] = self.leave_calls[client].max(self.enter_calls[client]);
                None
            }
            Seen::Outcome(Observation::Entered) => {
                self.entered[client] += 1;
                let round = self.entered[client];
                let arrived = self
                    .enter_calls
                    .iter()
                    .filter(|calls| **calls >= round)
                    .count();
                self.early(at, client, "entered", round, arrived)
            }
            Seen::Outcome(Observation::Left) => {
                self.left[client] += 1;
                let round = self.left[client];
                let leaving = self
                    .leave_calls
                    .iter()
                    .filter(|calls| **calls >= round)
                    .count();
                self.early(at, client, "left", round, leaving)
            }
            _ => None,
        }
    }

    fn early(
        &self,
        at: SimNanos,
        client: ClientIndex,
        what: &str,
        round: usize,
        ready: usize,
    ) -> Option<Violation> {
        if ready >= self.size {
            return None;
        }
        Some(Violation {
            property: Property::Barrier,
            at_ns: at,
            message: format!(
                "c{client} {what} round {round} when only {ready} of {} members had called {}",
                self.size,
                if what == "entered" { "enter" } else { "leave" }
            ),
            events: vec![format!("{} c{client}: {what} round {round}", fmt_time(at))],
            diagnosis: None,
            invariant: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entering_before_everyone_arrived_is_caught() {
        let mut check = BarrierCheck::new(3, 3);
        check.seen(1, 0, &Seen::Call(CallObservation::Enter));
        check.seen(2, 1, &Seen::Call(CallObservation::Enter));
        assert!(check
            .seen(3, 0, &Seen::Outcome(Observation::Entered))
            .is_some());
    }

    #[test]
    fn entering_after_everyone_arrived_holds() {
        let mut check = BarrierCheck::new(2, 2);
        check.seen(1, 0, &Seen::Call(CallObservation::Enter));
        check.seen(2, 1, &Seen::Call(CallObservation::Enter));
        assert!(check
            .seen(3, 0, &Seen::Outcome(Observation::Entered))
            .is_none());
        check.seen(4, 0, &Seen::Call(CallObservation::Leave));
        assert!(check
            .seen(5, 0, &Seen::Outcome(Observation::Left))
            .is_some());
    }

    #[test]
    fn a_member_whose_session_ended_is_out() {
        let mut check = BarrierCheck::new(2, 2);
        for client in 0..2 {
            check.seen(1, client, &Seen::Call(CallObservation::Enter));
            check.seen(2, client, &Seen::Outcome(Observation::Entered));
        }
        check.seen(3, 0, &Seen::Call(CallObservation::Leave));
        check.seen(4, 1, &Seen::SessionEnded);
        assert!(check
            .seen(5, 0, &Seen::Outcome(Observation::Left))
            .is_none());
    }
}
