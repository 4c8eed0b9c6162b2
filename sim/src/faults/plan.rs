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

const SWARM_STREAM: u64 = 1;
const TIMED_STREAM: u64 = 2;
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
        let rates = if self.swarm {
            self.rates.swarm(&mut stream(seed, SWARM_STREAM))
        } else {
            self.rates.clone()
        };
        let mut timed: Vec<(u64, ScheduledFault)> = self
            .schedule
            .iter()
            .filter_map(|fault| Some((fault.at_ns()?, fault.clone())))
            .collect();
        timed.extend(draw_timed(
            &rates,
            &mut stream(seed, TIMED_STREAM),
            clients,
            phase_ns,
        ));
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

/// Poisson arrivals of every time-based fault kind, per client.
fn draw_timed(
    rates: &FaultRates,
    rng: &mut SmallRng,
    clients: usize,
    phase_ns: u64,
) -> Vec<(u64, ScheduledFault)> {
    let mut drawn = Vec::new();
    let mut arrivals =
        |rate: f64, client: usize, rng: &mut SmallRng, make: &dyn Fn(&mut SmallRng) -> Fault| {
            if rate <= 0.0 {
                return;
            }
            let mut at_s = 0.0;
            loop {
                let uniform: f64 = rng.gen_range(f64::MIN_POSITIVE..1.0);
                at_s += -uniform.ln() / rate;
                let at_ns = (at_s * 1e9) as u64;
                if at_ns >= phase_ns {
                    return;
                }
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
        arrivals(rates.disconnects_per_s, client, rng, &|rng| {
            Fault::Disconnect {
                down_ms: rates.down_ms.draw(rng),
            }
        });
        arrivals(rates.expiries_per_s, client, rng, &|_| Fault::Expire);
        arrivals(rates.pauses_per_s, client, rng, &|rng| Fault::Pause {
            pause_ms: rates.pause_ms.draw(rng),
        });
        arrivals(rates.spurious_watches_per_s, client, rng, &|_| {
            Fault::SpuriousWatch
        });
        arrivals(rates.watch_delays_per_s, client, rng, &|rng| {
            Fault::DelayWatches {
                delay_ms: rates.watch_delay_ms.draw(rng),
                window_ms: rates.watch_delay_window_ms.draw(rng),
            }
        });
    }
    arrivals(rates.reaps_per_s, 0, rng, &|_| Fault::Reap);
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
