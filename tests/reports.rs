//! `--report DIR` and `zkcheck report`: the binary writes JSON, HTML,
//! Markdown and JUnit side by side; the JSON reads back (the versioned
//! schema) and renders to the same Markdown; the HTML of the pause bug
//! carries its ownership timeline with the stale holder and the
//! violation marked. (The renderers' own tests, with snapshots and a
//! headless browser, are in `reports/tests/`.)

use std::path::{Path, PathBuf};
use std::process::Command;

fn zkcheck(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_zkcheck"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("zkcheck runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("reports-{}", std::process::id()))
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_run_report_shows_who_held_the_lock_when() {
    let dir = scratch("run");
    let out = dir.to_str().unwrap();
    let (code, stdout, stderr) = zkcheck(&[
        "sim",
        "scenarios/bugs/bug8-pause-two-holders.toml",
        "--seed",
        "1",
        "--report",
        out,
    ]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    let stem = dir.join("bug8-pause-two-holders-seed-1");
    let html = read(&stem.with_extension("html"));
    for needle in ["class=\"hold stale\"", "violation-marker", "mutual_exclusion/stale-holder-after-expiry"] {
        assert!(html.contains(needle), "the HTML lacks {needle}");
    }
    assert!(!html.contains("<script"), "no script in the page");
    let json = read(&stem.with_extension("json"));
    let report = zk_reports::from_json(&json).expect("the JSON reads back");
    let run = &report.runs[0];
    assert_eq!(run.seed, Some(1));
    assert_eq!(
        run.violations[0].signature,
        "mutual_exclusion/stale-holder-after-expiry"
    );
    assert!(run.holds.iter().any(|h| h.session_ended_ns.is_some()));
    assert!(!run.trace.is_empty());
    let junit = read(&dir.join("bug8-pause-two-holders-seed-1.junit.xml"));
    assert!(junit.contains("<failure"), "{junit}");
    let (code, markdown, _) = zkcheck(&["report", stem.with_extension("json").to_str().unwrap(), "--md"]);
    assert_eq!(code, 0);
    assert_eq!(markdown, read(&stem.with_extension("md")), "report --md renders the same Markdown");
}

#[test]
fn a_sweep_report_has_a_bucket_per_signature_and_replays_each_first_seed() {
    let dir = scratch("sweep");
    let out = dir.to_str().unwrap();
    let (code, stdout, stderr) = zkcheck(&[
        "sweep",
        "scenarios/lock-original.toml",
        "--seeds",
        "0..40",
        "--jobs",
        "2",
        "--all-violations",
        "--report",
        out,
    ]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("failing seeds by signature"), "{stdout}");
    assert!(stdout.contains("fifo/sorted-by-name-not-sequence"), "{stdout}");
    let report = zk_reports::from_json(&read(&dir.join("lock-original.json"))).unwrap();
    let sweep = report.sweep.as_ref().expect("a sweep");
    assert_eq!(sweep.runs, 40);
    assert!(sweep.buckets.len() >= 3, "{:?}", sweep.buckets);
    // A report replays the first seed of at most 10 buckets (REPORTED_BUCKETS).
    for bucket in sweep.buckets.iter().take(10) {
        assert!(
            report.runs.iter().any(|run| run.seed == Some(bucket.first_seed)),
            "bucket {} has its first seed replayed",
            bucket.signature
        );
        assert!(bucket.replay.contains("--all-violations"), "{}", bucket.replay);
    }
}
