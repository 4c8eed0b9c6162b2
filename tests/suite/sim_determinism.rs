//! Determinism: the same seed gives a byte-identical trace, twice in one
//! process for 50 seeds of every shipped scenario (the release binary checks 200
//! seeds of four scenarios in `scripts/ci-sweeps`), and in two separate
//! processes (this test binary runs itself again as a child that prints a
//! trace).

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use crate::common::{builtin, shipped_scenarios};
use std::path::{Path, PathBuf};
use std::process::Command;
use zk_sim::scenario::Scenario;

/// The built-in recipes, as scenario files name them.
const SEEDS: u64 = 50;

#[test]
fn every_shipped_scenario_gives_the_same_trace_twice_for_50_seeds() {
    let files = shipped_scenarios();
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunks: Vec<&[PathBuf]> = files.chunks(files.len().div_ceil(workers)).collect();
    std::thread::scope(|scope| {
        for chunk in chunks {
            scope.spawn(move || {
                for file in chunk {
                    let scenario = Scenario::load(file, builtin()).unwrap();
                    let runner = scenario.runner();
                    for seed in 0..SEEDS {
                        let first = runner.run(seed, true);
                        let second = runner.run(seed, true);
                        assert!(!first.trace.lines.is_empty());
                        assert_eq!(
                            first.trace.hash(),
                            second.trace.hash(),
                            "{} seed {seed} differs between two runs",
                            file.display()
                        );
                    }
                }
            });
        }
    });
}

/// When set, the test below prints a trace instead of checking (child mode).
const CHILD_ENV: &str = "ZK_SIM_PRINT_TRACE";
const BEGIN: &str = "=== trace begins ===";
const END: &str = "=== trace ends ===";

/// The trace the child printed, without the test harness's own lines.
fn printed_trace(stdout: &[u8]) -> String {
    let text = String::from_utf8_lossy(stdout);
    let start = text.find(BEGIN).expect("the child printed a trace") + BEGIN.len();
    let end = text.find(END).expect("the trace ends");
    text[start..end].to_string()
}

#[test]
fn two_processes_print_byte_identical_traces() {
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        let (file, seed) = spec.rsplit_once('@').expect("file@seed");
        let report = Scenario::load(Path::new(file), builtin())
            .unwrap()
            .runner()
            .run(seed.parse().unwrap(), true);
        print!("{BEGIN}\n{}{END}\n", report.trace);
        return;
    }
    let exe = std::env::current_exe().unwrap();
    // The test's name as libtest knows it: its module path without the crate.
    let name = match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::two_processes_print_byte_identical_traces"),
        None => "two_processes_print_byte_identical_traces".to_string(),
    };
    for (file, seed) in [
        ("lock-fixed.toml", 7),
        ("queue-fixed.toml", 3),
        ("bugs/bug8-pause-two-holders.toml", 11),
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios")
            .join(file);
        let run = || {
            let output = Command::new(&exe)
                .args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
                .env(CHILD_ENV, format!("{}@{seed}", path.display()))
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
            printed_trace(&output.stdout)
        };
        let (first, second) = (run(), run());
        assert!(
            first.lines().count() > 10,
            "the child printed too short a trace: {first}"
        );
        assert!(
            first == second,
            "{file} seed {seed}: traces differ between two processes"
        );
    }
}
