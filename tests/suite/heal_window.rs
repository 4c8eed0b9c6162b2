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

// ---- heal feasibility (issue 40, item 1): settings whose effect outlasts
// the heal are refused, naming the key and the bound ----

/// `lock_scenario(3, 100, 10_000)` (a fixed lock, 100 ms holds, a 10 s
/// heal) with `extra` appended and `[timing]` lines added.
fn with(extra: &str, timing: &str, ensemble: bool) -> String {
    let mut text = lock_scenario(3, 100, 10_000);
    if ensemble {
        text = format!("ensemble = 3\n{text}");
    }
    format!("{text}\n[timing]\n{timing}\n{extra}")
}

/// Parses `text`; it must be refused naming `key` on its line, with each
/// of `words` in the message.
fn refused(text: &str, key: &str, words: &[&str]) {
    let error = Scenario::parse(Path::new("heal.toml"), text, builtin())
        .expect_err("the world cannot settle before the deadline: refused");
    assert_eq!(error.key, key, "{error}");
    let line = text
        .lines()
        .position(|l| l.starts_with(key.rsplit('.').next().unwrap()))
        .map(|i| i + 1);
    assert!(error.line > 0, "{error}");
    if let Some(line) = line {
        assert_eq!(error.line, line, "{error}");
    }
    let shown = error.to_string();
    for word in words {
        assert!(shown.contains(word), "`{word}` missing from: {shown}");
    }
}

fn accepted(text: &str) {
    Scenario::parse(Path::new("heal.toml"), text, builtin()).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_silence_that_outlasts_the_heal_is_refused() {
    let silent = |down_ms: u64| {
        format!(
            "[[faults.schedule]]\nat_ms = 900\nclient = 0\nfault = \"silent\"\ndown_ms = {down_ms}\n"
        )
    };
    // Ends 100 ms + 30 s after the heal starts: past the 10 s window.
    refused(
        &with(&silent(30_000), "", false),
        "faults.schedule[0].down_ms",
        &["silence", "heal_ms (10000 ms)", "cannot settle"],
    );
    accepted(&with(&silent(2_000), "", false));
    // Drawn by rate: the longest drawn silence must fit.
    let rates = "[faults.rates]\nsilences_per_s = 0.1\ndown_ms = [0, 20000]\n";
    refused(
        &with(rates, "", false),
        "faults.rates.down_ms",
        &["silences_per_s", "cannot settle"],
    );
}

#[test]
fn reconnect_delays_must_fit_the_heal_and_not_be_zero() {
    refused(
        &with("", "reconnect_delay_ms = [20000, 30000]", false),
        "timing.reconnect_delay_ms",
        &["30000 ms after the heal", "heal_ms (10000 ms)"],
    );
    refused(
        &with("", "new_session_delay_ms = [0, 60000]", false),
        "timing.new_session_delay_ms",
        &["new session", "heal_ms (10000 ms)"],
    );
    // [0, 0] retried a refused connection every microsecond of a
    // disconnect: seconds of CPU for one seed.
    refused(
        &with("", "reconnect_delay_ms = [0, 0]", false),
        "timing.reconnect_delay_ms",
        &["at least 1 ms"],
    );
    accepted(&with("", "reconnect_delay_ms = [0, 1]", false));
}

#[test]
fn a_barrier_member_arriving_after_the_deadline_is_refused() {
    let barrier = |arrive_ms: u64| {
        format!(
            r#"recipe = "barrier"
variant = "fixed"
clients = 3
duration_ms = 1000
heal_ms = 2000

[workload]
rounds = 1
arrive_ms = [0, {arrive_ms}]

[properties]
check = ["barrier", "liveness"]
"#
        )
    };
    refused(
        &barrier(5_000),
        "workload.arrive_ms",
        &["arriving", "heal_ms (2000 ms)"],
    );
    accepted(&barrier(500));
}

#[test]
fn a_steady_follower_lag_too_long_for_the_heal_is_refused() {
    refused(
        &with("", "apply_lag_ms = [10000, 10000]", true),
        "timing.apply_lag_ms",
        &["10000 ms late", "3 clients", "cannot settle"],
    );
    accepted(&with("", "apply_lag_ms = [0, 400]", true));
}

#[test]
fn detection_time_has_an_upper_bound() {
    // 1,000 days: above one simulated day whatever the heal.
    refused(
        &with("", "tick_time_ms = 86400000\nsync_limit = 1000", true),
        "timing.sync_limit",
        &["above one simulated day"],
    );
    // Longer than the heal window is fine: the heal ends an election at once.
    accepted(&with("", "tick_time_ms = 200\nsync_limit = 100", true));
}

#[test]
fn ensemble_timings_on_one_server_are_refused() {
    for (line, key) in [
        ("election_ms = [100, 300]", "timing.election_ms"),
        ("sync_limit = 5", "timing.sync_limit"),
        ("revalidate_moves = false", "timing.revalidate_moves"),
        ("apply_lag_ms = [0, 10]", "timing.apply_lag_ms"),
    ] {
        refused(
            &with("", line, false),
            key,
            &["ensemble = 3", "means nothing here"],
        );
        accepted(&with("", line, true));
    }
}

/// One server has a tickTime too: it expires sessions on its ticks. The
/// old name of that knob is refused, naming the new one.
#[test]
fn the_servers_tick_time_applies_on_one_server_and_its_old_name_is_refused() {
    accepted(&with("", "tick_time_ms = 2000", false));
    refused(
        &with("", "expiry_tick_ms = 2000", false),
        "timing.expiry_tick_ms",
        &["write `tick_time_ms = 2000`"],
    );
}
