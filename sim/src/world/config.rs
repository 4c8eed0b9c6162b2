//! The settings of one simulated world (a scenario compiles into these).

use crate::faults::{FaultPlan, MsRange};
use crate::oracles::OracleConfig;
use rand::Rng;
use serde::{Deserialize, Serialize};
use zk_recipes::zk::{Path, Request};
use zk_recipes::ClientLibrary;

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
    /// Delay before a disconnected client's reconnect attempt that comes
    /// back to the server it last connected to, having tried every other
    /// one (each failed attempt fails the requests queued since the
    /// disconnect with ConnectionLoss). The Java client (ClientCnxn with
    /// StaticHostProvider) spins 1000 ms when its host list comes round to
    /// that server, and sleeps a random 0..1000 ms before every attempt
    /// but the very first: `[1000, 2000]`. With one server every attempt
    /// comes back to it: an attempt every 1–2 s. A scenario that writes
    /// `timing.reconnect_delay_ms` asks for this delay before every
    /// attempt instead, whatever the servers (`ReconnectTiming::Fixed`).
    pub reconnect_delay_ms: MsRange,
    /// Delay before an attempt to the next server of the host list, not
    /// the one last connected to (several servers only): Java's random
    /// 0..1000 ms sleep: `[0, 1000]`.
    #[serde(default = "default_next_host_delay_ms")]
    pub next_host_delay_ms: MsRange,
    /// Whose reconnect timing the clients follow (see `ReconnectTiming`).
    #[serde(default)]
    pub reconnect_timing: ReconnectTiming,
    /// Delay before a client whose session expired opens a new one.
    pub new_session_delay_ms: MsRange,
    /// How often the container reaper runs (0: never, except by fault).
    pub reaper_interval_ms: u64,
    /// The servers' tickTime (zoo.cfg), in ms. Every server looks for
    /// expired sessions once a tick (SessionTrackerImpl's ExpiryQueue:
    /// sessions expire up to one tick late); on an ensemble, with
    /// `sync_limit`, it is also how long followers take to notice their
    /// leader is gone (and a cut-off server that it lost the leader).
    /// Default 200, as the conformance servers of `scripts/zk-server`.
    #[serde(default = "default_tick_time_ms")]
    pub tick_time_ms: u64,
    /// The ensemble's syncLimit (zoo.cfg), in ticks. Default 10, as the
    /// conformance ensemble of `scripts/zk-server`.
    #[serde(default = "default_sync_limit")]
    pub sync_limit: u64,
    /// How long an election takes once the followers noticed their
    /// leader is gone (a crashed, cut-off, frozen or outvoted leader; a
    /// `leader_change` says its own window), drawn per election. Measured
    /// on the 3.8.0 ensemble of `scripts/zk-server` (tickTime 200, SIGSTOP
    /// of the leader, 7 runs of live/tests/real_server/ensemble.rs's
    /// leader-loss test): a follower served as leader 200 to 620 ms after
    /// the followers stopped serving; default `[200, 650]`.
    #[serde(default = "default_election_ms")]
    pub election_ms: MsRange,
    /// A session that moves to another server is answered there only once
    /// that server applied what the leader had committed when it moved
    /// (the leader's revalidation travels behind those commits: what a
    /// real 3.8 ensemble does, issue 31). On by default; off, a lagging
    /// server answers a moved session at once from its own state, an
    /// over-approximation beyond 3.8 that is the only way the `unsynced`
    /// lock's recovery read is caught (bug 11, tests/fixtures/lock-unsynced-*).
    #[serde(default = "default_revalidate_moves")]
    pub revalidate_moves: bool,
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
            reconnect_delay_ms: MsRange::new(1_000, 2_000),
            next_host_delay_ms: default_next_host_delay_ms(),
            reconnect_timing: ReconnectTiming::ClientLibrary,
            new_session_delay_ms: MsRange::new(5, 50),
            reaper_interval_ms: 1_000,
            tick_time_ms: default_tick_time_ms(),
            sync_limit: default_sync_limit(),
            election_ms: default_election_ms(),
            revalidate_moves: default_revalidate_moves(),
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

fn default_tick_time_ms() -> u64 {
    200
}

fn default_sync_limit() -> u64 {
    10
}

fn default_election_ms() -> MsRange {
    MsRange::new(200, 650)
}

/// Moved sessions wait for the leader's revalidation, as on a real 3.8.
fn default_revalidate_moves() -> bool {
    true
}

impl WorldConfig {
    /// How long after a server loses its leader it notices (ZooKeeper:
    /// tickTime × syncLimit): followers whose leader is gone close every
    /// client connection then, and a cut-off server stops serving.
    pub fn leader_loss_detect_ms(&self) -> u64 {
        self.tick_time_ms.saturating_mul(self.sync_limit)
    }

    /// The Java client pings when it has sent nothing for a third of the
    /// session timeout.
    pub fn ping_interval_ms(&self) -> u64 {
        (self.session_timeout_ms / 3).max(1)
    }

    /// The `zookeeper-client` crate's tick: 1/20 of the session timeout
    /// (`calc_tick_timeout` without a configured connection timeout).
    pub fn crate_tick_ms(&self) -> u64 {
        (self.session_timeout_ms / 20).max(1)
    }

    /// How long a client of the crate stays idle before it pings: three
    /// ticks, at most 10 s (`reset_timeout`'s `ping_timeout`).
    pub fn crate_ping_idle_ms(&self) -> u64 {
        self.crate_tick_ms().saturating_mul(3).min(10_000)
    }
}

fn default_next_host_delay_ms() -> MsRange {
    MsRange::new(0, 1_000)
}

/// Whose reconnect timing a disconnected client follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReconnectTiming {
    /// The client library the recipe targets (`Recipe::CLIENT_LIBRARY`).
    /// Java (ClientCnxn, StaticHostProvider): before an attempt to the
    /// next server of the host list `next_host_delay_ms` (0–1 s), before
    /// one that comes back to the server last connected to
    /// `reconnect_delay_ms` (1–2 s; with one server, every attempt). The
    /// `zookeeper-client` crate (session/mod.rs `start`, endpoint.rs
    /// `IterableEndpoints::timeout`): one attempt to each server at once,
    /// then per round an attempt to the first server after
    /// min(1000, 100 × servers) ms doubled each round + 0–100 ms, and to
    /// the others 50 ms × their offset in the list + 0–50 ms (never past
    /// the crate's own deadline, 7/5 of the session timeout).
    #[default]
    ClientLibrary,
    /// `reconnect_delay_ms` before every attempt (what a scenario that
    /// writes `timing.reconnect_delay_ms` asks for).
    Fixed,
}

impl WorldConfig {
    /// How long a connected client waits without hearing a byte before it
    /// drops the connection itself (a silent connection). Java: two
    /// thirds of the session timeout (ClientCnxn's readTimeout); the
    /// `zookeeper-client` crate: its connection timeout, 2/5 of it.
    pub fn read_timeout_ms(&self, library: ClientLibrary) -> u64 {
        match library {
            ClientLibrary::Java => self.session_timeout_ms * 2 / 3,
            ClientLibrary::ZookeeperClientRust => self.session_timeout_ms * 2 / 5,
        }
        .max(1)
    }

    /// How long a connection attempt that hears nothing hangs before it
    /// fails. Java: the session timeout divided by the number of servers
    /// (ClientCnxn's connectTimeout); the crate: 2/5 of it.
    pub fn connect_timeout_ms(&self, library: ClientLibrary) -> u64 {
        match library {
            ClientLibrary::Java => self.session_timeout_ms / self.servers.max(1) as u64,
            ClientLibrary::ZookeeperClientRust => self.session_timeout_ms * 2 / 5,
        }
        .max(1)
    }

    /// The delay before a disconnected client's `attempt`-th reconnect
    /// attempt since it last had a connection (from 1), in ms.
    pub fn reconnect_delay_draw_ms(
        &self,
        library: ClientLibrary,
        attempt: u64,
        rng: &mut impl Rng,
    ) -> u64 {
        let servers = self.servers.max(1) as u64;
        match (self.reconnect_timing, library) {
            (ReconnectTiming::Fixed, _) => self.reconnect_delay_ms.draw(rng),
            (ReconnectTiming::ClientLibrary, ClientLibrary::Java) => {
                if attempt.is_multiple_of(servers) {
                    self.reconnect_delay_ms.draw(rng)
                } else {
                    self.next_host_delay_ms.draw(rng)
                }
            }
            (ReconnectTiming::ClientLibrary, ClientLibrary::ZookeeperClientRust) => {
                let deadline_ms = self.session_timeout_ms.saturating_mul(7) / 5;
                crate_backoff_ms(attempt.saturating_sub(1), servers, rng).min(deadline_ms)
            }
        }
    }
}

/// The `zookeeper-client` crate's delay before its `index`-th attempt of
/// one round of reconnecting (from 0), with `servers` endpoints.
fn crate_backoff_ms(index: u64, servers: u64, rng: &mut impl Rng) -> u64 {
    let (offset, cycles) = (index % servers, index / servers);
    if cycles == 0 {
        0
    } else if offset == 0 {
        let base = 1_000u64.min(100 * servers);
        let doubled = base.saturating_mul(1u64 << (cycles - 1).min(40));
        doubled.saturating_add(rng.gen_range(0..100))
    } else {
        50 * offset + rng.gen_range(0..50)
    }
}
