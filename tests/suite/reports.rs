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
    for needle in [
        "class=\"hold stale\"",
        "violation-marker",
        "mutual_exclusion/stale-holder-after-expiry",
    ] {
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
    let (code, markdown, _) = zkcheck(&[
        "report",
        stem.with_extension("json").to_str().unwrap(),
        "--md",
    ]);
    assert_eq!(code, 0);
    assert_eq!(
        markdown,
        read(&stem.with_extension("md")),
        "report --md renders the same Markdown"
    );
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
    assert!(
        stdout.contains("fifo/sorted-by-name-not-sequence"),
        "{stdout}"
    );
    let report = zk_reports::from_json(&read(&dir.join("lock-original.json"))).unwrap();
    let sweep = report.sweep.as_ref().expect("a sweep");
    assert_eq!(sweep.runs, 40);
    assert!(sweep.buckets.len() >= 3, "{:?}", sweep.buckets);
    // The ten largest buckets are pictured (their first seed run again
    // with its trace); every bucket, pictured or not, has its replay line.
    const PICTURED_BUCKETS: usize = 10;
    for (rank, bucket) in sweep.buckets.iter().enumerate() {
        let pictured = report
            .runs
            .iter()
            .any(|run| run.seed == Some(bucket.first_seed));
        if rank < PICTURED_BUCKETS {
            assert!(
                pictured,
                "bucket {} has its first seed replayed",
                bucket.signature
            );
        }
        assert!(
            bucket.replay.contains("--all-violations"),
            "{}",
            bucket.replay
        );
    }
    assert!(
        report.runs.len() <= PICTURED_BUCKETS,
        "{} runs",
        report.runs.len()
    );
}

#[test]
fn a_model_counterexample_gets_the_pictures_of_a_run() {
    let dir = scratch("check");
    let schedules = dir.join("schedules");
    let (code, stdout, stderr) = zkcheck(&[
        "check",
        "lock",
        "--variant",
        "original",
        "--clients",
        "2",
        "--out",
        schedules.to_str().unwrap(),
        "--report",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    let report = zk_reports::from_json(&read(&dir.join("lock-original.json"))).unwrap();
    let check = report.check.as_ref().expect("a check record");
    assert_eq!(
        (check.recipe.as_str(), check.variant.as_str()),
        ("lock", "original")
    );
    assert!(check.exhaustive);
    let violated: Vec<_> = check
        .properties
        .iter()
        .filter(|p| p.verdict == "violated")
        .collect();
    assert!(violated.iter().any(|p| p.name == "fifo"), "{violated:?}");
    assert_eq!(
        report.runs.len(),
        violated.len(),
        "one run per counterexample"
    );
    for (property, run) in violated.iter().zip(&report.runs) {
        let schedule = property.schedule.as_deref().expect("the schedule file");
        assert_eq!(run.scenario, schedule);
        assert!(run.replay.contains(" replay "), "{}", run.replay);
        assert!(!property.steps.is_empty());
        assert!(!run.trace.is_empty(), "the steps as a trace");
        assert!(!run.holds.is_empty(), "who held the lock when");
        assert!(
            !run.violations.is_empty(),
            "{}: the replay shows the violation the checker found",
            property.name
        );
        for violation in &run.violations {
            assert!(
                !violation.signature.ends_with("/undiagnosed")
                    && !violation.signature.ends_with("/unexplained"),
                "{}",
                violation.signature
            );
        }
    }
    let fifo = report
        .runs
        .iter()
        .find(|run| run.scenario.ends_with("-fifo.toml"))
        .unwrap();
    assert!(fifo
        .violations
        .iter()
        .any(|v| v.signature == "fifo/sorted-by-name-not-sequence"));
    let html = read(&dir.join("lock-original.html"));
    assert!(html.contains("class=\"hold\""), "the ownership timeline");
    assert!(html.contains("fifo/sorted-by-name-not-sequence"));
    let junit = read(&dir.join("lock-original.junit.xml"));
    assert!(junit.contains("<failure"), "{junit}");
}
