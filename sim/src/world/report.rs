//! What one run reports: its verdict, its figures, its trace and the
//! faults that struck.

use super::trace::Trace;
use crate::faults::{FaultRates, ScheduledFault};
use crate::oracles::Violation;
use serde::{Deserialize, Serialize};

/// Counters of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunStats {
    /// Requests the server applied.
    pub requests: u64,
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
    /// The largest (notifications, reads) in one release window.
    pub herd_maxima: (u32, u32),
    pub workloads_done: usize,
    #[serde(skip)]
    pub trace: Trace,
}

impl RunReport {
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }
}
