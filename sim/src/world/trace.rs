//! The run's trace: one line per event, with the simulated time and the
//! client. Recorded only when asked for (formatting costs more than the
//! simulation itself); its hash proves two runs identical.

use crate::oracles::{fmt_time, SimNanos};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The kind of a trace line (the `replay` command maps kinds to log levels).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum TraceKind {
    /// An application call, an outcome, a phase change, a fault: the story.
    Call,
    Outcome,
    Fault,
    Phase,
    /// Session state changes seen by a client.
    Session,
    /// A request applied by the server, with its result.
    Apply,
    /// Network and timer details.
    Send,
    Deliver,
    Timer,
    /// An event the application's own code logged (`tracing`).
    App,
}

impl TraceKind {
    fn label(self) -> &'static str {
        match self {
            TraceKind::Call => "call",
            TraceKind::Outcome => "outcome",
            TraceKind::Fault => "FAULT",
            TraceKind::Phase => "phase",
            TraceKind::Session => "session",
            TraceKind::Apply => "apply",
            TraceKind::Send => "send",
            TraceKind::Deliver => "deliver",
            TraceKind::Timer => "timer",
            TraceKind::App => "app",
        }
    }
}

/// One line of the trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceLine {
    pub at_ns: SimNanos,
    pub client: Option<usize>,
    pub kind: TraceKind,
    pub text: String,
}

impl fmt::Display for TraceLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let who = self
            .client
            .map_or_else(|| "--".to_string(), |c| format!("c{c}"));
        write!(
            f,
            "{:>14} {who:>4} {:<8} {}",
            fmt_time(self.at_ns),
            self.kind.label(),
            self.text
        )
    }
}

/// The lines of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trace {
    pub enabled: bool,
    pub lines: Vec<TraceLine>,
}

impl Trace {
    pub fn new(enabled: bool) -> Trace {
        Trace {
            enabled,
            lines: Vec::new(),
        }
    }

    pub fn push(&mut self, at_ns: SimNanos, client: Option<usize>, kind: TraceKind, text: String) {
        self.lines.push(TraceLine {
            at_ns,
            client,
            kind,
            text,
        });
    }

    /// FNV-1a over the printed trace, one line per event: equal hashes mean
    /// byte-identical traces.
    pub fn hash(&self) -> u64 {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for line in &self.lines {
            for byte in line.to_string().bytes().chain(std::iter::once(b'\n')) {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
        }
        hash
    }
}

impl Trace {
    /// Where two runs of one seed part: the first event that differs, as
    /// "event N: `first run's line` / `second run's line`" (a missing line
    /// is "(the trace ends)"); None if the traces are equal.
    pub fn first_divergence(&self, other: &Trace) -> Option<String> {
        let length = self.lines.len().max(other.lines.len());
        (0..length).find_map(|index| {
            let line = |trace: &Trace| {
                trace
                    .lines
                    .get(index)
                    .map_or_else(|| "(the trace ends)".to_string(), ToString::to_string)
            };
            let (first, second) = (line(self), line(other));
            (first != second).then(|| format!("event {}: `{first}` / `{second}`", index + 1))
        })
    }
}

impl fmt::Display for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in &self.lines {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}
