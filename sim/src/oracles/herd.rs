//! The herd bound: watch notifications per release.
//!
//! A window opens when a holder calls release (or learns it lost its hold)
//! and closes at the next acquisition. Node-event notifications delivered to
//! any recipe inside a window are counted; more than `bound` in one window
//! breaks the property (a predecessor-watch lock wakes one waiter, a herd
//! wakes them all), reported when the window closes, with every wakeup and
//! the number of reads in the window.
//!
//! Measuring and judging are apart. The check always measures, in every
//! run, whether or not the `herd` property is checked: the largest window
//! ([`HerdCheck::maxima`]) and the run's totals ([`HerdFigures`]: releases,
//! acquisitions, notifications inside windows, every read), a few integer
//! additions per event. Only a check built with a bound ([`HerdCheck::judging`],
//! when the scenario checks `herd`) keeps each window's wakeups and reports a
//! violation; a measuring check ([`HerdCheck::measuring`]) never does. So
//! `zkcheck herd` reads the figures of a contention run that checks other
//! properties, and the herd property behaves as it always did.

use super::{fmt_time, CallObservation, ClientIndex, Property, Seen, SimNanos, Violation};
use serde::{Deserialize, Serialize};
use zk_recipes::Observation;

/// The herd measurements of one run, summed over it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HerdFigures {
    /// Release windows opened: release calls, and holds lost.
    pub releases: u64,
    /// Acquisitions (an `Acquired` outcome: a lock, a leadership, leases).
    pub acquisitions: u64,
    /// Node-event watch notifications delivered inside a release window
    /// (what the herd bound counts; injected spurious events are not).
    pub notifications: u64,
    /// Every read any client sent (exists, getData, getChildren), inside a
    /// window or not: what acquiring cost in reads.
    pub reads: u64,
}

impl HerdFigures {
    /// Mean watch notifications per release (0 without a release).
    pub fn notifications_per_release(&self) -> f64 {
        ratio(self.notifications, self.releases)
    }

    /// Mean reads per acquisition (0 without an acquisition).
    pub fn reads_per_acquisition(&self) -> f64 {
        ratio(self.reads, self.acquisitions)
    }

    /// The sums of two runs' figures.
    pub fn add(&mut self, other: &HerdFigures) {
        self.releases += other.releases;
        self.acquisitions += other.acquisitions;
        self.notifications += other.notifications;
        self.reads += other.reads;
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

struct Window {
    opened: SimNanos,
    releaser: ClientIndex,
    notifications: u32,
    /// Every wakeup, kept only when judging (the violation lists them).
    woken: Vec<(SimNanos, ClientIndex)>,
    reads: u32,
}

pub struct HerdCheck {
    /// The herd bound; None measures without judging.
    bound: Option<u32>,
    window: Option<Window>,
    max_notifications: u32,
    max_reads: u32,
    figures: HerdFigures,
}

impl HerdCheck {
    /// A check that measures and reports a window with more than `bound`
    /// notifications.
    pub fn judging(bound: u32) -> HerdCheck {
        HerdCheck::with_bound(Some(bound))
    }

    /// A check that only measures: it never reports a violation.
    pub fn measuring() -> HerdCheck {
        HerdCheck::with_bound(None)
    }

    fn with_bound(bound: Option<u32>) -> HerdCheck {
        HerdCheck {
            bound,
            window: None,
            max_notifications: 0,
            max_reads: 0,
            figures: HerdFigures::default(),
        }
    }

    /// The largest (notifications, reads) seen in one window.
    pub fn maxima(&self) -> (u32, u32) {
        (self.max_notifications, self.max_reads)
    }

    /// The run's totals so far.
    pub fn figures(&self) -> HerdFigures {
        self.figures
    }

    pub fn seen(&mut self, at: SimNanos, client: ClientIndex, seen: &Seen) -> Option<Violation> {
        match seen {
            Seen::Call(CallObservation::Release) | Seen::Outcome(Observation::Lost) => {
                let closed = self.close(at);
                self.figures.releases += 1;
                self.window = Some(Window {
                    opened: at,
                    releaser: client,
                    notifications: 0,
                    woken: Vec::new(),
                    reads: 0,
                });
                closed
            }
            Seen::Outcome(Observation::Acquired { .. }) => {
                self.figures.acquisitions += 1;
                self.close(at)
            }
            Seen::Read => {
                self.figures.reads += 1;
                if let Some(window) = &mut self.window {
                    window.reads += 1;
                    self.max_reads = self.max_reads.max(window.reads);
                }
                None
            }
            Seen::WatchFired => {
                self.woken(at, client);
                None
            }
            _ => None,
        }
    }

    fn woken(&mut self, at: SimNanos, client: ClientIndex) {
        let Some(window) = self.window.as_mut() else {
            return;
        };
        self.figures.notifications += 1;
        window.notifications += 1;
        if self.bound.is_some() {
            window.woken.push((at, client));
        }
        self.max_notifications = self.max_notifications.max(window.notifications);
    }

    /// Closes the open window; a violation if it woke too many watchers
    /// (never when only measuring).
    pub fn close(&mut self, at: SimNanos) -> Option<Violation> {
        let window = self.window.take()?;
        let count = window.notifications;
        let bound = self.bound?;
        if count <= bound {
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
                "one release woke {count} watchers (bound {bound}), with {} read(s) before the next acquisition",
                window.reads
            ),
            events,
            diagnosis: None,
            invariant: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zk_recipes::{FencingToken, Hold};

    #[test]
    fn one_wakeup_per_release_holds_two_break_it() {
        let mut check = HerdCheck::judging(1);
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
        let mut check = HerdCheck::judging(1);
        for client in 0..5 {
            assert!(check.seen(1, client, &Seen::WatchFired).is_none());
        }
    }

    #[test]
    fn totals_count_every_release_acquisition_read_and_windowed_wakeup() {
        let acquired = Seen::Outcome(Observation::Acquired {
            hold: Hold::Exclusive,
            token: FencingToken(1),
        });
        let events = [
            (0, Seen::Read),
            (0, Seen::WatchFired),
            (0, acquired.clone()),
            (0, Seen::Call(CallObservation::Release)),
            (1, Seen::WatchFired),
            (2, Seen::WatchFired),
            (3, Seen::WatchFired),
            (1, Seen::Read),
            (2, Seen::Read),
            (1, acquired.clone()),
            (2, Seen::WatchFired),
            (1, Seen::Outcome(Observation::Lost)),
            (2, Seen::WatchFired),
            (2, acquired),
        ];
        let mut judging = HerdCheck::judging(1_000);
        let mut measuring = HerdCheck::measuring();
        for (at, (client, seen)) in events.iter().enumerate() {
            assert!(judging.seen(at as u64, *client, seen).is_none());
            assert!(measuring.seen(at as u64, *client, seen).is_none());
        }
        let figures = HerdFigures {
            releases: 2,
            acquisitions: 3,
            notifications: 4,
            reads: 3,
        };
        assert_eq!(judging.figures(), figures);
        assert_eq!(measuring.figures(), figures);
        assert_eq!(measuring.maxima(), (3, 2));
        assert_eq!(figures.notifications_per_release(), 2.0);
        assert_eq!(figures.reads_per_acquisition(), 1.0);
        assert_eq!(HerdFigures::default().notifications_per_release(), 0.0);
        assert_eq!(HerdFigures::default().reads_per_acquisition(), 0.0);
    }

    #[test]
    fn a_measuring_check_never_reports() {
        let mut check = HerdCheck::measuring();
        check.seen(1, 0, &Seen::Call(CallObservation::Release));
        for client in 1..50 {
            assert!(check.seen(2, client, &Seen::WatchFired).is_none());
        }
        assert!(check.close(3).is_none());
        assert_eq!(check.figures().notifications, 49);
        assert_eq!(check.maxima(), (49, 0));
    }
}
