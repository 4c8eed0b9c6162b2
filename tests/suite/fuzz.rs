//! `zkcheck fuzz` (issue 44): a search guided by coverage. On bug 14's
//! scenario (17 of 1,000 seeds fail) a pinned campaign finds the adopted
//! abandoned node; its tape file replays it in another process, every
//! word drawn; the same campaign seed runs the same campaign; the fixed
//! variant spends its budget without a failure (exit 4: not a pass); bad
//! flags exit 2 naming the flag. `--against-seeds --report DIR` writes
//! the campaign's report: the failing run in full with its tape's replay
//! command, and both curves (the campaign's and as many seeds').

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

fn contains_all(output: &str, lines: &[&str]) {
    for line in lines {
        assert!(output.contains(line), "missing {line:?} in\n{output}");
    }
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
        "18",
        "--initial-seeds",
        "4",
        "--out",
        &out_dir,
    ];
    let first = zkcheck(&args);
    first.expect(1);
    contains_all(
        &first.stdout,
        &[
            "campaign seed 18: 13 runs (5 of them the scenario's own seeds), corpus 11; first failing run: 13",
            "run 13 broke mutual_exclusion",
            "replay it: ",
        ],
    );
    let again = zkcheck(&args);
    assert_eq!(without_time(&first.stdout), without_time(&again.stdout));
    let tape = out.join("bug14-adopted-abandoned-node-original-fuzz-run-13.toml");
    let replayed = zkcheck(&["replay", &tape.display().to_string()]);
    let _ = std::fs::remove_dir_all(&out);
    replayed.expect(1);
    contains_all(
        &replayed.stdout,
        &[
            "VIOLATION of mutual_exclusion",
            "[adopted-abandoned-node]",
            "words drawn, none past them",
        ],
    );
}

#[test]
fn the_report_shows_the_campaign_its_failing_run_and_both_curves() {
    let out = common::scratch("fuzz", "report");
    let (tapes, report) = (out.join("tapes"), out.join("report"));
    let run = zkcheck(&[
        "fuzz",
        BUG_14,
        "--campaign-seed",
        "18",
        "--initial-seeds",
        "4",
        "--against-seeds",
        "--out",
        &tapes.display().to_string(),
        "--report",
        &report.display().to_string(),
    ]);
    run.expect(1);
    contains_all(&run.stdout, &["against seeds 0..13: they reached "]);
    let json = std::fs::read_to_string(report.join("bug14-adopted-abandoned-node.json"))
        .expect("the report's JSON");
    let html = std::fs::read_to_string(report.join("bug14-adopted-abandoned-node.html"))
        .expect("the report's HTML");
    let _ = std::fs::remove_dir_all(&out);
    let document: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(document["kind"], "fuzz");
    assert_eq!(document["fuzz"]["first_failing_run"], 13);
    let replay = document["runs"][0]["replay"].as_str().expect("a replay");
    assert!(replay.contains("fuzz-run-13.toml"), "{replay}");
    assert_eq!(document["runs"][0]["verdict"], "violation");
    let curves = document["coverage"]["curves"].as_array().expect("curves");
    let labels: Vec<&str> = curves
        .iter()
        .map(|c| c["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, vec!["guided, campaign seed 18", "seeds 0..13"]);
    for curve in curves {
        let sum: u64 = curve["new_states"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_u64().unwrap())
            .sum();
        assert_eq!(Some(sum), curve["states"].as_u64(), "{curve}");
    }
    assert_eq!(html.matches("<polyline").count(), 2, "both curves drawn");
}

#[test]
fn the_fixed_lock_spends_its_budget_and_that_is_no_pass() {
    let run = zkcheck(&["fuzz", BUG_14, "--variant", "fixed", "--runs", "200"]);
    run.expect(4);
    contains_all(
        &run.stdout,
        &["no failing run", "not a pass", "client features"],
    );
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

#[test]
fn a_campaign_starts_from_the_first_seed_it_is_given() {
    // Seed 35 of bug 14's scenario breaks mutual exclusion on its own.
    let out = common::scratch("fuzz", "first-seed");
    let run = zkcheck(&[
        "fuzz",
        BUG_14,
        "--first-seed",
        "35",
        "--against-seeds",
        "--out",
        &out.display().to_string(),
    ]);
    let _ = std::fs::remove_dir_all(&out);
    run.expect(1);
    contains_all(
        &run.stdout,
        &[
            "1 runs (1 of them the scenario's own seeds), corpus 1; first failing run: 1",
            "against seeds 35..36: they reached ",
        ],
    );
}
