//! The harness of the client conformance test: every sequence of
//! [`sequences`] runs once on zkcheck's simulated `zookeeper-client`
//! ([`sim_side`]) and once on the real crate against a real ZooKeeper
//! ([`real_side`]); each run yields a transcript, one normalised line per
//! step, and the two transcripts must be equal line for line.
//!
//! The transcripts the real server gave are pinned under `pinned/` (one
//! file per sequence): without a server the simulated side is compared with
//! those, so the simulated client cannot drift from ZooKeeper unnoticed;
//! with a server the pins are checked against the server too.

pub mod acl_sequences;
pub mod lock_sequences;
pub mod persistent_sequences;
pub mod real_side;
pub mod sequences;
pub mod sim_side;
pub mod timing_sequences;

use std::fmt::Write as _;
use std::path::PathBuf;

/// The command that runs the comparisons with a real server.
pub const HOW_TO_RUN: &str = "scripts/zk-server start; \
     cargo test -p zkcheck-zookeeper-client --test conformance -- --include-ignored";

/// One behaviour, written once (see [`sequences`]) and run on both clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Sequence {
    CreateModes,
    SequentialNames,
    Errors,
    DataVersions,
    CheckStat,
    Children,
    Watches,
    Multi,
    MultiReader,
    CheckWriter,
    Sync,
    Chroot,
    LossAfterApply,
    LossBeforeApply,
    Expiry,
    Lock,
    LockLossAfterApply,
    LockLossBeforeApply,
    LockExpiry,
    LockCustomLoss,
    LockCancelledLoss,
    PersistentWatches,
    PersistentLoss,
    PersistentExpiry,
    MoreReads,
    MoreReadsLoss,
    MoreReadsExpiry,
    Acl,
    AclLoss,
    AclExpiry,
    IdleSilence,
}

impl Sequence {
    pub const ALL: [Sequence; 31] = [
        Sequence::CreateModes,
        Sequence::SequentialNames,
        Sequence::Errors,
        Sequence::DataVersions,
        Sequence::CheckStat,
        Sequence::Children,
        Sequence::Watches,
        Sequence::Multi,
        Sequence::MultiReader,
        Sequence::CheckWriter,
        Sequence::Sync,
        Sequence::Chroot,
        Sequence::LossAfterApply,
        Sequence::LossBeforeApply,
        Sequence::Expiry,
        Sequence::Lock,
        Sequence::LockLossAfterApply,
        Sequence::LockLossBeforeApply,
        Sequence::LockExpiry,
        Sequence::LockCustomLoss,
        Sequence::LockCancelledLoss,
        Sequence::PersistentWatches,
        Sequence::PersistentLoss,
        Sequence::PersistentExpiry,
        Sequence::MoreReads,
        Sequence::MoreReadsLoss,
        Sequence::MoreReadsExpiry,
        Sequence::Acl,
        Sequence::AclLoss,
        Sequence::AclExpiry,
        Sequence::IdleSilence,
    ];

    /// A short name: the pinned file's and the root node's.
    pub fn name(self) -> &'static str {
        match self {
            Sequence::CreateModes => "create-modes",
            Sequence::SequentialNames => "sequential-names",
            Sequence::Errors => "errors",
            Sequence::DataVersions => "data-versions",
            Sequence::CheckStat => "check-stat",
            Sequence::Children => "children",
            Sequence::Watches => "watches",
            Sequence::Multi => "multi",
            Sequence::MultiReader => "multi-reader",
            Sequence::CheckWriter => "check-writer",
            Sequence::Sync => "sync",
            Sequence::Chroot => "chroot",
            Sequence::LossAfterApply => "loss-after-apply",
            Sequence::LossBeforeApply => "loss-before-apply",
            Sequence::Expiry => "expiry",
            Sequence::Lock => "lock",
            Sequence::LockLossAfterApply => "lock-loss-after-apply",
            Sequence::LockLossBeforeApply => "lock-loss-before-apply",
            Sequence::LockExpiry => "lock-expiry",
            Sequence::LockCustomLoss => "lock-custom-loss",
            Sequence::LockCancelledLoss => "lock-cancelled-loss",
            Sequence::PersistentWatches => "persistent-watches",
            Sequence::PersistentLoss => "persistent-loss",
            Sequence::PersistentExpiry => "persistent-expiry",
            Sequence::MoreReads => "more-reads",
            Sequence::MoreReadsLoss => "more-reads-loss",
            Sequence::MoreReadsExpiry => "more-reads-expiry",
            Sequence::Acl => "acl",
            Sequence::AclLoss => "acl-loss",
            Sequence::AclExpiry => "acl-expiry",
            Sequence::IdleSilence => "idle-silence",
        }
    }
}

/// What one run of a sequence did, a normalised line per step.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Transcript {
    pub lines: Vec<String>,
}

impl Transcript {
    /// Records step `label`'s outcome.
    pub fn step(&mut self, label: &str, outcome: impl AsRef<str>) {
        self.lines.push(format!("{label}: {}", outcome.as_ref()));
    }

    pub fn text(&self) -> String {
        let mut text = String::new();
        for line in &self.lines {
            text.push_str(line);
            text.push('\n');
        }
        text
    }

    pub fn parse(text: &str) -> Transcript {
        Transcript {
            lines: text.lines().map(str::to_string).collect(),
        }
    }
}

/// The two transcripts side by side from their first difference on, or
/// `None` if they are equal.
pub fn difference(
    left_name: &str,
    left: &Transcript,
    right_name: &str,
    right: &Transcript,
) -> Option<String> {
    let steps = left.lines.len().max(right.lines.len());
    let first = (0..steps).find(|&i| left.lines.get(i) != right.lines.get(i))?;
    let mut report = format!("the transcripts differ first at line {}:\n", first + 1);
    for i in 0..steps {
        let a = left.lines.get(i).map_or("(nothing)", String::as_str);
        let b = right.lines.get(i).map_or("(nothing)", String::as_str);
        if a == b {
            let _ = writeln!(report, "    {a}");
        } else {
            let _ = writeln!(report, "  - {left_name}: {a}\n  + {right_name}: {b}");
        }
    }
    Some(report)
}

/// A difference between the simulated client and ZooKeeper 3.8 that is
/// known and reported but not decided yet: the step (its label) where the
/// two transcripts may differ, and why. The comparisons accept it, say so,
/// and fail once it no longer occurs (remove the entry then).
pub struct KnownDifference {
    pub sequence: Sequence,
    pub step: &'static str,
    pub why: &'static str,
}

pub const KNOWN_DIFFERENCES: &[KnownDifference] = &[];

/// Compares ZooKeeper's transcript of `sequence` with the simulated one:
/// equal but for [`KNOWN_DIFFERENCES`] (returned, one line each), or the
/// report of what else differs (or of a known difference gone).
pub fn compare_with_known(
    sequence: Sequence,
    real_name: &str,
    real: &Transcript,
    sim: &Transcript,
) -> Result<Vec<String>, String> {
    let Some(report) = difference(real_name, real, "sim", sim) else {
        return stale_known(sequence, &[]);
    };
    if real.lines.len() != sim.lines.len() {
        return Err(report);
    }
    let mut seen = Vec::new();
    for (real_line, sim_line) in real.lines.iter().zip(&sim.lines) {
        if real_line == sim_line {
            continue;
        }
        let at_step = |known: &&KnownDifference| {
            let prefix = format!("{}: ", known.step);
            known.sequence == sequence
                && real_line.starts_with(&prefix)
                && sim_line.starts_with(&prefix)
        };
        match KNOWN_DIFFERENCES.iter().find(at_step) {
            Some(known) => seen.push(known),
            _ => return Err(report),
        }
    }
    stale_known(sequence, &seen)?;
    Ok(seen
        .iter()
        .map(|known| format!("{}, step `{}`: {}", sequence.name(), known.step, known.why))
        .collect())
}

/// Fails if a known difference of `sequence` did not occur.
fn stale_known(sequence: Sequence, seen: &[&KnownDifference]) -> Result<Vec<String>, String> {
    for known in KNOWN_DIFFERENCES
        .iter()
        .filter(|known| known.sequence == sequence)
    {
        if !seen.iter().any(|seen| std::ptr::eq(*seen, known)) {
            return Err(format!(
                "{}: the known difference at step `{}` ({}) no longer occurs: remove it from \
                 KNOWN_DIFFERENCES",
                sequence.name(),
                known.step,
                known.why
            ));
        }
    }
    Ok(Vec::new())
}

/// Where the real server's transcript of `sequence` is pinned.
pub fn pinned_path(sequence: Sequence) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/conformance_support/pinned")
        .join(format!("{}.txt", sequence.name()))
}

/// The pinned transcript of `sequence` (panics saying how to make it).
pub fn pinned(sequence: Sequence) -> Transcript {
    let path = pinned_path(sequence);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| {
        panic!(
            "no pinned transcript {} ({error}); record it from a real server with \
             CONFORMANCE_PIN=write and {HOW_TO_RUN}",
            path.display()
        )
    });
    Transcript::parse(&text)
}

/// Whether this run (re)writes the pins from the real server.
pub fn writing_pins() -> bool {
    std::env::var("CONFORMANCE_PIN").is_ok_and(|value| value == "write")
}
