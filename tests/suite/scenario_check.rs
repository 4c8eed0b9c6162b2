//! `zkcheck check SCENARIO.toml` (issue 39): a scenario's own world
//! explored by re-execution, for a sans-IO recipe here (the async ones:
//! tests/async_check/leases.rs). The summary names how every dimension
//! was explored and what the scenario would have drawn; an exhaustive pass
//! exits 0, a violation 1 with a choice file that a second process
//! replays (it carries the scenario's text, so it replays after the file
//! is gone); bad input exits 2 naming the file, line and key or the flag.

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use crate::common::{scratch, zkcheck};
use std::path::PathBuf;

/// `zkcheck ARGS` in the crate's root: exit status, stdout, stderr.
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let run = zkcheck(args);
    (Some(run.code), run.stdout, run.stderr)
}

/// A fresh directory of this test's own.
fn temp_dir(name: &str) -> PathBuf {
    scratch("scenario-check", name)
}

#[test]
fn the_fixed_semaphore_holds_on_its_scenarios_world_and_says_what_that_was() {
    let out = temp_dir("fixed");
    let (code, stdout, stderr) = run(&[
        "check",
        "scenarios/semaphore-fixed.toml",
        "--clients",
        "2",
        "--out",
        out.to_str().expect("UTF-8"),
    ]);
    let _ = std::fs::remove_dir_all(&out);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    for line in [
        "scenarios/semaphore-fixed.toml: semaphore fixed (sans-IO) with 2 client(s), 1 cycle(s), faults none",
        "  bounded      clients: 2 (--clients; the scenario has 5); cycles: 1 (--cycles; the scenario has 20)",
        "  enumerated   faults: none (--faults none; the scenario draws loss_after_apply = 0.02, loss_before_apply = 0.02)",
        "  bounded      hold_ms [1, 20]: each draw one of 1, 20 ms (--duration-points 2)",
        "  fixed        servers: 1",
        "  fixed        the runtime's choice among a client's ready tasks, the branch a `select!` without `biased;` tries first, getChildren order, session ids, reconnect and new-session delays: as runtime seed 0 draws them",
        "exhaustive: every enumerated and bounded choice above was explored (the fixed ones were not varied)",
        "  liveness: holds",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in\n{stdout}");
    }
    assert!(
        stdout.contains(
            "  not explored faults at other times (a client waiting on a watch draws nothing"
        ) && stdout.contains("disconnects_per_s = 0.05"),
        "{stdout}"
    );
}

#[test]
fn a_violation_writes_a_choice_file_that_replays_without_the_scenario_file() {
    let dir = temp_dir("violation");
    let scenario = dir.join("semaphore.toml");
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios/semaphore-original.toml"),
    )
    .expect("the scenario");
    std::fs::write(&scenario, text).expect("written");
    let out = dir.join("out");
    let (code, stdout, stderr) = run(&[
        "check",
        scenario.to_str().expect("UTF-8"),
        "--clients",
        "3",
        "--out",
        out.to_str().expect("UTF-8"),
    ]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("no_leaks: VIOLATED"), "{stdout}");
    let choices = out.join("semaphore-original-no_leaks-choices.toml");
    let written = std::fs::read_to_string(&choices).expect("the choice file");
    assert!(written.contains("scenario = '''\n"), "{written}");
    std::fs::remove_file(&scenario).expect("removed");
    let replay = |_| run(&["replay", choices.to_str().expect("UTF-8")]);
    let (first, second) = (replay(1), replay(2));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(first.0, Some(1), "{}\n{}", first.1, first.2);
    assert!(first.1.contains("VIOLATION of no_leaks"), "{}", first.1);
    assert_eq!(first.1, second.1, "two processes, one trace");
}

#[test]
fn a_pause_between_requests_finds_bug_8s_two_holders() {
    // The holder makes no request while it holds: only a fault between
    // requests (a pause of twice the session timeout as its hold starts)
    // reaches it.
    let out = temp_dir("pause");
    let bug = "scenarios/bugs/bug8-pause-two-holders.toml";
    let out_dir = out.to_str().expect("UTF-8");
    let (code, stdout, stderr) = run(&[
        "check",
        bug,
        "--clients",
        "2",
        "--faults",
        "pause=1",
        "--out",
        out_dir,
    ]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("mutual_exclusion: VIOLATED"), "{stdout}");
    let choices = out.join("lock-fixed-mutual_exclusion-choices.toml");
    let (code, replayed, _) = run(&["replay", choices.to_str().expect("UTF-8")]);
    assert_eq!(code, Some(1), "{replayed}");
    assert!(
        replayed.contains("FAULT    pause for 4000 ms"),
        "{replayed}"
    );
    assert!(
        replayed.contains("signature: mutual_exclusion/stale-holder-after-expiry"),
        "{replayed}"
    );
    let (code, stdout, stderr) = run(&["check", bug, "--clients", "2", "--out", out_dir]);
    let _ = std::fs::remove_dir_all(&out);
    assert_eq!(
        code,
        Some(0),
        "without the pause it holds: {stdout}\n{stderr}"
    );
}

#[test]
fn a_search_per_runtime_seed_writes_the_seed_it_found_under_and_replays_it() {
    let out = temp_dir("runtime-seeds");
    let (code, stdout, stderr) = run(&[
        "check",
        "scenarios/bugs/bug8-pause-two-holders.toml",
        "--clients",
        "2",
        "--faults",
        "pause=1",
        "--runtime-seeds",
        "3..5",
        "--out",
        out.to_str().expect("UTF-8"),
    ]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    for line in [
        "  sampled      the runtime's choice among a client's ready tasks, the branch a `select!` without `biased;` tries first, getChildren order, session ids, reconnect and new-session delays: as each of runtime seeds 3..5 draws them, a whole search under each (a sample of the runtime's choices, not an enumeration)",
        "runtime seeds searched: 1 of 2 (3..5)",
        "counterexample for mutual_exclusion: choices 0.0.0.0.1 under runtime seed 3",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in\n{stdout}");
    }
    let choices = out.join("lock-fixed-mutual_exclusion-choices.toml");
    let written = std::fs::read_to_string(&choices).expect("the choice file");
    assert!(written.contains("\nruntime_seed = 3\n"), "{written}");
    let (code, replayed, _) = run(&["replay", choices.to_str().expect("UTF-8")]);
    assert_eq!(code, Some(1), "{replayed}");
    assert!(
        replayed.contains("VIOLATION of mutual_exclusion"),
        "{replayed}"
    );
    // The seed is part of the run: under seed 0 the same choices differ.
    std::fs::write(&choices, written.replace("runtime_seed = 3\n", "")).expect("written");
    let (_, seed_0, _) = run(&["replay", choices.to_str().expect("UTF-8")]);
    let _ = std::fs::remove_dir_all(&out);
    assert_ne!(seed_0, replayed);
}

#[test]
fn a_world_where_a_property_cannot_fail_is_refused() {
    // 2 clients never contend for 2 leases: mutual exclusion could not fail.
    let (code, stdout, stderr) = run(&[
        "check",
        "scenarios/semaphore-original.toml",
        "--clients",
        "2",
    ]);
    assert_eq!(code, Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("the explored world of scenarios/semaphore-original.toml"),
        "{stderr}"
    );
    assert!(
        stderr.contains("`mutual_exclusion` cannot fail here"),
        "{stderr}"
    );
}

#[test]
fn without_clients_a_scenario_is_explored_with_its_own_count_at_most_three() {
    // 5 clients in the file: 3 explored, and the summary says why.
    let (code, stdout, stderr) = run(&[
        "check",
        "scenarios/semaphore-fixed.toml",
        "--max-executions",
        "5",
    ]);
    assert_eq!(code, Some(4), "cut by --max-executions: {stdout}\n{stderr}");
    for line in [
        "scenarios/semaphore-fixed.toml: semaphore fixed (sans-IO) with 3 client(s)",
        "  bounded      clients: 3 (at most 3 unless --clients says; the scenario has 5)",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in\n{stdout}");
    }
    // 2 clients in the file: its own count, nothing to explain.
    let dir = temp_dir("own-count");
    let scenario = dir.join("two.toml");
    std::fs::write(
        &scenario,
        "recipe = \"lock\"\nvariant = \"fixed\"\nclients = 2\nseeds = \"0..1\"\nduration_ms = 1000\nheal_ms = 1000\nexpect = \"pass\"\n[workload]\ncycles = 1\nhold_ms = [1, 2]\n",
    )
    .expect("written");
    let (code, stdout, stderr) = run(&["check", scenario.to_str().expect("UTF-8")]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("  bounded      clients: 2; cycles: 1\n"),
        "{stdout}"
    );
}

#[test]
fn bad_input_names_the_file_line_and_key_or_the_flag() {
    let dir = temp_dir("bad");
    let scenario = dir.join("bad.toml");
    std::fs::write(
        &scenario,
        "recipe = \"lock\"\nvariant = \"fixed\"\nclients = 2\nseeds = \"0..1\"\nduration_ms = 1000\nheal_ms = 1000\nexpect = \"pass\"\n[workload]\ncycles = 1\nhold_ms = [5, 1, 2]\n",
    )
    .expect("written");
    let path = scenario.to_str().expect("UTF-8").to_string();
    let (code, _, stderr) = run(&["check", &path]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains(&format!("{path}:10")), "{stderr}");
    assert!(stderr.contains("workload.hold_ms"), "{stderr}");
    let (code, _, stderr) = run(&[
        "check",
        "scenarios/lock-fixed.toml",
        "--duration-points",
        "9",
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--duration-points"), "{stderr}");
    let (code, _, stderr) = run(&["check", "lock", "--duration-points", "2"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--duration-points"), "{stderr}");
    for bad in ["5..5", "0..1001", "x"] {
        let (code, _, stderr) =
            run(&["check", "scenarios/lock-fixed.toml", "--runtime-seeds", bad]);
        assert_eq!(code, Some(2), "{bad}: {stderr}");
        assert!(stderr.contains("--runtime-seeds"), "{stderr}");
    }
    let (code, _, stderr) = run(&["check", "lock", "--runtime-seeds", "0..2"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--runtime-seeds"), "{stderr}");
    let missing = dir.join("missing.toml");
    let (code, _, stderr) = run(&["check", missing.to_str().expect("UTF-8")]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("missing.toml"), "{stderr}");
}

/// Every catalog entry (`scenarios/bugs/`): `check` on its scenario's own
/// world at 3 clients (its own count when lower) shows the property its
/// sweep shows (`expect_property`); bug 11's, a stale read on a lagging
/// follower, at 2 clients on its scenario's 3 servers with a lag spike the
/// tape strikes (found at the search's second delay bound, in about 2.5 minutes).
/// About 8 minutes on 2 cores: `cargo test --release --workspace --test suite -- --ignored scenario_check::`.
#[test]
#[ignore = "about 8 minutes: the catalog's heavy tier"]
fn check_on_every_catalog_scenario_shows_its_sweeps_property() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios/bugs");
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the catalog")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .collect();
    entries.sort();
    assert_eq!(entries.len(), 14, "{entries:?}");
    let out = temp_dir("catalog");
    let mut missed = Vec::new();
    for path in &entries {
        let text = std::fs::read_to_string(path).expect("readable");
        let table: toml::Table = text.parse().expect("TOML");
        let want = table["expect_property"].as_str().expect("expect_property");
        let name = path.file_name().and_then(|n| n.to_str()).expect("a name");
        let most = match name.starts_with("bug11") {
            true => 2,
            false => 3,
        };
        let clients = table["clients"]
            .as_integer()
            .expect("clients")
            .min(most)
            .to_string();
        // The queue's lost item needs no pause, and the smaller tree finds
        // it within the timeout; bug 11 needs a follower lagging as the
        // lost create's owner reconnects to it.
        let faults = match &name[..5] {
            "bug6-" => "connection-loss=1,expiry=1",
            "bug11" => "connection-loss=1,lag-spike=1",
            _ => "connection-loss=1,expiry=1,pause=1",
        };
        let timeout = match name.starts_with("bug11") {
            true => "300",
            false => "120",
        };
        let file = path.to_str().expect("UTF-8");
        let out_dir = out.to_str().expect("UTF-8");
        let args = [
            "check",
            file,
            "--clients",
            &clients,
            "--faults",
            faults,
            "--timeout",
            timeout,
            "--progress",
            "0",
            "--out",
            out_dir,
        ];
        let (code, stdout, stderr) = run(&args);
        let found = stdout.contains(&format!("  {want}: VIOLATED"));
        if !(found && code == Some(1)) {
            missed.push(format!("{name} ({code:?}): {stdout}\n{stderr}"));
        }
    }
    let _ = std::fs::remove_dir_all(&out);
    assert!(missed.is_empty(), "{}", missed.join("\n\n"));
}

/// The scenario's client-side expiry policy (`faults.rates.client_expiry`)
/// is how its clients behave, not a drawn fault: the explored world keeps
/// it (the summary is the world's, as the explorer runs it: bug 14's
/// scenario), while a scenario without it names client-side expiries among
/// what was not explored.
#[test]
fn the_explored_world_keeps_the_scenarios_client_side_expiry_policy() {
    let out = temp_dir("client-expiry");
    let out_dir = out.to_str().expect("UTF-8");
    let summary = |file: &str| {
        let args = [
            "check",
            file,
            "--clients",
            "2",
            "--faults",
            "connection-loss=1",
            "--max-executions",
            "50",
            "--out",
            out_dir,
        ];
        let (code, stdout, stderr) = run(&args);
        assert_eq!(code, Some(4), "cut by --max-executions: {stdout}\n{stderr}");
        stdout
    };
    let with = summary("scenarios/bugs/bug14-adopted-abandoned-node.toml");
    let without = summary("scenarios/curator_lock-fixed.toml");
    let _ = std::fs::remove_dir_all(&out);
    let policy = "  fixed        client-side expiry: on, as the scenario says";
    assert!(with.contains(policy), "{with}");
    assert!(with.contains("of other kinds (watch faults)"), "{with}");
    assert!(!without.contains(policy), "{without}");
    assert!(
        without.contains("of other kinds (client-side expiries, watch faults)"),
        "{without}"
    );
}
