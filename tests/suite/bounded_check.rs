//! A bounded `check` that found nothing is not a pass: it exits 4
//! (`EXIT_NOT_EXHAUSTIVE`), whatever bound stopped it (`--depth`,
//! `--timeout`, random walks, the lasso search's limits); a violation
//! found within bounds still exits 1; only an exhaustive search that found
//! nothing exits 0. `--lag` with one server (no follower) is refused, on
//! the command line and in the test API. (`--clients LO..HI` with a timed
//! out count: tests/suite/cutoff.rs.)

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::Command;
use zkcheck::testing;
use zkcheck::Registry;

/// `zkcheck check ARGS` quietly, its schedules in a temp directory.
fn zkcheck(args: &[&str]) -> (Option<i32>, String, String) {
    let out = std::env::temp_dir().join(format!("zkcheck-bounded-{}", std::process::id()));
    let out = out.to_str().expect("UTF-8");
    run(&[args, &["--progress", "0", "--out", out]].concat())
}

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_zkcheck"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("zkcheck runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn expect_not_exhaustive(args: &[&str]) {
    let (code, stdout, stderr) = zkcheck(args);
    assert_eq!(code, Some(4), "{args:?}\n{stdout}\n{stderr}");
    assert!(stdout.contains("not exhaustive"), "{args:?}\n{stdout}");
    assert!(!stdout.contains("VIOLATED"), "{args:?}\n{stdout}");
}

#[test]
fn a_depth_bound_that_found_nothing_exits_4() {
    expect_not_exhaustive(&[
        "check",
        "lock",
        "--variant",
        "fixed",
        "--clients",
        "3",
        "--faults",
        "connection-loss=1",
        "--depth",
        "6",
    ]);
}

#[test]
fn a_timeout_that_found_nothing_exits_4() {
    expect_not_exhaustive(&[
        "check",
        "lock",
        "--variant",
        "fixed",
        "--clients",
        "4",
        "--faults",
        "connection-loss=2,expiry=2",
        "--timeout",
        "1",
    ]);
}

#[test]
fn random_walks_that_found_nothing_exit_4() {
    expect_not_exhaustive(&[
        "check",
        "lock",
        "--variant",
        "fixed",
        "--clients",
        "2",
        "--strategy",
        "simulation",
        "--depth",
        "30",
        "--timeout",
        "1",
    ]);
}

#[test]
fn a_violation_within_bounds_still_exits_1() {
    let (code, stdout, stderr) = zkcheck(&[
        "check",
        "lock",
        "--variant",
        "original",
        "--clients",
        "2",
        "--strategy",
        "dfs",
        "--timeout",
        "30",
        "--depth",
        "40",
    ]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("VIOLATED"), "{stdout}");
}

#[test]
fn an_exhaustive_pass_exits_0() {
    let (code, stdout, stderr) =
        zkcheck(&["check", "lock", "--variant", "fixed", "--clients", "2"]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("(exhaustive)"), "{stdout}");
    assert!(!stdout.contains("not exhaustive"), "{stdout}");
}

#[test]
fn unrevalidated_reconnects_without_a_follower_are_refused() {
    for command in ["check", "explore"] {
        let (code, stdout, stderr) = run(&[command, "lock", "--unrevalidated-reconnects"]);
        assert_eq!(code, Some(2), "{command}: {stdout}\n{stderr}");
        assert!(
            stderr.starts_with("error: --unrevalidated-reconnects: "),
            "{command}: {stderr}"
        );
        assert!(stderr.contains("one server has none"), "{stderr}");
    }
}

#[test]
fn lag_without_a_follower_is_refused() {
    for command in ["check", "explore"] {
        let (code, stdout, stderr) = run(&[command, "lock", "--servers", "1", "--lag", "5"]);
        assert_eq!(code, Some(2), "{command}: {stdout}\n{stderr}");
        assert!(stderr.starts_with("error: --lag: "), "{command}: {stderr}");
        assert!(stderr.contains("one server has no follower"), "{stderr}");
    }
    let registry = Registry::builtin();
    let payload = catch_unwind(AssertUnwindSafe(|| {
        testing::model(&registry, "lock", "fixed").lag(5).holds();
    }))
    .expect_err("a lag without a follower fails the test");
    let text = payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(text.contains("one server has no follower"), "{text}");
}
