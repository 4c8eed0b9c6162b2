//! `zkcheck check --clients LO..HI`, the empirical cutoff: one check per
//! client count, a row each (unique and generated states, time, search,
//! verdicts, the signatures of the counterexamples replayed on the
//! simulator, what is new at that count) and where adding a client
//! stopped changing the answer. The original lock shows a new verdict at
//! each count (the herd needs three clients); the fixed lock holds from
//! one client on; a timed-out count skips the larger ones; bad ranges exit
//! 2 naming `--clients`. `--clients N` is unchanged (the other tests).

use std::path::PathBuf;
use std::process::{Command, Output};

fn zkcheck(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zkcheck"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("RUST_LOG")
        .output()
        .expect("zkcheck runs")
}

/// A directory in the system's temp directory, unique to this process and test.
fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("zkcheck-cutoff-{}-{name}", std::process::id()))
}

/// One table row: (clients, unique states, states generated, search, new).
#[derive(Debug, PartialEq)]
struct Row {
    clients: usize,
    unique: u64,
    generated: u64,
    search: String,
    new: String,
}

/// The table rows of a cutoff's output (lines that start with a count).
fn rows(stdout: &str) -> Vec<Row> {
    stdout
        .lines()
        .filter(|line| {
            line.starts_with("   ") && line.trim_start().starts_with(|c: char| c.is_ascii_digit())
        })
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            // clients, unique, generated, time, search words..., new words...
            let (search, new) = match words[4] {
                "exhaustive" | "TIMED" => {
                    let n = if words[4] == "TIMED" { 6 } else { 5 };
                    (words[4..n].join(" "), words[n..].join(" "))
                }
                other => panic!("unexpected search column `{other}` in `{line}`"),
            };
            Row {
                clients: words[0].parse().unwrap(),
                unique: words[1].parse().unwrap(),
                generated: words[2].parse().unwrap(),
                search,
                new,
            }
        })
        .collect()
}

fn row(clients: usize, unique: u64, generated: u64, search: &str, new: &str) -> Row {
    Row {
        clients,
        unique,
        generated,
        search: search.to_string(),
        new: new.to_string(),
    }
}

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The original lock with one connection loss, 2..3 clients (depth first,
/// one thread: the same counts every run): violations at both counts, the
/// herd new at three, each counterexample written once, at the first
/// count it shows, and no cutoff.
#[test]
fn original_lock_changes_at_every_count() {
    let out = temp("original");
    let output = zkcheck(&[
        "check",
        "lock",
        "--variant",
        "original",
        "--clients",
        "2..3",
        "--faults",
        "connection-loss=1",
        "--strategy",
        "dfs",
        "--progress",
        "0",
        "--out",
        out.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert_eq!(
        rows(&stdout),
        [
            row(2, 20_750, 38_190, "exhaustive", "first count"),
            row(3, 226_005, 415_828, "exhaustive", "yes"),
        ],
        "{stdout}"
    );
    assert!(
        stdout
            .contains("VIOLATED: mutual_exclusion [mutual_exclusion/sorted-by-name-not-sequence]"),
        "{stdout}"
    );
    assert!(stdout.contains("         holds: herd\n"), "{stdout}");
    let new = stdout
        .lines()
        .find(|line| line.trim_start().starts_with("new: "))
        .unwrap_or_else(|| panic!("no new line\n{stdout}"));
    assert!(
        new.contains("herd VIOLATED") && new.contains("herd/one-release-wakes-many"),
        "{new}"
    );
    assert!(
        !new.contains("mutual_exclusion"),
        "not new at 3 clients: {new}"
    );
    assert!(
        stdout.contains("counterexample for mutual_exclusion first at 2 client(s)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("counterexample for herd first at 3 client(s)"),
        "{stdout}"
    );
    assert_eq!(
        stdout
            .matches("counterexample for mutual_exclusion")
            .count(),
        1
    );
    assert!(out.join("lock-original-herd-3clients.toml").is_file());
    assert!(out
        .join("lock-original-mutual_exclusion-2clients.toml")
        .is_file());
    assert!(!out
        .join("lock-original-mutual_exclusion-3clients.toml")
        .exists());
    assert!(
        stdout
            .trim_end()
            .ends_with("the last count, 3 clients, still changed the answer: no cutoff up to 3"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// The fixed lock with one connection loss holds at 1, 2 and 3 clients:
/// nothing new after the first count.
#[test]
fn fixed_lock_has_nothing_new_after_one_client() {
    let output = zkcheck(&[
        "check",
        "lock",
        "--variant",
        "fixed",
        "--clients",
        "1..3",
        "--faults",
        "connection-loss=1",
        "--progress",
        "0",
    ]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(
        rows(&stdout),
        [
            row(1, 43, 63, "exhaustive", "first count"),
            row(2, 1_810, 3_725, "exhaustive", "no"),
            row(3, 171_130, 425_989, "exhaustive", "no"),
        ],
        "{stdout}"
    );
    assert!(!stdout.contains("VIOLATED"), "{stdout}");
    assert!(!stdout.contains("counterexample for"), "{stdout}");
    assert!(
        stdout
            .trim_end()
            .ends_with("no new verdict or diagnosis after 1 client(s) (checked up to 3)"),
        "{stdout}"
    );
}

/// A count whose search times out is not exhaustive, and the larger
/// counts are skipped and named; nothing found in a bounded search is not
/// a pass: exit 4.
#[test]
fn a_timeout_skips_the_larger_counts() {
    let output = zkcheck(&[
        "check",
        "lock",
        "--variant",
        "fixed",
        "--clients",
        "1..4",
        "--faults",
        "connection-loss=2,expiry=2",
        "--timeout",
        "1",
        "--progress",
        "0",
    ]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(4), "{stdout}\n{stderr}");
    let rows = rows(&stdout);
    assert_eq!(rows.len(), 2, "{stdout}");
    assert_eq!(rows[0].search, "exhaustive", "{stdout}");
    assert_eq!(rows[1].search, "TIMED OUT", "{stdout}");
    let last = stdout.trim_end().lines().last().unwrap();
    assert!(
        last.contains("not exhaustive at 2 client(s)")
            && last.ends_with(
                "skipped 3..4 client(s): 2 clients timed out, a larger count would not finish either"
            ),
        "{last}"
    );
}

/// Bad ranges exit 2 with an error naming `--clients`, before any check
/// runs; `--report` takes one count.
#[test]
fn bad_ranges_exit_2_naming_the_flag() {
    for range in ["2..", "..3", "5..2", "0..3", "2..17", "2..x", "", "2...3"] {
        let output = zkcheck(&["check", "lock", "--clients", range]);
        let (stdout, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{range}: {stdout}\n{stderr}");
        assert!(stderr.contains("--clients"), "{range}: {stderr}");
        assert!(stdout.is_empty(), "{range}: {stdout}");
        assert!(!stderr.contains("panicked"), "{range}: {stderr}");
    }
    let output = zkcheck(&["check", "lock", "--clients", "2..3", "--report", "x"]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.starts_with("error: --report: "), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
}
