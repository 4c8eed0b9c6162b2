//! `zkcheck fuzz` (issue 44): a search guided by coverage. On bug 14's
//! scenario (17 of 1,000 seeds fail) a pinned campaign finds the adopted
//! abandoned node; its tape file replays it in another process, every
//! word drawn; the same campaign seed runs the same campaign; the fixed
//! variant spends its budget without a failure (exit 4: not a pass); bad
//! flags exit 2 naming the flag.

use crate::common::{self, zkcheck};

const BUG_14: &str = "scenarios/bugs/bug14-adopted-abandoned-node.toml";

/// The summary without its timing (the last clause of its first line).
fn without_time(stdout: &str) -> String {
    stdout
        .lines()
        .map(|line| match line.starts_with("fuzz ") {
            true => line.rsplit_once(';').map_or(line, |(head, _)| head),
            false => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_campaign_finds_bug_14_and_its_tape_replays_it() {
    let out = common::scratch("fuzz", "bug14");
    let out_dir = out.display().to_string();
    let args = [
        "fuzz",
        BUG_14,
        "--runs",
        "2000",
        "--campaign-seed",
        "2",
        "--initial-seeds",
        "4",
        "--out",
        &out_dir,
    ];
    let first = zkcheck(&args);
    first.expect(1);
    assert!(
        first.stdout.contains("campaign seed 2: 25 runs (4 of them the scenario's own seeds), corpus 9; first failing run: 25"),
        "{}",
        first.stdout
    );
    assert!(
        first.stdout.contains("run 25 broke mutual_exclusion"),
        "{}",
        first.stdout
    );
    let again = zkcheck(&args);
    assert_eq!(without_time(&first.stdout), without_time(&again.stdout));
    let tape = out.join("bug14-adopted-abandoned-node-original-fuzz-run-25.toml");
    let tape = tape.display().to_string();
    assert!(first.stdout.contains("replay it: "), "{}", first.stdout);
    let replayed = zkcheck(&["replay", &tape]);
    let _ = std::fs::remove_dir_all(&out);
    replayed.expect(1);
    assert!(
        replayed.stdout.contains("VIOLATION of mutual_exclusion"),
        "{}",
        replayed.stdout
    );
    assert!(
        replayed.stdout.contains("[adopted-abandoned-node]"),
        "{}",
        replayed.stdout
    );
    assert!(
        replayed.stdout.contains("words drawn, none past them"),
        "{}",
        replayed.stdout
    );
}

#[test]
fn the_fixed_lock_spends_its_budget_and_that_is_no_pass() {
    let run = zkcheck(&["fuzz", BUG_14, "--variant", "fixed", "--runs", "200"]);
    run.expect(4);
    assert!(run.stdout.contains("no failing run"), "{}", run.stdout);
    assert!(run.stdout.contains("not a pass"), "{}", run.stdout);
    assert!(run.stdout.contains("client features"), "{}", run.stdout);
}

#[test]
fn bad_flags_name_the_flag() {
    for (flag, value) in [
        ("--runs", "0"),
        ("--initial-seeds", "0"),
        ("--timeout", "0"),
        ("--fresh-seeds", "1.5"),
    ] {
        let run = zkcheck(&["fuzz", BUG_14, flag, value]);
        run.expect(2);
        assert!(run.stderr.contains(flag), "{flag}: {}", run.stderr);
    }
}
