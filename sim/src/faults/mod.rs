//! Faults as data.
//!
//! A scenario describes faults as an explicit schedule ("at 120 ms,
//! client 2's connection drops"; "client 1's 7th request is applied and its
//! reply lost"), as rates (per request, or per client per second), or both;
//! in swarm mode the seed itself decides which kinds of fault are on and how
//! often. Before a run, [`FaultPlan::materialize`] turns the plan into a
//! concrete, time-ordered list for that seed; per-request faults drawn from
//! rates are recorded by the world as they happen. Both together are the
//! run's exact fault history, which the shrinker cuts down and writes back
//! as an explicit schedule.

pub mod entry;
pub mod plan;
mod rates;

pub use entry::FaultEntry;
pub use plan::{Drawn, FaultPlan, RequestFaults};
pub use rates::{two_numbers, FaultRates, MsRange};

use serde::{Deserialize, Serialize};
use std::fmt;

/// One fault. Durations are in simulated milliseconds.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// The connection drops: requests in flight fail with ConnectionLoss
    /// (each one applied or not, depending on how far it got); reconnecting
    /// fails for `down_ms`.
    Disconnect { down_ms: u64 },
    /// The connection goes silent for `down_ms` (a black hole: no reset,
    /// no close): what either end sends is lost, the server hears nothing
    /// from the session (its timer runs), and the client notices only at
    /// its read timeout (Java: two thirds of the session timeout without a
    /// byte heard), then fails what is in flight with ConnectionLoss; each
    /// reconnect attempt while the hole lasts hangs for the connect timeout
    /// (Java: the session timeout divided by the number of servers).
    Silent { down_ms: u64 },
    /// The server applies the client's request, then the connection drops
    /// before the reply leaves (connection loss after apply).
    LoseReply { down_ms: u64 },
    /// The client's request is lost before the server applies it and the
    /// connection drops (connection loss before apply).
    LoseRequest { down_ms: u64 },
    /// The server expires the session now; the client learns it when it
    /// next hears from the server.
    Expire,
    /// The client process stops for `pause_ms` (a GC pause): no pings, no
    /// processing, its application frozen.
    Pause { pause_ms: u64 },
    /// Opt-in: one of the client's armed watches fires although nothing
    /// changed (beyond ZooKeeper's guarantees).
    SpuriousWatch,
    /// Opt-in: for `window_ms`, notifications to the client travel
    /// `delay_ms` slower than replies, so they arrive out of order.
    DelayWatches { delay_ms: u64, window_ms: u64 },
    /// The server's container reaper runs now.
    Reap,
    /// Ensemble: for `window_ms`, follower `server` applies each commit
    /// `delay_ms` later than its usual lag (`timing.apply_lag_ms`), in log
    /// order, so its clients' replies and watches lag. A `delay_ms` of
    /// tickTime × syncLimit or more means the follower hears nothing from
    /// its leader that long: it drops out then (its clients' connections
    /// close), syncs again and serves, and the spike ends.
    LagSpike {
        server: usize,
        delay_ms: u64,
        window_ms: u64,
    },
    /// Ensemble: `server` crashes: its connections drop (its clients
    /// reconnect elsewhere); it restarts after `down_ms`, catching up with
    /// the leader before it serves. A crashed leader means an election.
    ServerCrash { server: usize, down_ms: u64 },
    /// Ensemble: `server` is cut off from the leader for `down_ms`: it
    /// applies and commits nothing but serves stale reads until it notices,
    /// `detect_ms` later (default: tickTime × syncLimit, see
    /// `WorldConfig::leader_loss_detect_ms`; in swarm mode drawn around the
    /// session timeout), then stops serving (its clients move); it rejoins
    /// when the partition heals. A partitioned leader means an election:
    /// the others notice it is gone when it notices it is cut off.
    Partition {
        server: usize,
        down_ms: u64,
        detect_ms: Option<u64>,
    },
    /// Ensemble: `server` freezes for `down_ms` (SIGSTOP, a long GC pause):
    /// it reads, applies and answers nothing, but its connections stay
    /// open, so its clients hang until their own read timeout and then
    /// move; an attempt to connect to it hangs until the connect timeout.
    /// A frozen leader means an election once the followers notice
    /// (tickTime × syncLimit), its clients are not closed then. When it
    /// thaws it reads what waited; if it was frozen past tickTime ×
    /// syncLimit (its leader dropped it, or it lost its leadership) it
    /// first closes every connection and catches up, as a partition's
    /// server does.
    Freeze { server: usize, down_ms: u64 },
    /// Ensemble: the leader is lost (no write commits); when the followers
    /// notice (tickTime × syncLimit later) every server closes every
    /// client connection, and `window_ms` after that the most up-to-date
    /// other server leads (ties: lowest index).
    LeaderChange { window_ms: u64 },
}

impl Fault {
    /// True for the faults that may be tied to a client's n-th request.
    pub fn is_per_request(&self) -> bool {
        matches!(self, Fault::LoseReply { .. } | Fault::LoseRequest { .. })
    }

    /// True for the faults that strike a server of an ensemble rather than
    /// a client.
    pub fn is_ensemble(&self) -> bool {
        matches!(
            self,
            Fault::LagSpike { .. }
                | Fault::ServerCrash { .. }
                | Fault::Partition { .. }
                | Fault::Freeze { .. }
                | Fault::LeaderChange { .. }
        )
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Disconnect { down_ms } => write!(f, "disconnect (down {down_ms} ms)"),
            Fault::Silent { down_ms } => write!(f, "connection goes silent for {down_ms} ms"),
            Fault::LoseReply { down_ms } => {
                write!(f, "lose the reply after apply (down {down_ms} ms)")
            }
            Fault::LoseRequest { down_ms } => {
                write!(f, "lose the request before apply (down {down_ms} ms)")
            }
            Fault::Expire => write!(f, "expire the session"),
            Fault::Pause { pause_ms } => write!(f, "pause for {pause_ms} ms"),
            Fault::SpuriousWatch => write!(f, "spurious watch notification"),
            Fault::DelayWatches {
                delay_ms,
                window_ms,
            } => {
                write!(f, "delay notifications by {delay_ms} ms for {window_ms} ms")
            }
            Fault::Reap => write!(f, "run the container reaper"),
            Fault::LagSpike {
                server,
                delay_ms,
                window_ms,
            } => write!(
                f,
                "server {server}'s applies lag {delay_ms} ms more for {window_ms} ms"
            ),
            Fault::ServerCrash { server, down_ms } => {
                write!(f, "server {server} crashes (down {down_ms} ms)")
            }
            Fault::Partition {
                server,
                down_ms,
                detect_ms,
            } => {
                write!(
                    f,
                    "server {server} is cut off from the leader for {down_ms} ms"
                )?;
                match detect_ms {
                    Some(ms) => write!(f, " (notices after {ms} ms)"),
                    None => Ok(()),
                }
            }
            Fault::Freeze { server, down_ms } => {
                write!(f, "server {server} freezes for {down_ms} ms")
            }
            Fault::LeaderChange { window_ms } => {
                write!(f, "leader change (no leader for {window_ms} ms)")
            }
        }
    }
}

/// When a scheduled fault strikes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Trigger {
    /// At this simulated time, in ms since the start of the run.
    AtMs(f64),
    /// When the server receives the client's n-th request (counting from 1).
    Request(u64),
}

/// A fault for one client at one moment; in TOML and JSON a flat
/// [`FaultEntry`] (`at_ms = 120.5, client = 2, fault = "disconnect", down_ms = 30`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "FaultEntry", into = "FaultEntry")]
pub struct ScheduledFault {
    pub trigger: Trigger,
    pub client: usize,
    pub fault: Fault,
}

impl ScheduledFault {
    /// The time in ns, for time-triggered faults.
    pub fn at_ns(&self) -> Option<u64> {
        match self.trigger {
            Trigger::AtMs(ms) => Some(ms_to_ns(ms)),
            Trigger::Request(_) => None,
        }
    }
}

impl fmt::Display for ScheduledFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.fault.is_ensemble() {
            if let Trigger::AtMs(ms) = self.trigger {
                return write!(f, "at {ms} ms: {}", self.fault);
            }
        }
        match self.trigger {
            Trigger::AtMs(ms) => write!(f, "at {ms} ms, c{}: {}", self.client, self.fault),
            Trigger::Request(n) => write!(f, "c{}'s request #{n}: {}", self.client, self.fault),
        }
    }
}

/// Milliseconds (possibly fractional) to whole nanoseconds.
pub fn ms_to_ns(ms: f64) -> u64 {
    (ms * 1e6).round().max(0.0) as u64
}

/// Nanoseconds to milliseconds, exactly representable for any run length.
pub fn ns_to_ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}
