//! A model check from an initial server state (`check --node`,
//! `--container`, `--sequence-start`; `zkcheck::testing::model(..)
//! .node(..)`, `.sequence_start(..)`): the counterexample it finds is
//! written as a schedule that records the state, and `replay` starts from
//! it and shows the same violation. A schedule without the `[initial]`
//! table still loads; bad flags and bad tables exit 2 naming the flag or
//! the key, never a panic.

// Replays on the simulator's stepper, which exists only with `--cfg madsim`.
#![cfg(madsim)]

use crate::common::{scratch, zkcheck, Run};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use zkcheck::testing;
use zkcheck::Registry;

const SUITE: &str = "initial_state";

/// `check ARGS --out DIR`, with progress off.
fn check(dir: &Path, args: &[&str]) -> Run {
    let out = dir.display().to_string();
    let mut all = vec!["check"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--progress", "0", "--out", &out]);
    zkcheck(&all)
}

fn replay(file: &Path) -> Run {
    zkcheck(&["replay", &file.display().to_string()])
}

fn read(file: &Path) -> String {
    std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

fn assert_contains(text: &str, needle: &str) {
    assert!(text.contains(needle), "lacks {needle:?}:\n{text}");
}

/// The counterexample schedule `check` wrote for `property`.
fn schedule(dir: &Path, recipe: &str, variant: &str, property: &str) -> PathBuf {
    dir.join(format!("{recipe}-{variant}-{property}.toml"))
}

fn panic_text(run: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(run)).expect_err("the check should fail");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// ZooKeeper 3.8 stops a parent's counter at 2^31-1: the original lock's
/// token is the sequence number, so one client locking twice gets the
/// same token twice. From the recipe's setup alone the same check holds.
#[test]
fn a_sequence_counter_at_its_end_is_recorded_and_replayed() {
    let dir = scratch(SUITE, "sequence_counter");
    let args = ["lock", "--variant", "original", "--clients", "1"];
    let plain = check(&dir, &[&args[..], &["--cycles", "2"]].concat());
    plain.expect(0);
    let flags = ["--cycles", "2", "--sequence-start", "/locks=2147483647"];
    let found = check(&dir, &[&args[..], &flags].concat());
    found.expect(1);
    assert_contains(
        &found.stdout,
        "initial state: /locks next sequence 2147483647",
    );
    assert_contains(&found.stdout, "VIOLATED (counterexample: 21 steps)");
    let file = schedule(&dir, "lock", "original", "fenced_mutual_exclusion");
    let text = read(&file);
    assert_contains(
        &text,
        "[[initial.sequence_start]]\nparent = \"/locks\"\nnext = 2147483647\n",
    );
    let replayed = replay(&file);
    replayed.expect(1);
    assert_contains(
        &replayed.stdout,
        "started from the schedule's initial state: /locks next sequence 2147483647",
    );
    assert_contains(
        &replayed.stdout,
        "signature: fenced_mutual_exclusion/token-not-increasing",
    );
    assert_contains(
        &replayed.stdout,
        "agrees with the model: fenced_mutual_exclusion",
    );
    // Without its table the same steps start from the recipe's setup:
    // the simulator then disagrees with the model (exit 3).
    let start = text.find("[[initial.sequence_start]]").unwrap();
    let end = text[start..].find("[[step]]").unwrap() + start;
    let stripped = dir.join("stripped.toml");
    std::fs::write(&stripped, format!("{}{}", &text[..start], &text[end..])).unwrap();
    let disagrees = replay(&stripped);
    disagrees.expect(3);
    assert_contains(&disagrees.stdout, "DISAGREES with the model");
}

/// From a counter at its end the fixed lock refuses every create (its
/// parent is persistent, so the counter never restarts): no client ever
/// acquires, so "lock ever acquired" has no example and every safety
/// property holds vacuously. That check could not have failed: an error
/// (exit 2, saying why), not a violation of a correct lock (exit 1).
#[test]
fn a_check_that_could_not_have_failed_is_an_error_not_a_violation() {
    let dir = scratch(SUITE, "vacuous_counter");
    let args = ["lock", "--variant", "fixed", "--clients", "2"];
    check(&dir, &args).expect(0);
    let at_end = ["--sequence-start", "/locks=2147483647"];
    let vacuous = check(&dir, &[&args[..], &at_end].concat());
    vacuous.expect(2);
    assert_contains(&vacuous.stdout, "lock_acquired");
    assert_contains(&vacuous.stderr, "could not have failed");
    assert_contains(&vacuous.stderr, "lock_acquired");
    assert!(
        !vacuous.stdout.contains("schedule written"),
        "{}",
        vacuous.stdout
    );
    // A range of counts says the same.
    let range = ["lock", "--variant", "fixed", "--clients", "1..2"];
    let vacuous = check(&dir, &[&range[..], &at_end].concat());
    vacuous.expect(2);
    assert_contains(&vacuous.stderr, "could not have failed");
}

/// A client-count range checks every count from the same initial state
/// and writes the first counterexample with it.
#[test]
fn a_client_range_starts_every_count_from_the_initial_state() {
    let dir = scratch(SUITE, "range");
    let args = [
        "lock",
        "--variant",
        "original",
        "--clients",
        "1..2",
        "--cycles",
        "2",
    ];
    let found = check(
        &dir,
        &[&args[..], &["--sequence-start", "/locks=2147483647"]].concat(),
    );
    found.expect(1);
    assert_contains(
        &found.stdout,
        "counterexample for fenced_mutual_exclusion first at 1 client(s): 21 steps",
    );
    let file = dir.join("lock-original-fenced_mutual_exclusion-1clients.toml");
    assert_contains(&read(&file), "[[initial.sequence_start]]");
    let replayed = replay(&file);
    replayed.expect(1);
    assert_contains(
        &replayed.stdout,
        "agrees with the model: fenced_mutual_exclusion",
    );
}

/// A stale member node left under the barrier's directory: the original
/// barrier counts children, so the first member passes alone (5 steps).
/// The fixed barrier counts its own ready node and holds.
#[test]
fn a_stale_node_under_the_barrier_is_recorded_and_replayed() {
    let dir = scratch(SUITE, "stale_barrier_node");
    let found = check(
        &dir,
        &["barrier", "--variant", "original", "--node", "/b1/stale"],
    );
    found.expect(1);
    assert_contains(&found.stdout, "initial state: node /b1/stale");
    assert_contains(&found.stdout, "counterexample for barrier (5 steps)");
    let file = schedule(&dir, "barrier", "original", "barrier");
    assert_contains(&read(&file), "[[initial.node]]\npath = \"/b1/stale\"\n");
    let replayed = replay(&file);
    replayed.expect(1);
    assert_contains(&replayed.stdout, "signature: barrier/passed-early");
    assert_contains(&replayed.stdout, "agrees with the model: barrier");
    check(
        &dir,
        &["barrier", "--variant", "fixed", "--node", "/b1/stale"],
    )
    .expect(0);
}

/// `--report DIR` replays each counterexample on the stepper from the
/// same initial state: no `unexplained` violation in the document.
#[test]
fn the_report_replays_from_the_initial_state() {
    let dir = scratch(SUITE, "report");
    let report = dir.join("report");
    let found = check(
        &dir,
        &[
            "lock",
            "--variant",
            "original",
            "--clients",
            "1",
            "--cycles",
            "2",
            "--sequence-start",
            "/locks=2147483647",
            "--report",
            &report.display().to_string(),
        ],
    );
    found.expect(1);
    let json: String = std::fs::read_dir(&report)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .map(|path| read(&path))
        .collect();
    assert_contains(&json, "fenced_mutual_exclusion/token-not-increasing");
    assert!(!json.contains("unexplained"), "{json}");
}

#[test]
fn a_schedule_without_an_initial_table_still_loads() {
    let dir = scratch(SUITE, "no_table");
    check(&dir, &["lock", "--variant", "original"]).expect(1);
    let file = schedule(&dir, "lock", "original", "mutual_exclusion");
    let text = read(&file);
    assert!(!text.contains("initial"), "{text}");
    let replayed = replay(&file);
    replayed.expect(1);
    assert_contains(&replayed.stdout, "agrees with the model: mutual_exclusion");
    assert!(
        !replayed.stdout.contains("initial state"),
        "{}",
        replayed.stdout
    );
}

#[test]
fn bad_initial_flags_exit_2_naming_the_flag() {
    let dir = scratch(SUITE, "bad_flags");
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--node", "locks/x"],
            &["--node", "`locks/x`", "start with '/'"],
        ),
        (&["--container", "/"], &["--container", "`/` always exists"]),
        (
            &["--node", "/a/b"],
            &["--node", "/a/b", "parent /a does not exist"],
        ),
        (
            &["--node", "/locks"],
            &["--node", "/locks", "exists already"],
        ),
        (
            &["--node", "/a", "--node", "/a"],
            &["--node", "/a", "exists already"],
        ),
        (
            &["--sequence-start", "/locks=2147483648"],
            &["--sequence-start", "`/locks=2147483648`", "0..=2147483647"],
        ),
        (
            &["--sequence-start", "/locks=-1"],
            &["--sequence-start", "`/locks=-1`"],
        ),
        (
            &["--sequence-start", "/locks"],
            &["--sequence-start", "PATH=N"],
        ),
        (
            &["--sequence-start", "locks=5"],
            &["--sequence-start", "`locks`", "start with '/'"],
        ),
        (
            &["--sequence-start", "/nope=5"],
            &["--sequence-start", "/nope", "no such node"],
        ),
        (
            &[
                "--sequence-start",
                "/locks=1",
                "--sequence-start",
                "/locks=2",
            ],
            &["--sequence-start", "/locks", "started twice"],
        ),
        (
            &["--sequence-start", "/locks=1", "--symmetry"],
            &["--symmetry", "initial sequence counter"],
        ),
    ];
    for (flags, needles) in cases {
        let args = [&["lock", "--variant", "fixed"], *flags].concat();
        let run = check(&dir, &args);
        assert_eq!(run.code, 2, "{flags:?}: {}{}", run.stdout, run.stderr);
        run.refused(needles);
    }
    // Parents first whatever the order of the flags: /x is made before /x/y.
    check(
        &dir,
        &[
            "lock",
            "--variant",
            "fixed",
            "--node",
            "/x/y",
            "--container",
            "/x",
        ],
    )
    .expect(0);
}

#[test]
fn a_bad_initial_table_exits_2_naming_its_key() {
    let dir = scratch(SUITE, "bad_table");
    check(
        &dir,
        &["barrier", "--variant", "original", "--node", "/b1/stale"],
    )
    .expect(1);
    let text = read(&schedule(&dir, "barrier", "original", "barrier"));
    let table = "[[initial.node]]\npath = \"/b1/stale\"\n";
    let cases = [
        (
            "[[initial.node]]\npath = \"/b1/x/y\"\n",
            "initial.node[0].path",
            "parent /b1/x does not exist",
        ),
        (
            "[[initial.node]]\npath = \"b1\"\n",
            "initial.node[0].path",
            "not a node path",
        ),
        (
            "[[initial.node]]\npath = \"/b1/s\"\nmode = \"ephemeral\"\n",
            "initial.node[0].mode",
            "neither persistent nor container",
        ),
        (
            "[[initial.node]]\npath = \"/b1/s\"\nowner = 1\n",
            "initial.node[0].owner",
            "owner",
        ),
        (
            "[[initial.sequence_start]]\nparent = \"/b1\"\nnext = 2147483648\n",
            "initial.sequence_start[0].next",
            "0..=2147483647",
        ),
        (
            "[[initial.sequence_start]]\nparent = \"/nope\"\nnext = 1\n",
            "initial.sequence_start[0].parent",
            "no such node",
        ),
        (
            "[initial]\nfirst_session = 1\n",
            "initial.first_session",
            "2..=",
        ),
    ];
    for (n, (replacement, key, message)) in cases.iter().enumerate() {
        assert!(text.contains(table), "{text}");
        let file = dir.join(format!("bad-{n}.toml"));
        std::fs::write(&file, text.replace(table, replacement)).unwrap();
        replay(&file).refused(&[&format!("key `{key}`"), message]);
    }
}

#[test]
fn the_test_api_finds_the_same_counterexamples() {
    let registry = Registry::builtin();
    let steps = testing::model(&registry, "lock", "original")
        .clients(1)
        .cycles(2)
        .sequence_start("/locks", i32::MAX)
        .violates("fenced_mutual_exclusion");
    assert_eq!(steps, 21);
    let steps = testing::model(&registry, "barrier", "original")
        .node("/b1/stale")
        .violates("barrier");
    assert_eq!(steps, 5);
    testing::model(&registry, "barrier", "fixed")
        .node("/b1/stale")
        .holds();
    // A failing check prints the command line, initial state included.
    let text = panic_text(|| {
        testing::model(&registry, "lock", "fixed")
            .clients(1)
            .container("/x")
            .node("/x/y")
            .sequence_start("/locks", i32::MAX)
            .violates("fenced_mutual_exclusion");
    });
    assert_contains(
        &text,
        "--container /x --node /x/y --sequence-start /locks=2147483647",
    );
}

#[test]
fn the_test_api_refuses_a_state_it_cannot_make() {
    let registry = Registry::builtin();
    let text = panic_text(|| {
        testing::model(&registry, "lock", "fixed")
            .node("/a/b")
            .holds();
    });
    assert_contains(&text, "the initial state cannot be made");
    assert_contains(&text, "parent /a does not exist");
    let text = panic_text(|| {
        let _ = testing::model(&registry, "lock", "fixed").node("relative");
    });
    assert_contains(&text, "not a node path");
}
