//! The declared range of every number a scenario file holds, and the caps
//! on a run's size. A value outside is refused with the range in the
//! message (see `super::validate`); nothing is clamped silently.
//!
//! The caps keep every accepted scenario finite and small enough to run:
//! simulated time in nanoseconds never overflows, a run's calls and faults
//! are bounded, and a replay's trace fits in memory.

use std::ops::RangeInclusive;

/// Most clients a catalog entry's model check may have.
pub const MAX_MODEL_CLIENTS: usize = 4;

/// One simulated day: the longest duration any setting may have.
pub const MAX_MS: u64 = 86_400_000;
/// Clients of one run.
pub const CLIENTS: RangeInclusive<u64> = 1..=256;
/// Per-client work: hold cycles, queue items, barrier rounds.
pub const CYCLES: RangeInclusive<u64> = 1..=100_000;
pub const ITEMS: RangeInclusive<u64> = 1..=100_000;
pub const ROUNDS: RangeInclusive<u64> = 1..=10_000;
/// Calls of one run at most (clients × per-client work).
pub const MAX_RUN_CALLS: u64 = 1_000_000;
/// Expected faults of one run at most (rates × clients × fault phase, plus
/// the explicit schedule).
pub const MAX_RUN_FAULTS: f64 = 100_000.0;
/// Entries of `[[faults.schedule]]`.
pub const MAX_SCHEDULED_FAULTS: usize = 100_000;
/// A fault tied to a client's n-th request.
pub const REQUEST_NUMBER: RangeInclusive<u64> = 1..=1_000_000_000;
/// Timed fault rates, per client per simulated second.
pub const MAX_RATE_PER_S: f64 = 1_000.0;
/// Fault phase and heal phase.
pub const PHASE_MS: RangeInclusive<u64> = 1..=MAX_MS;
pub const SESSION_TIMEOUT_MS: RangeInclusive<u64> = 1..=MAX_MS;
pub const TICK_TIME_MS: RangeInclusive<u64> = 1..=MAX_MS;
/// 0: the reaper runs only when a fault says so.
pub const REAPER_INTERVAL_MS: RangeInclusive<u64> = 0..=MAX_MS;
pub const SETTLE_MS: RangeInclusive<u64> = 0..=MAX_MS;
/// Servers in an ensemble; odd only (1, 3, 5 or 7: the validator refuses
/// an even count).
pub const ENSEMBLE: RangeInclusive<usize> = 1..=7;
pub const TAKE_WAIT_MS: RangeInclusive<u64> = 1..=MAX_MS;
/// One-way latency, in microseconds (ten seconds; spikes a minute).
pub const LATENCY_US: RangeInclusive<u64> = 0..=10_000_000;
pub const SPIKE_US: RangeInclusive<u64> = 0..=60_000_000;
pub const PROBABILITY: RangeInclusive<f64> = 0.0..=1.0;
pub const HERD_BOUND: RangeInclusive<u64> = 1..=1_000;
pub const SEQUENCE_START: RangeInclusive<i64> = 0..=i32::MAX as i64;
pub const MAX_LEASES: RangeInclusive<u64> = 1..=1_000;
/// A scenario's name: one line of this many characters at most.
pub const MAX_NAME_CHARS: usize = 100;
pub const MAX_DESCRIPTION_CHARS: usize = 4_096;
