//! Markdown snapshot tests: each fixture's Markdown is compared with the
//! checked-in `tests/snapshots/<fixture>.md`.
//!
//! After an intended change to the output, regenerate the files with
//!
//! ```sh
//! UPDATE_SNAPSHOTS=1 cargo test --release --workspace --test suite markdown::
//! ```
//!
//! and review the diff (`git diff reports/tests/snapshots`) before
//! committing it.

use crate::common;

use std::path::PathBuf;
use zk_reports::{markdown, Report};

fn snapshot(name: &str, report: &Report) {
    let rendered = markdown(report);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("{name}.md"));
    if std::env::var("UPDATE_SNAPSHOTS").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &rendered).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read the snapshot {}: {e}\n(run with UPDATE_SNAPSHOTS=1 to write it)",
            path.display()
        )
    });
    if rendered != expected {
        let first_difference = rendered
            .lines()
            .zip(expected.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .map(|(line, (a, b))| {
                format!(
                    "first difference on line {}:\n  rendered: {a}\n  snapshot: {b}",
                    line + 1
                )
            })
            .unwrap_or_else(|| {
                format!(
                    "the rendered text has {} lines, the snapshot {}",
                    rendered.lines().count(),
                    expected.lines().count()
                )
            });
        panic!(
            "the Markdown of {name} differs from {}; {first_difference}\n\
             If the change is intended, rerun with UPDATE_SNAPSHOTS=1 and review the diff.",
            path.display()
        );
    }
}

#[test]
fn lock_run() {
    snapshot("lock_run", &common::lock_report());
}

#[test]
fn liveness_run() {
    snapshot("liveness_run", &common::liveness_report());
}

#[test]
fn passing_run() {
    snapshot("passing_run", &common::passing_report());
}

#[test]
fn sweep() {
    snapshot("sweep", &common::sweep_report());
}

#[test]
fn clean_sweep() {
    snapshot("clean_sweep", &common::clean_sweep_report());
}

#[test]
fn check() {
    snapshot("check", &common::check_report());
}

#[test]
fn catalog() {
    snapshot("catalog", &common::catalog_report());
}

#[test]
fn fuzz() {
    snapshot("fuzz", &common::fuzz_report());
}

#[test]
fn clean_fuzz() {
    snapshot("clean_fuzz", &common::clean_fuzz_report());
}

#[test]
fn coverage_sweep() {
    snapshot("coverage_sweep", &common::coverage_sweep_report());
}

#[test]
fn rendering_is_deterministic() {
    for (_, report) in common::all() {
        assert_eq!(markdown(&report), markdown(&report.clone()));
        let read = zk_reports::from_json(&zk_reports::to_json(&report)).unwrap();
        assert_eq!(markdown(&report), markdown(&read));
    }
}

#[test]
fn times_are_milliseconds_with_three_decimals() {
    let text = markdown(&common::lock_report());
    // The violation at 2300.510ms, the lost hold at 3300.110ms.
    assert!(
        text.contains("At 2300.510ms, property `mutual_exclusion`"),
        "{text}"
    );
    assert!(
        text.contains("| c1 | 150.710ms | 3300.110ms | 1 | lost (session ended at 2300.000ms) |")
    );
    assert!(text.contains("| c2 | 2300.510ms | (5000.000ms end) | 2 | held at end |"));
}

#[test]
fn pipes_in_table_cells_are_escaped() {
    let text = markdown(&common::sweep_report());
    assert!(text.contains("a lock node outlived its session \\| found by the leak check"));
    // Every table row still has exactly the header's 5 columns.
    for line in text.lines().filter(|l| l.starts_with("| `")) {
        let unescaped = line.replace("\\|", "");
        assert_eq!(unescaped.matches('|').count(), 6, "{line}");
    }
}

#[test]
fn sections_for_each_subject() {
    let run = markdown(&common::lock_report());
    assert!(run.contains("❌ VIOLATION"));
    assert!(run.contains(
        "```sh\nzkcheck replay scenarios/bugs/bug8-pause-two-holders.toml --seed 17\n```"
    ));
    assert!(run.contains("Faults: 1."));
    assert!(run.contains("  - what: held the lock (token 1)"));
    assert!(run.contains("  - why: its session expired at 2300.000ms"));

    let sweep = markdown(&common::sweep_report());
    assert!(sweep.contains("1000 runs, 950 passed, 50 failed, 3 signatures"));
    assert!(sweep.contains("| `liveness/watch-on-deleted-node` | 12 | 203 |"));

    let check = markdown(&common::check_report());
    assert!(check.contains("48213 unique states (190377 visited)"));
    assert!(check.contains("| `mutual_exclusion` | always | ❌ violated | 9 |"));
    assert!(check.contains("```text\n1. c0 calls Lock\n"));

    let catalog = markdown(&common::catalog_report());
    assert!(catalog.contains("caught 37/1000, first seed 17"));
    assert!(catalog.contains("| ✗ |"));
    assert_eq!(catalog.matches("| ✓ |").count(), 2);
}

#[test]
fn a_search_that_was_not_exhaustive_says_what_stopped_it() {
    let stopped = |reason: Option<&str>| {
        let mut report = common::check_report();
        let check = report.check.as_mut().expect("a check report");
        check.exhaustive = false;
        check.stopped_by = reason.map(str::to_string);
        (markdown(&report), zk_reports::html(&report))
    };
    for (reason, words) in [
        (Some("memory"), "stopped by its memory budget"),
        (Some("timeout"), "stopped by its timeout"),
        (None, "stopped by a depth bound"),
        // A forged reason is not echoed.
        (Some("<script>x</script>"), "stopped by a bound"),
    ] {
        let (md, html) = stopped(reason);
        assert!(md.contains(&format!("**not exhaustive**: {words}")), "{md}");
        assert!(
            html.contains(&format!("<b>Not exhaustive</b>: {words}")),
            "{html}"
        );
        assert!(
            !md.contains("<script>") && !html.contains("<script>x"),
            "{md}"
        );
    }
}

#[test]
fn a_campaign_fails_with_its_replay_or_is_not_a_pass() {
    let failed = markdown(&common::fuzz_report());
    assert!(failed.contains("## Fuzz campaign: `scenarios/lock-original.toml`, campaign seed 7\n"));
    assert!(failed.contains(
        "**❌ FAILED at run 734** — recipe `lock`, variant `original`: 734 runs (200 of them the \
         scenario's own seeds), a corpus of 41 tapes."
    ));
    assert!(failed.contains(&format!(
        "First failing run 734, its tape `{}`.\n\nReplay:\n\n```sh\n{}\n```",
        common::FUZZ_TAPE,
        common::FUZZ_REPLAY
    )));
    assert!(failed.contains("### Failing run 1: `scenarios/lock-original.toml`, seed 17"));
    assert!(!failed.contains("not a pass"));

    let clean = markdown(&common::clean_fuzz_report());
    assert!(clean.contains("**⚠️ NOT A PASS** — recipe `lock`, variant `fixed`: 1500 runs"));
    assert!(clean.contains(
        "No run broke a property: a sample of the world, not a pass (stopped by its time budget)."
    ));
    assert!(!clean.contains("PASS**") || clean.contains("NOT A PASS**"));
    assert!(!clean.contains("✅") && !clean.contains("Replay"));
}

#[test]
fn coverage_has_a_row_per_curve_and_the_model_numbers() {
    let fuzz = markdown(&common::fuzz_report());
    assert!(fuzz.contains(
        "## Coverage\n\n598 abstract states, 2315 steps between them, 143 client features.\n\n\
         **Abstraction**: a state: the tree with sequence numbers"
    ));
    assert!(fuzz.contains(
        "| curve | block | states | new states per block |\n|---|---:|---:|---|\n\
         | guided, campaign seed 7 | 100 runs | 546 | 310, 122, 64, 30, 12, 5, 2, 1 |\n\
         | seeds 0..734 | 100 runs | 377 | 280, 60, 21, 9, 4, 2, 1, 0 |\n"
    ));
    let at = |needle: &str| fuzz.find(needle).unwrap();
    assert!(
        at("## Fuzz campaign") < at("## Coverage") && at("## Coverage") < at("### Failing run 1")
    );

    let sweep = markdown(&common::coverage_sweep_report());
    assert!(
        sweep.contains("| seeds 0..1000 | 100 seeds | 545 | 402, 88, 31, 12, 7, 3, 1, 1, 0, 0 |")
    );
    assert!(sweep.contains(
        "### Against the model\n\nModel `lock/original, 2 clients, 1 cycle, faults \
         connection-loss=1,expiry=1`: 410 of 512 shared abstract states reached (80.1%), \
         48213 model states searched."
    ));
    assert!(sweep.contains("Reached by the runs, not by the model: 3."));
    assert!(sweep.contains("| `x-0:c0 x-1:c1 \\| c0 connected, c1 expired` | 17 |"));
    assert!(sweep.contains("Never reached: 102."));
    assert!(sweep.contains(
        "| `x-0:c0 \\| c0 disconnected (Create in flight), c1 idle` | 4 | \
         `zkcheck replay target/zkcheck/never/n0001.schedule` |"
    ));
    assert!(sweep.contains("| `(empty) \\| c0 expired, c1 expired` | 6 | — |"));
    assert!(!markdown(&common::sweep_report()).contains("## Coverage"));
}
