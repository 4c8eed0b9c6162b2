//! `sweep --shard K/N --json` and `zkcheck merge` on the binary: the merge
//! of a sweep's shards is the unsharded sweep (counts, buckets with their
//! kept seeds, failures); each bucket keeps at most its
//! `kept_seeds_per_bucket` lowest seeds while counting all; missing,
//! repeated and mismatched shards, malformed and old JSON are refused or
//! marked (exit 2, naming the file, the line and the key); a merged report
//! is the sweep's report; a kept seed replays to its violation.

use crate::common;

use crate::common::{zkcheck, Run};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The original lock fails every seed, under several signatures.
const FAILING: &str = "scenarios/lock-original.toml";
const PASSING: &str = "scenarios/lock-fixed.toml";

fn scratch(test: &str) -> PathBuf {
    common::scratch("sweep-merge", test)
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

/// Sweeps `scenario` over `seeds`, whole (`whole.json`) and in `count`
/// shards (`shard-K.json`); `extra` flags go to every sweep.
fn sweep_and_shards(dir: &Path, scenario: &str, seeds: &str, count: u64, extra: &[&str]) -> i32 {
    let whole = path(dir, "whole.json");
    let mut args = vec!["sweep", scenario, "--seeds", seeds, "--jobs", "2", "--json"];
    args.push(&whole);
    args.extend(extra);
    let code = zkcheck(&args).code;
    for k in 0..count {
        let shard = format!("{k}/{count}");
        let out = path(dir, &format!("shard-{k}.json"));
        let mut args = vec![
            "sweep", scenario, "--seeds", seeds, "--jobs", "2", "--shard", &shard, "--json", &out,
        ];
        args.extend(extra);
        zkcheck(&args).expect(code);
    }
    code
}

fn shard_files(dir: &Path, indices: &[u64]) -> Vec<String> {
    indices
        .iter()
        .map(|k| path(dir, &format!("shard-{k}.json")))
        .collect()
}

fn merge(files: &[impl AsRef<str>], extra: &[&str]) -> Run {
    let mut args = vec!["merge"];
    args.extend(files.iter().map(AsRef::as_ref));
    args.extend(extra);
    zkcheck(&args)
}

const SAME: [&str; 9] = [
    "runs",
    "passed",
    "failed",
    "violations",
    "no_progress",
    "failures_by_property",
    "buckets",
    "first_failures",
    "expected_runs",
];

#[test]
fn the_merge_of_a_failing_sweeps_shards_is_the_whole_sweep() {
    let dir = scratch("failing");
    let code = sweep_and_shards(&dir, FAILING, "0..300", 3, &["--all-violations"]);
    assert_eq!(code, 1, "the original lock fails");
    let merged = path(&dir, "merged.json");
    // Given in any order.
    let files = shard_files(&dir, &[2, 0, 1]);
    merge(&files, &["--json", &merged]).expect(1);
    let whole = read_json(&dir.join("whole.json"));
    let merged = read_json(Path::new(&merged));
    for key in SAME {
        assert_eq!(whole[key], merged[key], "`{key}` differs");
    }
    assert!(
        whole["buckets"].as_array().unwrap().len() > 3,
        "several buckets"
    );
    assert_eq!(merged["complete"], true);
    assert_eq!(merged["merged_shards"]["missing"], serde_json::json!([]));
    assert_eq!(
        merged["merged_shards"]["merged"],
        serde_json::json!([0, 1, 2])
    );
}

#[test]
fn the_merge_of_a_passing_sweeps_shards_passes() {
    let dir = scratch("passing");
    assert_eq!(sweep_and_shards(&dir, PASSING, "0..100", 2, &[]), 0);
    let merged = path(&dir, "merged.json");
    let run = merge(&shard_files(&dir, &[0, 1]), &["--json", &merged]);
    run.expect(0);
    assert!(
        run.stdout.contains("100 of 100 seeds, 0 failed"),
        "{}",
        run.stdout
    );
    let whole = read_json(&dir.join("whole.json"));
    let merged = read_json(Path::new(&merged));
    for key in SAME {
        assert_eq!(whole[key], merged[key], "`{key}` differs");
    }
}

#[test]
fn a_bucket_keeps_its_lowest_seeds_and_counts_them_all() {
    let dir = scratch("bound");
    let json = path(&dir, "sweep.json");
    zkcheck(&[
        "sweep", FAILING, "--seeds", "0..300", "--jobs", "2", "--json", &json,
    ])
    .expect(1);
    let sweep = read_json(Path::new(&json));
    let kept = sweep["kept_seeds_per_bucket"].as_u64().unwrap();
    assert!(kept >= 1);
    assert_eq!(sweep["failed"], 300);
    let buckets = sweep["buckets"].as_array().unwrap();
    let biggest = &buckets[0];
    assert!(
        biggest["seeds"].as_u64().unwrap() > 10 * kept,
        "a bucket with many more seeds than are kept: {biggest}"
    );
    let mut total = 0;
    for bucket in buckets {
        let seeds: Vec<u64> = bucket["first_seeds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_u64().unwrap())
            .collect();
        let counted = bucket["seeds"].as_u64().unwrap();
        total += counted;
        assert_eq!(seeds.len() as u64, counted.min(kept), "{bucket}");
        assert_eq!(seeds[0], bucket["first_seed"].as_u64().unwrap());
        assert!(seeds.windows(2).all(|w| w[0] < w[1]), "in order: {bucket}");
    }
    assert!(
        total >= 300,
        "every failing seed counts in a bucket: {total}"
    );
    // The kept seeds are the lowest: every seed of the range fails, and the
    // biggest bucket's are its lowest seeds whoever ran them first.
    let failures = sweep["first_failures"].as_array().unwrap();
    let kept_failures = sweep["kept_first_failures"].as_u64().unwrap();
    assert_eq!(failures.len() as u64, kept_failures);
    let seeds: Vec<u64> = failures
        .iter()
        .map(|f| f["seed"].as_u64().unwrap())
        .collect();
    assert_eq!(seeds, (0..kept_failures).collect::<Vec<_>>());
    // A kept seed reproduces: its printed replay command fails again.
    let replay = biggest["replay"].as_str().unwrap();
    let words: Vec<&str> = replay.split_whitespace().skip(1).collect();
    let run = zkcheck(&words);
    run.expect(1);
    assert!(
        run.stdout.contains(biggest["signature"].as_str().unwrap()),
        "the replay shows the bucket's signature:\n{}",
        run.stdout
    );
}

#[test]
fn a_missing_shard_is_marked_incomplete_and_never_passes() {
    let dir = scratch("missing");
    sweep_and_shards(&dir, PASSING, "0..60", 3, &[]);
    let merged = path(&dir, "merged.json");
    let run = merge(&shard_files(&dir, &[0, 2]), &["--json", &merged]);
    run.refused(&["INCOMPLETE", "shard(s) 1 of 3 missing"]);
    assert!(run.stdout.contains("INCOMPLETE"), "{}", run.stdout);
    let merged = read_json(Path::new(&merged));
    assert_eq!(merged["complete"], false);
    assert_eq!(merged["merged_shards"]["missing"], serde_json::json!(["1"]));
    assert_eq!(merged["expected_runs"], 60);
    assert_eq!(merged["runs"], 40);

    // With a violation in the shards given, exit 1 wins; still marked.
    let failing = scratch("missing-failing");
    sweep_and_shards(&failing, FAILING, "0..40", 4, &[]);
    let run = merge(&shard_files(&failing, &[0, 3]), &[]);
    run.expect(1);
    assert!(
        run.stderr
            .contains("INCOMPLETE merge: shard(s) 1..3 of 4 missing"),
        "{}",
        run.stderr
    );
}

#[test]
fn repeated_and_mismatched_shards_are_refused() {
    let dir = scratch("mismatch");
    sweep_and_shards(&dir, PASSING, "0..40", 2, &[]);
    let files = shard_files(&dir, &[0, 1]);
    // The same shard twice (a copy under another name).
    let copy = path(&dir, "copy-of-0.json");
    std::fs::copy(&files[0], &copy).unwrap();
    merge(&[files[0].clone(), files[1].clone(), copy.clone()], &[]).refused(&[
        "shard 0/2 is also",
        &copy,
        &files[0],
    ]);
    // Another shard count, another range, another variant, other options.
    let other = |name: &str, args: &[&str]| {
        let out = path(&dir, name);
        let mut all = vec!["sweep", PASSING, "--jobs", "2", "--json", &out];
        all.extend(args);
        zkcheck(&all);
        out
    };
    let thirds = other("third.json", &["--seeds", "0..40", "--shard", "1/3"]);
    merge(&[files[0].clone(), thirds.clone()], &[]).refused(&[&thirds, "key `shard`"]);
    let range = other("range.json", &["--seeds", "0..50", "--shard", "1/2"]);
    merge(&[files[0].clone(), range.clone()], &[]).refused(&[&range, "key `seeds`", "0..50"]);
    let variant = other(
        "variant.json",
        &[
            "--seeds",
            "0..40",
            "--shard",
            "1/2",
            "--variant",
            "original",
        ],
    );
    merge(&[files[0].clone(), variant.clone()], &[]).refused(&[&variant, "key `variant`"]);
    let options = other(
        "options.json",
        &["--seeds", "0..40", "--shard", "1/2", "--all-violations"],
    );
    merge(&[files[0].clone(), options.clone()], &[]).refused(&["key `all_violations`"]);
    // A merge is not a shard.
    let merged = path(&dir, "merged.json");
    merge(&files, &["--json", &merged]).expect(0);
    merge(&[&merged], &[]).refused(&[&merged, "key `merged_shards`"]);
}

#[test]
fn malformed_shard_files_are_refused_with_file_line_and_key() {
    let dir = scratch("malformed");
    sweep_and_shards(&dir, PASSING, "0..20", 2, &[]);
    let good = std::fs::read_to_string(dir.join("shard-1.json")).unwrap();
    let write = |name: &str, text: &str| {
        let file = path(&dir, name);
        std::fs::write(&file, text).unwrap();
        file
    };
    let line_of = |key: &str| {
        good.lines()
            .position(|l| l.trim_start().starts_with(&format!("\"{key}\":")))
            .unwrap()
            + 1
    };
    // Cut short: not JSON.
    let cut = write("cut.json", &good[..good.len() / 2]);
    merge(&[&cut], &[]).refused(&[&format!("{cut}:"), "not JSON"]);
    // A count of the wrong type: the line and the key.
    let typed = write(
        "typed.json",
        &good.replace("\"runs\": 10,", "\"runs\": \"ten\","),
    );
    merge(&[&typed], &[]).refused(&[&format!("{typed}:{}: key `runs`", line_of("runs"))]);
    // A key missing.
    let mut value: Value = serde_json::from_str(&good).unwrap();
    value.as_object_mut().unwrap().remove("violations");
    let missing = write(
        "missing.json",
        &serde_json::to_string_pretty(&value).unwrap(),
    );
    merge(&[&missing], &[]).refused(&[&missing, "`violations`"]);
    // Counts that do not add up.
    let counts = write(
        "counts.json",
        &good.replace("\"passed\": 10,", "\"passed\": 9,"),
    );
    merge(&[&counts], &[]).refused(&[&format!("{counts}:{}: key `passed`", line_of("passed"))]);
    // A sweep's JSON of before format 2, and something else entirely.
    let old = write(
        "old.json",
        "{\n  \"scenario\": \"lock-fixed\",\n  \"runs\": 10\n}\n",
    );
    merge(&[&old], &[]).refused(&[&old, "key `format`"]);
    let version = write(
        "version.json",
        &good.replace("\"format_version\": 4,", "\"format_version\": 5,"),
    );
    merge(&[&version], &[]).refused(&[&format!(
        "{version}:{}: key `format_version`",
        line_of("format_version")
    )]);
    merge(&[path(&dir, "absent.json")], &[]).refused(&["absent.json"]);
    // A good file beside a bad one: nothing merged, no JSON written.
    let out = path(&dir, "out.json");
    merge(&[path(&dir, "shard-0.json"), cut], &["--json", &out]).expect(2);
    assert!(!Path::new(&out).exists());
}

/// A shard another zkcheck wrote is refused, naming the file and
/// `generated_by`; so is a shard edited after its sweep wrote it, even one
/// whose counts were all changed to agree (a failing shard made to look
/// passing): its `digest` no longer matches its content. (The digest is a
/// checksum, not a signature: a forger who recomputes it is not caught.)
#[test]
fn shards_of_another_zkcheck_or_edited_since_are_refused() {
    let dir = scratch("forged");
    assert_eq!(sweep_and_shards(&dir, FAILING, "0..20", 2, &[]), 1);
    let files = shard_files(&dir, &[0, 1]);
    merge(&files, &[]).expect(1);
    let write = |name: &str, value: &Value| {
        let file = path(&dir, name);
        std::fs::write(&file, serde_json::to_string_pretty(value).unwrap()).unwrap();
        file
    };
    // Both shards from another version: consistent with each other.
    let older: Vec<String> = files
        .iter()
        .enumerate()
        .map(|(k, file)| {
            let mut value = read_json(Path::new(file));
            value["generated_by"] = Value::from("zkcheck 0.0.1");
            write(&format!("older-{k}.json"), &value)
        })
        .collect();
    merge(&older, &[]).refused(&[&older[0], "key `generated_by`", "zkcheck 0.0.1"]);
    // Shard 1 made to pass, every count made to agree.
    let mut value = read_json(Path::new(&files[1]));
    let runs = value["runs"].clone();
    value["passed"] = runs;
    for key in ["failed", "violations", "no_progress", "internal_errors"] {
        value[key] = Value::from(0);
    }
    value["buckets"] = Value::Array(Vec::new());
    value["first_failures"] = Value::Array(Vec::new());
    value["failures_by_property"] = Value::Object(Default::default());
    let forged = write("forged-1.json", &value);
    merge(&[files[0].clone(), forged.clone()], &[]).refused(&[&forged, "key `digest`"]);
    // Unchanged, the same file merges.
    let copied = write("copied-1.json", &read_json(Path::new(&files[1])));
    merge(&[files[0].clone(), copied], &[]).expect(1);
}

#[test]
fn a_merged_report_is_the_sweeps_report() {
    let dir = scratch("report");
    sweep_and_shards(&dir, FAILING, "0..30", 2, &[]);
    let whole_dir = dir.join("whole-report");
    let merged_dir = dir.join("merged-report");
    zkcheck(&[
        "sweep",
        FAILING,
        "--seeds",
        "0..30",
        "--jobs",
        "2",
        "--report",
        whole_dir.to_str().unwrap(),
    ])
    .expect(1);
    merge(
        &shard_files(&dir, &[0, 1]),
        &["--report", merged_dir.to_str().unwrap()],
    )
    .expect(1);
    let whole = read_json(&whole_dir.join("lock-original.json"));
    let merged = read_json(&merged_dir.join("lock-original.json"));
    assert_eq!(merged["kind"], "sweep");
    assert_eq!(whole["sweep"], merged["sweep"]);
    assert_eq!(whole["runs"], merged["runs"], "the same seeds replayed");
    assert!(!merged["runs"].as_array().unwrap().is_empty());
    assert_eq!(merged["sweep"]["kept_seeds_per_bucket"], 10);
    for ext in ["html", "md", "junit.xml"] {
        assert!(merged_dir.join(format!("lock-original.{ext}")).is_file());
    }
}
