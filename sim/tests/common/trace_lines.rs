//! Reading a run's trace in the ensemble tests (`ensemble_faults.rs`,
//! `ensemble_freeze.rs`, `ensemble_leader_loss.rs`): the world's or the clients' lines that
//! contain a text and their times, and the trace a failed assertion shows.

use zk_sim::world::{RunReport, SimRecipe, Simulation, TraceLine};

pub const MS: u64 = 1_000_000;

/// Runs `seed`, which must pass.
pub fn passing_run<R: SimRecipe>(sim: &Simulation<R>, seed: u64) -> RunReport {
    let report = sim.run(seed);
    assert!(
        report.passed(),
        "seed {seed}: {:?}\n{}",
        report.violations,
        text(&report.trace.lines)
    );
    report
}

/// The trace's first 400 lines, for an assertion's message.
pub fn text(lines: &[TraceLine]) -> String {
    let lines: Vec<String> = lines.iter().take(400).map(|l| l.to_string()).collect();
    lines.join("\n")
}

/// The times of the world-level lines containing `text`.
pub fn world_lines(lines: &[TraceLine], text: &str) -> Vec<u64> {
    lines
        .iter()
        .filter(|line| line.client.is_none() && line.text.contains(text))
        .map(|line| line.at_ns)
        .collect()
}

/// The time of the first world-level line containing `needle`.
pub fn first_world_line(lines: &[TraceLine], needle: &str) -> u64 {
    world_lines(lines, needle)
        .first()
        .copied()
        .unwrap_or_else(|| panic!("no line with {needle:?}\n{}", text(lines)))
}

/// The client lines containing `text`: (time, client).
pub fn client_lines(lines: &[TraceLine], text: &str) -> Vec<(u64, usize)> {
    lines
        .iter()
        .filter(|line| line.client.is_some() && line.text.contains(text))
        .filter_map(|line| Some((line.at_ns, line.client?)))
        .collect()
}

/// `at_ns` is `ms` (the scheduler wakes up to a few µs late).
pub fn near(at_ns: u64, ms: u64) -> bool {
    (ms * MS..ms * MS + MS / 100).contains(&at_ns)
}
