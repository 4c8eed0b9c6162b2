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
fn rendering_is_deterministic() {
    for (_, report) in common::all() {
        assert_eq!(markdown(&report), markdown(&report.clone()));
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
