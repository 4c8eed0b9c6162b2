//! What one run reports: its verdict, its figures, its trace and the
//! faults that struck.

use super::trace::Trace;
use crate::faults::{FaultRates, ScheduledFault};
use crate::oracles::{HerdFigures, Violation};
use serde::{Deserialize, Serialize};
use zk_recipes::Observation;

/// Counters of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunStats {
    /// Requests the server applied.
    pub requests: u64,
    /// Child names in the getChildren replies the server sent (work that
    /// grows with the clients contending under one parent).
    #[serde(default)]
    pub children_returned: u64,
    /// Messages sent either way.
    pub messages: u64,
    /// Events the scheduler processed.
    pub events: u64,
    /// Times the scheduler task ran (each madsim timer it set wakes it once).
    pub scheduler_polls: u64,
    /// Madsim timers the scheduler set.
    pub timers_armed: u64,
    pub calls: u64,
    pub outcomes: u64,
    /// Outcomes that are progress: every outcome but `Failed` and
    /// `TimedOut` (an acquisition, a release, an item offered or taken, a
    /// barrier passed, a hold lost, an empty queue).
    #[serde(default)]
    pub progress: u64,
    /// The first outcome that was not progress: a `Failed` outcome's
    /// reason (e.g. `ZooKeeper error: InvalidPath`), or `TimedOut`.
    #[serde(default)]
    pub first_failure: Option<String>,
    /// Goal outcomes: what a workload sets out to achieve (an
    /// acquisition, an item taken, a barrier entered).
    #[serde(default)]
    pub goals: u64,
    /// Attempts at a goal that the recipe itself gave up on a timer
    /// (`TimedOut`: a timed acquire that waited its time and let go): the
    /// workload asked for that answer, and the properties judged the
    /// attempt (its node, its wait, its cleanup).
    #[serde(default)]
    pub timed_out: u64,
    /// The goal outcomes the workload would reach if it ran to completion
    /// (`WorldConfig::planned_goals`; 0: unknown).
    #[serde(default)]
    pub planned_goals: u64,
    pub faults: u64,
    /// Simulated time at the end of the run, in ns.
    pub sim_time_ns: u64,
}

/// The result of one seeded run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunReport {
    pub seed: u64,
    pub violations: Vec<Violation>,
    pub stats: RunStats,
    /// Every fault that struck, as an explicit schedule.
    pub fault_history: Vec<ScheduledFault>,
    /// The fault rates in force (drawn from the seed in swarm mode).
    pub rates: FaultRates,
    /// The largest (notifications, reads) in one release window
    /// (measured whether or not `herd` is checked).
    pub herd_maxima: (u32, u32),
    /// The herd totals of the run: releases, acquisitions, notifications
    /// inside release windows, reads (measured whether or not `herd` is
    /// checked).
    #[serde(default)]
    pub herd_figures: HerdFigures,
    pub workloads_done: usize,
    /// What the oracles reported in a run whose workloads never made a call
    /// (see [`RunReport::set_aside_unexercised`]): never the recipe's, so
    /// not violations; the run is reported as one that could not have
    /// failed, with these named.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unjudged: Vec<Violation>,
    #[serde(skip)]
    pub trace: Trace,
    /// Who held what when (for reports' ownership timelines).
    #[serde(skip)]
    pub holds: Vec<crate::diagnosis::Hold>,
    /// The abstract states and steps the run reached, when asked
    /// (`DrawRequest::coverage`; [`super::coverage`]).
    #[serde(skip)]
    pub coverage: Option<super::Coverage>,
}

impl RunStats {
    /// Counts one outcome the recipe gave its application.
    pub fn count_outcome(&mut self, observation: &Observation) {
        self.outcomes += 1;
        let failure = match observation {
            Observation::Failed { reason } => reason.clone(),
            Observation::TimedOut => {
                self.timed_out += 1;
                "TimedOut".to_string()
            }
            Observation::Acquired { .. } | Observation::Taken { .. } | Observation::Entered => {
                self.goals += 1;
                self.progress += 1;
                return;
            }
            _ => {
                self.progress += 1;
                return;
            }
        };
        self.first_failure.get_or_insert(failure);
    }
}

impl RunReport {
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }

    /// A run whose workloads never made a call never ran the recipe (the
    /// network answered nothing before the deadline, every client still
    /// arriving): what the oracles say of it (liveness: every workload
    /// stuck) is the harness's, not the recipe's. Such violations are set
    /// aside ([`RunReport::unjudged`]) and the run is one that did no work
    /// ([`RunReport::no_progress`]): exit 2 with the reason, as the same
    /// run without a liveness check, never exit 1.
    pub fn set_aside_unexercised(mut self) -> RunReport {
        if self.stats.calls == 0 {
            self.unjudged.append(&mut self.violations);
        }
        self
    }

    /// Why this run's pass says (almost) nothing, if so: no progress at all
    /// (see [`RunReport::no_progress`]), or so little that the faults left
    /// the properties almost nothing to judge (see
    /// [`RunReport::too_little_progress`]). None for a run that did work.
    pub fn vacuous(&self) -> Option<String> {
        self.no_progress().or_else(|| self.too_little_progress())
    }

    /// Why the run made too little progress, if it did: with a known plan,
    /// fewer decided attempts than [`MIN_GOAL_PERCENT`] % of what the
    /// workload set out to reach. An attempt is decided when it reached its
    /// goal (an acquisition, an item taken, a barrier entered) or when the
    /// recipe gave it up on its own timer (`TimedOut`: a correct timed
    /// acquire under contention does real work and is judged); an attempt
    /// the faults failed is not.
    pub fn too_little_progress(&self) -> Option<String> {
        let stats = &self.stats;
        let floor = min_goals(stats.planned_goals);
        let decided = stats.goals.saturating_add(stats.timed_out);
        if decided >= floor {
            return None;
        }
        let timed_out = match stats.timed_out {
            0 => String::new(),
            n => format!(" and gave up {n} on the recipe's own timer"),
        };
        Some(format!(
            "too little progress: the workload reached {} of its {} planned goals (acquisitions, items taken, barriers entered){timed_out}, below the floor of {floor} ({MIN_GOAL_PERCENT}%): the faults stopped nearly all of it",
            stats.goals, stats.planned_goals
        ))
    }

    /// Why this run could not have failed, if it could not: the server
    /// applied no request, or no outcome was progress (every call failed,
    /// timed out or was never answered). Its properties then hold
    /// vacuously, and a pass says nothing. None for a run that did work.
    pub fn no_progress(&self) -> Option<String> {
        let stats = &self.stats;
        if stats.requests > 0 && stats.progress > 0 {
            return None;
        }
        let failed = stats.outcomes.saturating_sub(stats.progress);
        let first = match &stats.first_failure {
            Some(first) => format!(" (first: {first})"),
            None => String::new(),
        };
        let answers = if stats.calls == 0 {
            "no call was made".to_string()
        } else if stats.outcomes == 0 {
            format!("none of {} was answered", plural(stats.calls, "call"))
        } else if failed == stats.outcomes {
            format!("every call failed{first}")
        } else if failed > 0 {
            format!(
                "{failed} of {} failed{first}",
                plural(stats.outcomes, "call")
            )
        } else {
            format!(
                "{} answered without the server",
                plural(stats.outcomes, "call")
            )
        };
        let unjudged = match self.unjudged.is_empty() {
            true => String::new(),
            false => {
                let names: Vec<String> = self.unjudged.iter().map(|v| v.signature()).collect();
                format!(
                    " ({} reported, not the recipe's: it was never called)",
                    names.join(", ")
                )
            }
        };
        Some(format!(
            "no workload made progress: {} applied, {answers}{unjudged}",
            plural(stats.requests, "request")
        ))
    }
}

/// The least share of its planned goals a run must reach for its pass to
/// count, in percent: below it the faults left almost nothing to judge.
/// The lowest share a passing seed of a shipped scenario reached is 7%
/// (`lock-fixed-swarm`, 10,000 seeds; 8% on its ensemble; every other
/// shipped scenario 14% or more over 1,000 seeds; measured with
/// `tests/suite/progress_floor.rs`), so the floor sits well below the swarms.
pub const MIN_GOAL_PERCENT: u64 = 3;

/// The goal outcomes a run with `planned` goals must reach (at least 1 of
/// a known plan; 0 of an unknown one).
pub fn min_goals(planned: u64) -> u64 {
    (planned * MIN_GOAL_PERCENT).div_ceil(100)
}

fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
