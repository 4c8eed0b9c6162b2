//! The harness's own limits are never blamed on the recipe (issue 30):
//! - a follower lag that outlasts the heal: the heal flushes the applies a
//!   lag spike delayed (every follower in the quorum catches up), so the
//!   fixed lock passes a 41 s spike with a 20 s heal window on every seed;
//! - a hold longer than the heal window: refused by the validator, naming
//!   `heal_ms`;
//! - a heal window too short for a workload that queues (each hold fits,
//!   the queue does not): the verdict names the heal window, not the
//!   recipe (`liveness/heal-window-too-short`), and says what the client
//!   holds and which timer runs instead of "nothing can wake it".

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use std::path::Path;
use zk_sim::scenario::Scenario;

fn builtin() -> &'static zk_sim::scenario::SimRecipes {
    static REGISTRY: std::sync::OnceLock<zk_models::Registry> = std::sync::OnceLock::new();
    REGISTRY
        .get_or_init(zk_models::Registry::builtin)
        .sim_recipes()
}

/// A fixed lock on one server, no faults, with this workload and heal window.
fn lock_scenario(clients: usize, hold_ms: u64, heal_ms: u64) -> String {
    format!(
        r#"description = "fixed lock, long holds"
recipe = "lock"
variant = "fixed"
clients = {clients}
seeds = "0..10"
duration_ms = 1000
heal_ms = {heal_ms}

[config]
path = "/locks"
parents = ["/locks"]

[workload]
cycles = 3
hold_ms = [{hold_ms}, {hold_ms}]
think_ms = [0, 0]

[properties]
check = ["fenced_mutual_exclusion", "liveness", "no_leaks"]
"#
    )
}

#[test]
fn a_lag_spike_that_outlasts_the_heal_is_flushed_at_the_heal() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/lock-fixed-ensemble-lag-outlasts-heal.toml");
    let scenario = Scenario::load(&path, builtin()).expect("the fixture loads");
    let runner = scenario.runner();
    for seed in 0..100 {
        let report = runner.run(seed, false);
        assert!(
            report.passed() && report.vacuous().is_none(),
            "seed {seed}: {:?}",
            report.violations
        );
    }
    // The spike does delay the follower: the heal is what catches it up.
    let trace = runner.run(0, true).trace.to_string();
    assert!(trace.contains("catches up at the heal"), "{trace}");
}

#[test]
fn a_hold_longer_than_the_heal_window_is_refused() {
    let text = lock_scenario(2, 30_000, 20_000);
    let error = Scenario::parse(Path::new("long-hold.toml"), &text, builtin())
        .expect_err("a hold longer than the heal window is refused");
    let shown = error.to_string();
    assert!(shown.contains("heal_ms"), "{shown}");
    assert!(
        shown.contains("the heal window (20000 ms) is shorter than the workload needs"),
        "{shown}"
    );
    assert!(shown.contains("at least 30000"), "{shown}");
    // The same workload with the window it needs is accepted.
    let text = lock_scenario(2, 30_000, 30_000);
    Scenario::parse(Path::new("long-hold.toml"), &text, builtin()).expect("accepted");
}

#[test]
fn a_queue_longer_than_the_heal_window_is_named_as_the_harness() {
    // Each 9 s hold fits a 10 s window; three clients queued behind each
    // other do not: the second holder's hold timer runs past the deadline.
    let text = lock_scenario(3, 9_000, 10_000);
    let scenario =
        Scenario::parse(Path::new("queued-holds.toml"), &text, builtin()).expect("accepted");
    let report = scenario.runner().run(0, false);
    let violation = report
        .violations
        .iter()
        .find(|v| v.signature() == "liveness/heal-window-too-short")
        .unwrap_or_else(|| panic!("not named as the heal window: {:?}", report.violations));
    let shown = violation.to_string();
    for needle in [
        "the heal window (10000 ms) is shorter than the workload needs",
        "the harness's configuration, not the recipe",
        "its Lock was answered Acquired",
        "a 9000 ms hold, think or work time",
    ] {
        assert!(shown.contains(needle), "`{needle}` missing from:\n{shown}");
    }
    assert!(!shown.contains("nothing can wake it"), "{shown}");
}
