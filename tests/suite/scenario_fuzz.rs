//! The scenario parser under random mutation of the shipped scenarios:
//! truncation, deleted lines, values replaced by other types or extreme
//! numbers, unknown keys (at the top, in tables, in schedule entries), junk
//! lines and bytes. Every mutant is either refused with a location (a line
//! in the file or a key) in a short one-line message, or accepted, loads
//! back from its own TOML and, when small, runs one seed without a panic.
//!
//! Deterministic in CI (fixed case count and RNG, no persistence); run it
//! longer with `PROPTEST_CASES=20000 cargo test --release --workspace --test suite scenario_fuzz::`.

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use crate::common::builtin;
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngAlgorithm, TestRng, TestRunner};
use std::path::{Path, PathBuf};
use zk_sim::scenario::Scenario;

/// The built-in recipes, as scenario files name them.
fn shipped() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut files = Vec::new();
    for dir in [root.clone(), root.join("bugs")] {
        for entry in std::fs::read_dir(dir).expect("scenarios/") {
            let path = entry.expect("an entry").path();
            if path.extension().is_some_and(|e| e == "toml") {
                let text = std::fs::read_to_string(&path).expect("a scenario");
                files.push((path, text));
            }
        }
    }
    files.sort();
    files
}

/// Values a fuzzer tries where any value stands.
const VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "18446744073709551615",
    "9223372036854775807",
    "-9223372036854775808",
    "1e308",
    "inf",
    "-inf",
    "nan",
    "0.5",
    "\"\"",
    "\"x\"",
    "\"/\"",
    "\"/a/b/c\"",
    "true",
    "[]",
    "[1]",
    "[20, 1]",
    "[1, 2, 3]",
    "[0, 18446744073709551615]",
    "{}",
    "{ a = 1 }",
    "1979-05-27",
];

const KEYS: &[&str] = &[
    "colour",
    "clients",
    "cycles",
    "rounds",
    "producers",
    "max_leases",
    "barrier_size",
    "pause_ms",
    "down_ms",
    "at_ms",
    "request",
    "client",
    "fault",
    "herd_bound",
    "check",
];

#[derive(Clone, Debug)]
enum Mutation {
    Truncate(usize),
    DeleteLine(usize),
    ReplaceValue(usize, usize),
    InsertKey(usize, usize, usize),
    InsertJunk(usize, String),
    AppendScheduleEntry(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Truncate),
        any::<usize>().prop_map(Mutation::DeleteLine),
        (any::<usize>(), 0..VALUES.len()).prop_map(|(l, v)| Mutation::ReplaceValue(l, v)),
        (any::<usize>(), 0..KEYS.len(), 0..VALUES.len())
            .prop_map(|(l, k, v)| Mutation::InsertKey(l, k, v)),
        (any::<usize>(), "[\\PC\\[\\]=\"#\n]{0,12}").prop_map(|(l, s)| Mutation::InsertJunk(l, s)),
        (0..KEYS.len(), 0..VALUES.len()).prop_map(|(k, v)| Mutation::AppendScheduleEntry(k, v)),
    ]
}

fn apply(text: &str, mutation: &Mutation) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let pick = |n: usize| n % lines.len().max(1);
    match mutation {
        Mutation::Truncate(at) => {
            let mut at = at % (text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            return text[..at].to_string();
        }
        Mutation::DeleteLine(line) => {
            if !lines.is_empty() {
                lines.remove(pick(*line));
            }
        }
        Mutation::ReplaceValue(line, value) => {
            let line = pick(*line);
            if let Some((key, _)) = lines.get(line).and_then(|l| l.split_once('=')) {
                lines[line] = format!("{key}= {}", VALUES[*value]);
            }
        }
        Mutation::InsertKey(line, key, value) => {
            let line = pick(*line);
            lines.insert(line, format!("{} = {}", KEYS[*key], VALUES[*value]));
        }
        Mutation::InsertJunk(line, junk) => {
            let line = pick(*line);
            lines.insert(line, junk.clone());
        }
        Mutation::AppendScheduleEntry(key, value) => {
            lines.push("[[faults.schedule]]".into());
            lines.push("at_ms = 1".into());
            lines.push("fault = \"expire\"".into());
            lines.push(format!("{} = {}", KEYS[*key], VALUES[*value]));
        }
    }
    lines.join("\n") + "\n"
}

/// Small enough to run one seed in a test.
fn small(scenario: &Scenario) -> bool {
    let raw = &scenario.raw;
    let work = u64::from(
        raw.workload
            .cycles
            .max(raw.workload.items)
            .max(raw.workload.rounds),
    );
    raw.clients as u64 * work <= 200 && raw.duration_ms + raw.heal_ms <= 60_000
}

#[test]
fn mutated_scenarios_are_refused_with_a_location_or_run() {
    let files = shipped();
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000);
    let config = Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..Config::default()
    };
    let rng = TestRng::deterministic_rng(RngAlgorithm::ChaCha);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let strategy = (0..files.len(), prop::collection::vec(mutation(), 1..4));
    runner
        .run(&strategy, |(file, mutations)| {
            let (path, original) = &files[file];
            let text = mutations.iter().fold(original.clone(), |t, m| apply(&t, m));
            match Scenario::parse(path, &text, builtin()) {
                Err(error) => {
                    let shown = error.to_string();
                    prop_assert!(
                        error.line > 0 || !error.key.is_empty(),
                        "no location: {shown}"
                    );
                    prop_assert!(error.line <= text.lines().count() + 1, "{shown}");
                    prop_assert!(shown.len() < 1_000 && !shown.contains('\n'), "{shown}");
                }
                Ok(scenario) => {
                    let again = Scenario::parse(path, &scenario.to_toml(), builtin());
                    prop_assert!(again.is_ok(), "{:?}\n{}", again.err(), scenario.to_toml());
                    if small(&scenario) {
                        let _ = scenario.runner().run(1, false);
                    }
                }
            }
            Ok(())
        })
        .unwrap();
}
