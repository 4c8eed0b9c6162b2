//! The herd bound: watch notifications per release.
//!
//! A window opens when a holder calls release (or learns it lost its hold)
//! and closes at the next acquisition. Node-event notifications delivered to
//! any recipe inside a window are counted; more than `bound` in one window
//! breaks the property (a predecessor-watch lock wakes one waiter, a herd
//! wakes them all), reported when the window closes, with every wakeup and
//! the number of reads in the window.

use super::{fmt_time, CallObservation, ClientIndex, Property, Seen, SimNanos, Violation};
use zk_recipes::Observation;

struct Window {
    opened: SimNanos,
    releaser: ClientIndex,
    woken: Vec<(SimNanos, ClientIndex)>,
    reads: u32,
}

pub struct HerdCheck {
    bound: u32,
    window: Option<Window>,
    max_notifications: u32,
    max_reads: u32,
}

impl HerdCheck {
    pub fn new(bound: u32) -> HerdCheck {
        HerdCheck {
            bound,
            window: None,
            max_notifications: 0,
            max_reads: 0,
        }
    }

    /// The largest (notifications, reads) seen in one window.
    pub fn maxima(&self) -> (u32, u32) {
        (self.max_notifications, self.max_reads)
    }

    pub fn seen(&mut self, at: SimNanos, client: ClientIndex, seen: &Seen) -> Option<Violation> {
        match seen {
            Seen::Call(CallObservation::Release) | Seen::Outcome(Observation::Lost) => {
                let closed = self.close(at);
                self.window = Some(Window {
                    opened: at,
                    releaser: client,
                    woken: Vec::new(),
                    reads: 0,
                });
                closed
            }
            Seen::Outcome(Observation::Acquired { .. }) => self.close(at),
            Seen::Read => {
                if let Some(window) = &mut self.window {
                    window.reads += 1;
                    self.max_reads = self.max_reads.max(window.reads);
                }
                None
            }
            Seen::WatchFired => self.woken(at, client),
            _ => None,
        }
    }

    fn woken(&mut self, at: SimNanos, client: ClientIndex) -> Option<Violation> {
        let window = self.window.as_mut()?;
        window.woken.push((at, client));
        self.max_notifications = self.max_notifications.max(window.woken.len() as u32);
        None
    }

    /// Closes the open window; a violation if it woke too many watchers.
    pub fn close(&mut self, at: SimNanos) -> Option<Violation> {
        let window = self.window.take()?;
        let count = window.woken.len() as u32;
        if count <= self.bound {
            return None;
        }
        let mut events = vec![format!(
            "{} c{}: released",
            fmt_time(window.opened),
            window.releaser
        )];
        events.extend(
            window
                .woken
                .iter()
                .map(|(when, who)| format!("{} c{who}: woken by a watch", fmt_time(*when))),
        );
        Some(Violation {
            property: Property::Herd,
            at_ns: at,
            message: format!(
                "one release woke {count} watchers (bound {}), with {} read(s) before the next acquisition",
                self.bound, window.reads
            ),
            events,
            diagnosis: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zk_recipes::{FencingToken, Hold};

    #[test]
    fn one_wakeup_per_release_holds_two_break_it() {
        let mut check = HerdCheck::new(1);
        check.seen(1, 0, &Seen::Call(CallObservation::Release));
        assert!(check.seen(2, 1, &Seen::WatchFired).is_none());
        let acquired = Seen::Outcome(Observation::Acquired {
            hold: Hold::Exclusive,
            token: FencingToken(1),
        });
        check.seen(3, 1, &acquired);
        check.seen(4, 1, &Seen::Call(CallObservation::Release));
        assert!(check.seen(5, 2, &Seen::WatchFired).is_none());
        assert!(check.seen(6, 3, &Seen::WatchFired).is_none());
        assert!(check.seen(7, 3, &Seen::Read).is_none());
        let violation = check
            .seen(8, 2, &acquired)
            .expect("two wakeups for one release");
        assert_eq!(violation.events.len(), 3);
        assert!(violation.message.contains("1 read(s)"), "{violation}");
        assert_eq!(check.maxima(), (2, 1));
    }

    #[test]
    fn notifications_outside_a_window_do_not_count() {
        let mut check = HerdCheck::new(1);
        for client in 0..5 {
            assert!(check.seen(1, client, &Seen::WatchFired).is_none());
        }
    }
}
