//! The settings of one simulated world (a scenario compiles into these).

use crate::faults::{FaultPlan, MsRange};
use crate::oracles::OracleConfig;
use rand::Rng;
use serde::{Deserialize, Serialize};
use zk_recipes::zk::{Path, Request};

/// One-way network latency of every message, in microseconds: uniform in
/// `[min_us, max_us]`, plus with probability `spike_probability` a spike
/// drawn from `spike_us`. Messages on one connection never overtake each
/// other (TCP), whatever their draws.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LatencyModel {
    pub min_us: u64,
    pub max_us: u64,
    pub spike_probability: f64,
    #[serde(deserialize_with = "crate::faults::two_numbers")]
    pub spike_us: [u64; 2],
}

impl Default for LatencyModel {
    fn default() -> Self {
        LatencyModel {
            min_us: 200,
            max_us: 2_000,
            spike_probability: 0.0,
            spike_us: [10_000, 100_000],
        }
    }
}

impl LatencyModel {
    /// One draw, in ns.
    pub fn draw_ns(&self, rng: &mut impl Rng) -> u64 {
        let mut us = if self.max_us > self.min_us {
            rng.gen_range(self.min_us..=self.max_us)
        } else {
            self.min_us
        };
        if self.spike_probability > 0.0 && rng.gen_bool(self.spike_probability.min(1.0)) {
            us = us.saturating_add(MsRange::new(self.spike_us[0], self.spike_us[1]).draw(rng));
        }
        us.max(1).saturating_mul(1_000)
    }
}

/// Everything a world needs besides the recipe and the workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorldConfig {
    pub clients: usize,
    /// Servers in the ensemble (1: one server that applies every change
    /// everywhere at once; more: a leader and followers that lag).
    pub servers: usize,
    /// How long after its commit a follower applies a transaction, drawn
    /// per transaction and follower (a follower applies in log order).
    pub apply_lag_ms: MsRange,
    pub session_timeout_ms: u64,
    pub latency: LatencyModel,
    /// Delay before a disconnected client tries to reconnect (and between
    /// attempts while the network is down; each failed attempt fails the
    /// requests queued since the disconnect with ConnectionLoss). The Java
    /// client with one server waits 1000 ms plus a random 0..1000 ms before
    /// every reconnect attempt: `[1000, 2000]`.
    pub reconnect_delay_ms: MsRange,
    /// Delay before a client whose session expired opens a new one.
    pub new_session_delay_ms: MsRange,
    /// How often the server looks for expired sessions (ZooKeeper's
    /// tickTime: sessions expire up to one tick late).
    pub expiry_tick_ms: u64,
    /// How often the container reaper runs (0: never, except by fault).
    pub reaper_interval_ms: u64,
    /// Requests applied by an admin session before the clients start
    /// (creating the recipe's parent nodes); their nodes are not leaks.
    pub setup: Vec<Request>,
    /// Parents whose sequence counter starts at the given value.
    pub sequence_starts: Vec<(Path, i32)>,
    /// TTL nodes allowed on the server.
    pub extended_types: bool,
    /// Length of the fault phase; the heal phase starts after it (or as
    /// soon as every workload is done).
    pub fault_phase_ms: u64,
    /// The liveness bound: after healing, every workload must finish
    /// within this much simulated time.
    pub heal_ms: u64,
    /// Quiet time after the last workload finished, before the end checks
    /// (lets in-flight deletes land); the checks then also wait until every
    /// client is connected and quiet (`world::settle`), at most until the
    /// liveness deadline.
    pub settle_ms: u64,
    pub faults: FaultPlan,
    pub oracles: OracleConfig,
    /// Record a trace (slower; replays and reports of failures use it).
    pub trace: bool,
    /// End the run at the first violation.
    pub stop_on_violation: bool,
    /// What the workload sets out to achieve, in goal outcomes (see
    /// `RunStats::goals`): acquisitions, items delivered or barriers
    /// entered, if it runs to completion. 0: unknown (only a run with no
    /// progress at all is then judged vacuous).
    #[serde(default)]
    pub planned_goals: u64,
}

impl Default for WorldConfig {
    fn default() -> Self {
        WorldConfig {
            clients: 3,
            servers: 1,
            apply_lag_ms: MsRange::new(0, 5),
            session_timeout_ms: 4_000,
            latency: LatencyModel::default(),
            reconnect_delay_ms: MsRange::new(5, 50),
            new_session_delay_ms: MsRange::new(5, 50),
            expiry_tick_ms: 500,
            reaper_interval_ms: 1_000,
            setup: Vec::new(),
            sequence_starts: Vec::new(),
            extended_types: true,
            fault_phase_ms: 30_000,
            heal_ms: 30_000,
            settle_ms: 100,
            faults: FaultPlan::default(),
            oracles: OracleConfig::default(),
            trace: false,
            stop_on_violation: true,
            planned_goals: 0,
        }
    }
}

impl WorldConfig {
    /// The Java client pings when it has sent nothing for a third of the
    /// session timeout.
    pub fn ping_interval_ms(&self) -> u64 {
        (self.session_timeout_ms / 3).max(1)
    }
}
