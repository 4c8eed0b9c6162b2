//! Shrinking: a failing seed's faults, cut down to a smaller scenario file
//! that still breaks the same property with the same seed.
//!
//! The run's fault history (every fault that struck, per-request faults by
//! request number) becomes an explicit schedule with all rates off; then
//! delta debugging removes chunks of it while the violation persists, and
//! the workload's cycle count is halved while it persists.

use super::file::FaultsFile;
use super::{Expectation, Scenario, SeedRange};
use crate::faults::{FaultPlan, FaultRates};
use crate::oracles::Property;

/// The outcome of shrinking.
#[derive(Clone, Debug)]
pub struct Shrunk {
    pub scenario: Scenario,
    pub property: Property,
    pub faults_before: usize,
    pub faults_after: usize,
    /// Simulations run while shrinking.
    pub runs: usize,
}

/// Why a seed could not be shrunk.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShrinkError {
    #[error("seed {0} passes: nothing to shrink")]
    Passes(u64),
    #[error("seed {seed}'s fault history, replayed as an explicit schedule, no longer breaks {property}")]
    NotReproducible { seed: u64, property: Property },
}

struct Shrinker<'a> {
    base: &'a Scenario,
    seed: u64,
    property: Property,
    runs: usize,
    max_runs: usize,
    /// The client-side expiry policy the failing run had (swarm mode
    /// draws it per seed; the shrunk scenario keeps what was drawn).
    client_expiry: bool,
}

impl Shrinker<'_> {
    /// True if the candidate still breaks the property.
    fn fails(&mut self, candidate: &Scenario) -> bool {
        self.runs += 1;
        let report = candidate.runner().run(self.seed, false);
        report
            .violations
            .iter()
            .any(|v| v.property == self.property)
    }

    fn with_schedule(&self, schedule: &[crate::faults::ScheduledFault], cycles: u32) -> Scenario {
        let mut candidate = self.base.clone();
        let rates = &self.base.faults.rates;
        candidate.faults = FaultPlan {
            schedule: schedule.to_vec(),
            rates: FaultRates {
                loss_before_apply: 0.0,
                loss_after_apply: 0.0,
                disconnects_per_s: 0.0,
                silences_per_s: 0.0,
                client_expiry: self.client_expiry,
                expiries_per_s: 0.0,
                pauses_per_s: 0.0,
                spurious_watches_per_s: 0.0,
                watch_delays_per_s: 0.0,
                reaps_per_s: 0.0,
                ..rates.clone()
            },
            swarm: false,
        };
        candidate.raw.faults = FaultsFile::from(&candidate.faults);
        candidate.raw.workload.cycles = cycles;
        candidate
    }

    /// Delta debugging over the schedule.
    fn minimize(
        &mut self,
        mut schedule: Vec<crate::faults::ScheduledFault>,
        cycles: u32,
    ) -> Vec<crate::faults::ScheduledFault> {
        let mut chunks = 2;
        while !schedule.is_empty() && self.runs < self.max_runs {
            let size = schedule.len().div_ceil(chunks);
            let mut removed_any = false;
            let mut start = 0;
            while start < schedule.len() && self.runs < self.max_runs {
                let mut candidate = schedule.clone();
                candidate.drain(start..(start + size).min(schedule.len()));
                if self.fails(&self.with_schedule(&candidate, cycles)) {
                    schedule = candidate;
                    removed_any = true;
                } else {
                    start += size;
                }
            }
            if !removed_any {
                if size == 1 {
                    break;
                }
                chunks = (chunks * 2).min(schedule.len());
            }
        }
        schedule
    }
}

/// Shrinks `seed` of `scenario`, running at most about `max_runs` simulations.
pub fn shrink(scenario: &Scenario, seed: u64, max_runs: usize) -> Result<Shrunk, ShrinkError> {
    let report = scenario.runner().run(seed, false);
    let property = report
        .violations
        .first()
        .ok_or(ShrinkError::Passes(seed))?
        .property;
    let mut shrinker = Shrinker {
        base: scenario,
        seed,
        property,
        runs: 1,
        max_runs,
        client_expiry: report.rates.client_expiry,
    };
    let history = report.fault_history;
    let mut cycles = scenario.raw.workload.cycles;
    if !shrinker.fails(&shrinker.with_schedule(&history, cycles)) {
        return Err(ShrinkError::NotReproducible { seed, property });
    }
    let mut schedule = shrinker.minimize(history.clone(), cycles);
    while cycles > 1 && shrinker.runs < max_runs {
        let fewer = cycles / 2;
        if !shrinker.fails(&shrinker.with_schedule(&schedule, fewer)) {
            break;
        }
        cycles = fewer;
        schedule = shrinker.minimize(schedule, cycles);
    }
    let mut shrunk = shrinker.with_schedule(&schedule, cycles);
    shrunk.name = format!("{}-seed{seed}-shrunk", scenario.name);
    shrunk.raw.name = Some(shrunk.name.clone());
    shrunk.raw.description = format!(
        "Shrunk from {} seed {seed}: {} of {} faults, {cycles} cycles, still breaks {property}.",
        scenario.file.display(),
        schedule.len(),
        history.len()
    );
    shrunk.raw.seeds = seed.to_string();
    shrunk.file_variant = shrunk.raw.variant.clone();
    shrunk.seeds = SeedRange::single(seed);
    shrunk.raw.expect = "violation".to_string();
    shrunk.raw.expect_property = Some(property.name().to_string());
    shrunk.expect = Expectation::Violation(Some(property));
    Ok(Shrunk {
        scenario: shrunk,
        property,
        faults_before: history.len(),
        faults_after: schedule.len(),
        runs: shrinker.runs,
    })
}
