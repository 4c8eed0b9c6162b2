//! The progress floor (`RunReport::too_little_progress`): a run whose
//! faults left the workload less than `MIN_GOAL_PERCENT` % of its planned
//! goals is not a pass.
//!
//! Two parts: a scenario whose fault rates stop nearly all progress is
//! refused by `sim` and `sweep` (exit 2, naming the seeds), and (heavy,
//! `#[ignore]`d, run with
//! `cargo test --release --workspace --test suite -- --ignored --nocapture progress_floor::`)
//! every shipped scenario that must pass keeps above the floor on 1,000
//! seeds, printing the lowest share of its plan any seed reached
//! (`ZKCHECK_FLOOR_SEEDS=N` for another count, `ZKCHECK_FLOOR_ONLY=TEXT` for
//! the scenarios whose path contains TEXT).

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use std::path::{Path, PathBuf};
use std::process::Command;
use zk_sim::scenario::Scenario;
use zk_sim::world::{min_goals, MIN_GOAL_PERCENT};
use zkcheck::Registry;

const STARVED: &str = "tests/fixtures/lock-fixed-starved-by-pauses.toml";

fn zkcheck(args: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_zkcheck"))
        .args(args)
        .output()
        .expect("zkcheck runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_floor_is_a_share_of_the_plan_and_at_least_one_goal() {
    assert_eq!(min_goals(0), 0, "an unknown plan has no floor");
    assert_eq!(min_goals(1), 1);
    assert_eq!(min_goals(100), MIN_GOAL_PERCENT);
    assert_eq!(min_goals(101), MIN_GOAL_PERCENT + 1, "rounded up");
}

#[test]
fn a_run_the_faults_starved_is_not_a_pass() {
    let (code, stdout, stderr) = zkcheck(&["sim", STARVED, "--seed", "1"]);
    assert_eq!(code, Some(2), "{stdout}\n{stderr}");
    let all = format!("{stdout}{stderr}");
    assert!(all.contains("too little progress"), "{all}");
    assert!(all.contains("planned goals"), "{all}");
    let (code, stdout, stderr) = zkcheck(&["sweep", STARVED, "--seeds", "0..20"]);
    assert_eq!(code, Some(2), "{stdout}\n{stderr}");
    let all = format!("{stdout}{stderr}");
    assert!(
        all.contains("seed(s) made no progress or too little progress"),
        "{all}"
    );
    assert!(all.contains("of its 600 planned goals"), "{all}");
}

#[test]
fn the_same_scenario_without_its_faults_passes() {
    let text = std::fs::read_to_string(STARVED).expect("the fixture");
    let calm = text.replace("pauses_per_s = 20.0", "pauses_per_s = 0.0");
    assert_ne!(calm, text, "the fixture sets its pause rate");
    let dir = std::env::temp_dir().join(format!("zkcheck-floor-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let file = dir.join("calm.toml");
    std::fs::write(&file, calm).expect("written");
    let (code, stdout, stderr) = zkcheck(&["sweep", file.to_str().unwrap(), "--seeds", "0..20"]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
}

/// The fixed Curator lock with a timed acquire (`acquire(5 ms)`): under
/// contention most attempts give up on the recipe's own timer, correctly
/// (the lock deletes its node and answers `TimedOut`). That is real work,
/// judged by every property, not a run the faults starved: it counts toward
/// the floor with the acquisitions, and no seed is refused.
#[test]
fn a_timed_acquire_that_gives_up_is_not_too_little_progress() {
    use zk_recipes::curator_lock::{FixedCuratorLock, LockCall};
    use zkcheck::{HoldCalls, RecipeEntry, RecipeKind, Variant};
    let calls = HoldCalls::new(
        LockCall::Acquire {
            timeout_ms: Some(5),
        },
        LockCall::Release,
    );
    let timed = Variant::hold("fixed", "acquire(5 ms)", calls, |c| {
        FixedCuratorLock::new(c.path.clone(), c.unique_id)
    });
    let registry = Registry::builtin().with(
        RecipeEntry::new("timed_lock", RecipeKind::ExclusiveLock, "/locks/key").variant(timed),
    );
    let text = r#"description = "a timed acquire under contention"
recipe = "timed_lock"
variant = "fixed"
clients = 10
seeds = "0..20"
duration_ms = 2000
heal_ms = 20000

[config]
path = "/locks/key"

[workload]
cycles = 20
hold_ms = [50, 100]
think_ms = [0, 5]

[properties]
check = ["mutual_exclusion", "liveness", "no_leaks"]
"#;
    let scenario = Scenario::parse(Path::new("timed-lock.toml"), text, registry.sim_recipes())
        .unwrap_or_else(|error| panic!("{error}"));
    let runner = scenario.runner();
    let mut below_on_goals_alone = 0;
    for seed in 0..20 {
        let report = runner.run(seed, false);
        assert!(report.passed(), "seed {seed}: {:?}", report.violations);
        assert!(
            report.vacuous().is_none(),
            "seed {seed}: {:?} ({:?})",
            report.vacuous(),
            report.stats
        );
        if report.stats.goals < min_goals(report.stats.planned_goals) {
            below_on_goals_alone += 1;
        }
    }
    assert!(
        below_on_goals_alone > 0,
        "every seed reached the floor on acquisitions alone: the case is not exercised"
    );
}

/// Every shipped scenario a sweep must pass, with the variant it passes
/// with: fixed top-level and ensemble scenarios, and every bug's fix.
fn passing_scenarios() -> Vec<(PathBuf, Option<&'static str>)> {
    let mut found = Vec::new();
    for dir in ["scenarios", "scenarios/ensemble", "scenarios/bugs"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .expect("the scenarios")
            .map(|entry| entry.expect("an entry").path())
            .filter(|path| path.extension().is_some_and(|e| e == "toml"))
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).expect("readable");
            if dir == "scenarios/bugs" {
                found.push((file, Some("fixed")));
            } else if text.contains("variant = \"fixed\"") {
                found.push((file, None));
            }
        }
    }
    found
}

/// The lowest share of its plan (goals reached / planned) over `seeds`,
/// with its seed, and the seeds under the floor.
fn lowest_progress(file: &Path, variant: Option<&str>, seeds: u64) -> (f64, u64, Vec<u64>) {
    let registry = Registry::builtin();
    let mut scenario = Scenario::load(file, registry.sim_recipes()).expect("a shipped scenario");
    if let Some(variant) = variant {
        scenario = scenario.with_variant(variant).expect("its fixed variant");
    }
    let workers = 2;
    let results: Vec<(f64, u64, Vec<u64>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|worker| {
                let scenario = &scenario;
                scope.spawn(move || {
                    let runner = scenario.runner();
                    let mut lowest = (f64::INFINITY, 0, Vec::new());
                    for seed in (worker..seeds).step_by(workers as usize) {
                        let report = runner.run(seed, false);
                        let stats = &report.stats;
                        let share = stats.goals as f64 / stats.planned_goals.max(1) as f64;
                        if report.passed() && share < lowest.0 {
                            (lowest.0, lowest.1) = (share, seed);
                        }
                        if report.passed() && report.vacuous().is_some() {
                            lowest.2.push(seed);
                        }
                    }
                    lowest
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("no panic"))
            .collect()
    });
    let mut lowest = (f64::INFINITY, 0, Vec::new());
    for (share, seed, under) in results {
        if share < lowest.0 {
            (lowest.0, lowest.1) = (share, seed);
        }
        lowest.2.extend(under);
    }
    lowest.2.sort_unstable();
    lowest
}

#[test]
#[ignore = "heavy: 1,000 seeds of every shipped scenario; run with --release -- --ignored"]
fn no_shipped_scenario_comes_near_the_floor() {
    let seeds: u64 = std::env::var("ZKCHECK_FLOOR_SEEDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000);
    let mut under = Vec::new();
    println!("lowest share of the plan reached by a passing seed, over {seeds} seeds (floor {MIN_GOAL_PERCENT}%):");
    let only = std::env::var("ZKCHECK_FLOOR_ONLY").unwrap_or_default();
    for (file, variant) in passing_scenarios() {
        if !file.to_string_lossy().contains(&only) {
            continue;
        }
        let (share, seed, seeds_under) = lowest_progress(&file, variant, seeds);
        println!(
            "{:>7.1}%  seed {seed:>5}  {}{}",
            share * 100.0,
            file.display(),
            variant.map_or(String::new(), |v| format!(" --variant {v}"))
        );
        if !seeds_under.is_empty() {
            under.push(format!("{}: seeds {seeds_under:?}", file.display()));
        }
    }
    assert!(under.is_empty(), "below the floor: {under:#?}");
}
