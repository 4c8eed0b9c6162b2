//! A scenario's fault plan and its materialization for one seed.

use super::{ns_to_ms, Fault, FaultRates, ScheduledFault, Trigger};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Random streams derived from the seed, one per purpose, so that changing
/// one consumer (e.g. removing faults while shrinking) leaves the others'
/// draws alone.
pub fn stream(seed: u64, purpose: u64) -> SmallRng {
    SmallRng::seed_from_u64(seed ^ purpose.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// The stream a swarm draws its fault kinds and rates from.
pub const SWARM_STREAM: u64 = 1;
/// The stream timed faults are drawn from.
pub const TIMED_STREAM: u64 = 2;
/// The stream the world draws per-request faults from.
pub const REQUEST_STREAM: u64 = 3;

/// The faults a scenario asks for (the `[faults]` table).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultPlan {
    pub schedule: Vec<ScheduledFault>,
    pub rates: FaultRates,
    /// Draw which fault kinds are on, and their rates, from the seed.
    pub swarm: bool,
}

/// Per-request faults: the explicit ones by (client, request number), plus
/// the rates to draw the others from.
#[derive(Clone, Debug, Default)]
pub struct RequestFaults {
    explicit: BTreeMap<(usize, u64), Fault>,
    loss_before_apply: f64,
    loss_after_apply: f64,
    down_ms: super::MsRange,
}

impl Default for super::MsRange {
    fn default() -> Self {
        super::MsRange::new(0, 0)
    }
}

impl RequestFaults {
    /// The words of a request's draw (`for_request`'s one word, read as
    /// a number in [0, 1)) that lose the request, and those that lose its
    /// reply: every word below the first bound loses the request, every
    /// word from it and below the second loses the reply.
    pub fn loss_words(&self) -> [u64; 2] {
        // The first word whose draw, (word >> 11) / 2^53, is not below the
        // rate (a rate of 1 or more: every word is below it).
        let word = |rate: f64| match rate {
            rate if rate >= 1.0 => u64::MAX,
            rate => ((rate.max(0.0) * (1u64 << 53) as f64).ceil() as u64) << 11,
        };
        [
            word(self.loss_before_apply),
            word(self.loss_before_apply + self.loss_after_apply),
        ]
    }

    /// The fault striking the client's `n`-th request (from 1), if any.
    pub fn for_request(&self, client: usize, n: u64, rng: &mut impl Rng) -> Option<Fault> {
        if let Some(fault) = self.explicit.get(&(client, n)) {
            return Some(fault.clone());
        }
        if self.loss_before_apply <= 0.0 && self.loss_after_apply <= 0.0 {
            return None;
        }
        let draw: f64 = rng.gen();
        if draw < self.loss_before_apply {
            Some(Fault::LoseRequest {
                down_ms: self.down_ms.draw(rng),
            })
        } else if draw < self.loss_before_apply + self.loss_after_apply {
            Some(Fault::LoseReply {
                down_ms: self.down_ms.draw(rng),
            })
        } else {
            None
        }
    }
}

/// A plan made concrete for one seed.
#[derive(Clone, Debug)]
pub struct Drawn {
    /// The rates in force (swarm mode draws them).
    pub rates: FaultRates,
    /// Time-triggered faults, ordered by time then client.
    pub timed: Vec<(u64, ScheduledFault)>,
    pub per_request: RequestFaults,
}

impl FaultPlan {
    /// A plan with only an explicit schedule.
    pub fn scheduled(schedule: Vec<ScheduledFault>) -> FaultPlan {
        FaultPlan {
            schedule,
            ..FaultPlan::default()
        }
    }

    /// Draws the plan's faults for `seed` over a fault phase of `phase_ns`.
    pub fn materialize(&self, seed: u64, clients: usize, phase_ns: u64) -> Drawn {
        self.materialize_from(
            &mut stream(seed, SWARM_STREAM),
            &mut stream(seed, TIMED_STREAM),
            clients,
            phase_ns,
        )
    }

    /// Draws the plan's faults from these streams (the swarm's choices
    /// and the timed faults) over a fault phase of `phase_ns`.
    pub fn materialize_from(
        &self,
        swarm: &mut impl Rng,
        timed_rng: &mut impl Rng,
        clients: usize,
        phase_ns: u64,
    ) -> Drawn {
        let rates = if self.swarm {
            self.rates.swarm(swarm)
        } else {
            self.rates.clone()
        };
        let mut timed: Vec<(u64, ScheduledFault)> = self
            .schedule
            .iter()
            .filter_map(|fault| Some((fault.at_ns()?, fault.clone())))
            .collect();
        timed.extend(draw_timed(&rates, timed_rng, clients, phase_ns));
        timed.sort_by(|(a, fa), (b, fb)| a.cmp(b).then(fa.client.cmp(&fb.client)));
        let explicit = self
            .schedule
            .iter()
            .filter_map(|fault| match fault.trigger {
                Trigger::Request(n) => Some(((fault.client, n), fault.fault.clone())),
                Trigger::AtMs(_) => None,
            })
            .collect();
        let per_request = RequestFaults {
            explicit,
            loss_before_apply: rates.loss_before_apply,
            loss_after_apply: rates.loss_after_apply,
            down_ms: rates.down_ms,
        };
        Drawn {
            rates,
            timed,
            per_request,
        }
    }
}

/// The most time-based faults one client draws (all kinds together; the
/// server-wide reaps count as one more client). A hard stop, so that no
/// rate, however large, loops or allocates without bound: scenario
/// validation caps a run's expected faults far below it (100,000 per run,
/// `scenario::limits::MAX_RUN_FAULTS`), so an accepted scenario never
/// reaches it. Arrivals past it are not drawn (the run then has fewer
/// faults than its rate asks for).
pub const MAX_ARRIVALS_PER_CLIENT: usize = 1_000_000;

/// Poisson arrivals of every time-based fault kind, per client, over the
/// fault phase. Panics on a rate that is not a finite number (NaN or
/// infinite: a programmer error, validation refuses them); a rate of zero
/// or below means none.
fn draw_timed<R: Rng>(
    rates: &FaultRates,
    rng: &mut R,
    clients: usize,
    phase_ns: u64,
) -> Vec<(u64, ScheduledFault)> {
    let mut drawn = Vec::new();
    let mut arrivals = |rate: f64,
                        client: usize,
                        budget: &mut usize,
                        rng: &mut R,
                        make: &dyn Fn(&mut R) -> Fault| {
        assert!(
            rate.is_finite(),
            "fault rate {rate} per second is not a finite number (a validation gap)"
        );
        if rate <= 0.0 {
            return;
        }
        let mut at_s = 0.0;
        while *budget > 0 {
            let uniform: f64 = rng.gen_range(f64::MIN_POSITIVE..1.0);
            at_s += -uniform.ln() / rate;
            // The cast saturates: a time past the end of u64 is past the phase.
            let at_ns = (at_s * 1e9) as u64;
            if at_ns >= phase_ns {
                return;
            }
            *budget -= 1;
            let fault = make(rng);
            drawn.push((
                at_ns,
                ScheduledFault {
                    trigger: Trigger::AtMs(ns_to_ms(at_ns)),
                    client,
                    fault,
                },
            ));
        }
    };
    for client in 0..clients {
        let mut budget = MAX_ARRIVALS_PER_CLIENT;
        arrivals(rates.disconnects_per_s, client, &mut budget, rng, &|rng| {
            Fault::Disconnect {
                down_ms: rates.down_ms.draw(rng),
            }
        });
        arrivals(rates.expiries_per_s, client, &mut budget, rng, &|_| {
            Fault::Expire
        });
        arrivals(rates.pauses_per_s, client, &mut budget, rng, &|rng| {
            Fault::Pause {
                pause_ms: rates.pause_ms.draw(rng),
            }
        });
        arrivals(
            rates.spurious_watches_per_s,
            client,
            &mut budget,
            rng,
            &|_| Fault::SpuriousWatch,
        );
        arrivals(rates.watch_delays_per_s, client, &mut budget, rng, &|rng| {
            Fault::DelayWatches {
                delay_ms: rates.watch_delay_ms.draw(rng),
                window_ms: rates.watch_delay_window_ms.draw(rng),
            }
        });
        // Last, so that a plan without silences draws what it drew before.
        arrivals(rates.silences_per_s, client, &mut budget, rng, &|rng| {
            Fault::Silent {
                down_ms: rates.down_ms.draw(rng),
            }
        });
    }
    let mut budget = MAX_ARRIVALS_PER_CLIENT;
    arrivals(rates.reaps_per_s, 0, &mut budget, rng, &|_| Fault::Reap);
    drawn
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn materialize_is_deterministic_and_bounded() {
        let plan = FaultPlan {
            rates: FaultRates {
                disconnects_per_s: 2.0,
                pauses_per_s: 1.0,
                ..FaultRates::default()
            },
            ..FaultPlan::default()
        };
        let a = plan.materialize(7, 3, 10_000_000_000);
        let b = plan.materialize(7, 3, 10_000_000_000);
        assert_eq!(a.timed, b.timed);
        assert!(
            a.timed.len() > 10,
            "about 90 faults expected, got {}",
            a.timed.len()
        );
        assert!(a.timed.iter().all(|(at, _)| *at < 10_000_000_000));
        assert!(a.timed.windows(2).all(|w| w[0].0 <= w[1].0));
        assert_ne!(a.timed, plan.materialize(8, 3, 10_000_000_000).timed);
    }

    #[test]
    fn swarm_switches_kinds_on_and_off_by_seed() {
        let plan = FaultPlan {
            rates: FaultRates {
                disconnects_per_s: 1.0,
                pauses_per_s: 1.0,
                loss_after_apply: 0.1,
                ..FaultRates::default()
            },
            swarm: true,
            ..FaultPlan::default()
        };
        let settings: Vec<bool> = (0..64)
            .map(|seed| plan.materialize(seed, 1, 1).rates.disconnects_per_s > 0.0)
            .collect();
        assert!(settings.contains(&true) && settings.contains(&false));
    }

    #[test]
    fn a_huge_rate_stops_at_the_arrival_cap() {
        let rates = FaultRates {
            disconnects_per_s: 1e300,
            expiries_per_s: 1e300,
            reaps_per_s: f64::MAX,
            ..FaultRates::default()
        };
        let drawn = draw_timed(&rates, &mut stream(1, TIMED_STREAM), 2, u64::MAX);
        let per_client = |client| {
            drawn
                .iter()
                .filter(|(_, f)| f.client == client && f.fault != Fault::Reap)
                .count()
        };
        assert_eq!(per_client(0), MAX_ARRIVALS_PER_CLIENT);
        assert_eq!(per_client(1), MAX_ARRIVALS_PER_CLIENT);
        let reaps = drawn.iter().filter(|(_, f)| f.fault == Fault::Reap).count();
        assert_eq!(reaps, MAX_ARRIVALS_PER_CLIENT);
        // A tiny rate over the longest phase: arrivals, then the end.
        let rates = FaultRates {
            pauses_per_s: f64::MIN_POSITIVE,
            ..FaultRates::default()
        };
        assert!(draw_timed(&rates, &mut stream(1, TIMED_STREAM), 1, u64::MAX).len() < 2);
    }

    #[test]
    #[should_panic(expected = "not a finite number")]
    fn a_nan_rate_is_a_programmer_error() {
        let rates = FaultRates {
            pauses_per_s: f64::NAN,
            ..FaultRates::default()
        };
        draw_timed(&rates, &mut stream(1, TIMED_STREAM), 1, 1_000_000_000);
    }

    #[test]
    #[should_panic(expected = "not a finite number")]
    fn an_infinite_rate_is_a_programmer_error() {
        let rates = FaultRates {
            disconnects_per_s: f64::INFINITY,
            ..FaultRates::default()
        };
        draw_timed(&rates, &mut stream(1, TIMED_STREAM), 1, 1_000_000_000);
    }

    #[test]
    fn explicit_request_faults_win() {
        let plan = FaultPlan::scheduled(vec![ScheduledFault {
            trigger: Trigger::Request(3),
            client: 1,
            fault: Fault::LoseReply { down_ms: 5 },
        }]);
        let drawn = plan.materialize(0, 2, 1_000);
        let mut rng = stream(0, REQUEST_STREAM);
        assert_eq!(
            drawn.per_request.for_request(1, 3, &mut rng),
            Some(Fault::LoseReply { down_ms: 5 })
        );
        assert_eq!(drawn.per_request.for_request(1, 2, &mut rng), None);
        assert!(drawn.timed.is_empty());
    }
}
