//! `zkcheck check` on an ensemble scenario (issue 39): the explored world
//! keeps the scenario's servers. The tape picks each client's host list
//! (its attempts go round it), each follower's apply lag for the run and the
//! ensemble faults the budget allows (`lag-spike`, `server-crash`,
//! `server-partition`, `leader-change`, `server-freeze`), and the summary
//! says so; the fixed lock holds on three servers (a frozen server
//! included), and bug 11's orphan, a recovery
//! read on a follower lagging behind a lost create, is a counterexample
//! whose choice file replays in a second process.

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use crate::common::{scratch, zkcheck, Run};

/// `zkcheck check` of the fixed lock's ensemble scenario at 2 clients
/// with `flags`, which must exit 0 (its output in a scratch directory
/// named after `test`).
fn check_fixed_lock(test: &str, flags: &[&str]) -> Run {
    let out = scratch("ensemble-check", test);
    let scenario = "scenarios/ensemble/lock-fixed-ensemble.toml";
    let mut args = vec!["check", scenario, "--clients", "2"];
    args.extend(flags);
    args.extend(["--out", out.to_str().expect("UTF-8")]);
    let run = zkcheck(&args);
    let _ = std::fs::remove_dir_all(&out);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    run
}

#[test]
fn the_fixed_lock_holds_on_three_servers_and_the_summary_names_them() {
    let run = check_fixed_lock("fixed", &["--faults", "none"]);
    for line in [
        "  enumerated   servers: 3; each client's host list, one of its 6 orders",
        "  bounded      apply lag [0, 5]: each follower's one of 0, 5 ms for the whole run (the scenario draws each commit's)",
        "  fixed        a moved session is answered after the leader revalidates it (as 3.8)",
        "ensemble faults not in --faults (lag-spike, server-crash, server-partition, leader-change, server-freeze)",
        // Pinned: a change to the explored world that moves it says so.
        "executions: 49368 run, 27960 of them pruned at a visited state",
        "exhaustive: every enumerated and bounded choice above was explored",
        "  fenced_mutual_exclusion: holds",
    ] {
        assert!(run.stdout.contains(line), "missing {line:?} in\n{}", run.stdout);
    }
}

/// A frozen server (`--faults server-freeze=1`: SIGSTOP or a GC pause of
/// any of the three, as a workload starts a drawn duration, for twice the
/// session timeout): the fixed lock holds, exhaustively. With one duration
/// point the search is small: 20,512 executions against 1,980 without the
/// freeze, so the tape does strike it.
#[test]
fn the_fixed_lock_holds_through_a_frozen_server() {
    let run = check_fixed_lock(
        "freeze",
        &["--faults", "server-freeze=1", "--duration-points", "1"],
    );
    for line in [
        "a server frozen (SIGSTOP, a GC pause) for 8000 ms (the scenario schedules none)",
        "ensemble faults not in --faults (lag-spike, server-crash, server-partition, leader-change)",
        "executions: 20512 run, 4864 of them pruned at a visited state",
        "exhaustive: every enumerated and bounded choice above was explored",
        "  fenced_mutual_exclusion: holds",
        "  liveness: holds",
    ] {
        assert!(run.stdout.contains(line), "missing {line:?} in\n{}", run.stdout);
    }
}

/// Bug 11's shortest counterexample at 2 clients (what `check
/// scenarios/bugs/bug11-stale-recovery-read.toml --clients 2 --faults
/// connection-loss=1,lag-spike=1` writes, pinned as a file): a lag spike
/// on server 1 as c0 starts its hold, c1's create reply lost, c1's
/// reconnect to server 1 (the next of its host list), whose recovery read
/// misses the create. 14 choice points, 1 delay.
#[test]
fn bug_11s_counterexample_replays_a_lag_spike_and_a_move_to_the_lagging_follower() {
    let run = zkcheck(&["replay", "tests/fixtures/bug11-lag-spike-choices.toml"]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    for line in [
        "c1 send     choice: the client's host list goes round servers 0, 1, 2",
        "c0 timer    choice: 1 ms of [1, 20]",
        "-- FAULT    server 1's applies lag 1000 ms more for 5000 ms",
        "c1 FAULT    reply to request #1 lost after apply",
        "c1 send     the attempt goes to server 1, the next of its host list",
        "signature: liveness/orphan-node",
    ] {
        assert!(
            run.stdout.contains(line),
            "missing {line:?} in\n{}",
            run.stdout
        );
    }
}

#[test]
fn an_ensemble_fault_on_one_server_is_refused() {
    let run = zkcheck(&[
        "check",
        "scenarios/lock-fixed.toml",
        "--faults",
        "lag-spike=1",
    ]);
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("--faults lag-spike=1"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("one server"), "{}", run.stderr);
    let run = zkcheck(&[
        "check",
        "scenarios/ensemble/lock-fixed-ensemble.toml",
        "--faults",
        "lag-spike=1,server-crush=1",
    ]);
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("server-crush"), "{}", run.stderr);
}

/// PCT samples the same choices, ensemble ones included: bug 11 at its
/// fifth run (pinned: the same seed, the same campaign).
#[test]
fn pct_samples_the_ensembles_choices_and_finds_bug_11() {
    let out = scratch("ensemble-check", "pct");
    let run = zkcheck(&[
        "check",
        "scenarios/bugs/bug11-stale-recovery-read.toml",
        "--clients",
        "2",
        "--faults",
        "connection-loss=1,lag-spike=1",
        "--strategy",
        "pct",
        "--depth",
        "2",
        "--runs",
        "50",
        "--seed",
        "1",
        "--progress",
        "0",
        "--out",
        out.to_str().expect("UTF-8"),
    ]);
    let _ = std::fs::remove_dir_all(&out);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    for line in [
        "  sampled      servers: 3; each client's host list, one of its 6 orders",
        "first failing run: 5;",
        "  liveness: VIOLATED (first in run 5;",
    ] {
        assert!(
            run.stdout.contains(line),
            "missing {line:?} in\n{}",
            run.stdout
        );
    }
}
