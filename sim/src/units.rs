//! The plain units every layer of the simulator names: a client's index
//! and simulated time, and how a time is printed.

/// Index of a simulated client.
pub type ClientIndex = usize;

/// Simulated time in nanoseconds since the start of the run.
pub type SimNanos = u64;

/// Formats simulated time the way traces and reports show it: milliseconds
/// with microsecond precision.
pub fn fmt_time(at: SimNanos) -> String {
    format!("{}.{:03}ms", at / 1_000_000, (at / 1_000) % 1_000)
}
