//! Bad input to the `zkcheck` binary: every malformed scenario, input file
//! or flag ends in exit status 2 with one short message naming the file,
//! the line and the key (`error: FILE:LINE: key `KEY`: MESSAGE`; the line
//! is absent only for whole-file problems such as a pipe), never a panic
//! and never a hang; a found violation exits 1 even when an output file
//! cannot be written; a run that could not have failed is not a pass.
//!
//! The corpus `tests/corpus/bad-scenarios/*.toml` holds one small scenario
//! per class of bad input; the first line of each names the key the error
//! must name and the class (`# expect-key: config.parents -- ...`). Files
//! that cannot be committed (a megabyte key, a NUL byte, a named pipe) are
//! made in a temporary directory by the tests.
//!
//! Every child process is killed after [`TIMEOUT`], failing the test.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Longest any one command may take (each takes well under a second when
/// it behaves).
const TIMEOUT: Duration = Duration::from_secs(30);
/// Longest stderr of a refusal, in bytes.
const SHORT: usize = 1_000;

/// The workspace root: scenario paths are given relative to it.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// What a finished command did.
struct Run {
    args: Vec<String>,
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl Run {
    fn describe(&self) -> String {
        format!(
            "`zkcheck {}` exited with {:?} after {:.2?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.args.join(" "),
            self.code,
            self.elapsed,
            clip(&self.stdout),
            clip(&self.stderr)
        )
    }

    /// The problems of a run that should have ended with `code`.
    fn problems(&self, code: i32) -> Vec<String> {
        let mut problems = Vec::new();
        if self.code != Some(code) {
            problems.push(format!("exit status {:?}, expected {code}", self.code));
        }
        if self.stdout.contains("panicked") || self.stderr.contains("panicked") {
            problems.push("a panic".to_string());
        }
        problems
    }

    /// Exits with `code` and does not panic.
    fn expect(&self, code: i32) -> &Run {
        let problems = self.problems(code);
        assert!(
            problems.is_empty(),
            "{}: {}",
            problems.join(", "),
            self.describe()
        );
        self
    }

    /// The problems of a run that should refuse bad input: exit 2, a short
    /// `error: ` message on stderr holding each of `words`.
    fn refusal_problems(&self, words: &[&str]) -> Vec<String> {
        let mut problems = self.problems(2);
        if !self.stderr.contains("error: ") {
            problems.push("no `error: ` on stderr".to_string());
        }
        for word in words {
            if !self.stderr.contains(word) {
                problems.push(format!("stderr does not say `{word}`"));
            }
        }
        if self.stderr.len() > SHORT {
            problems.push(format!("{} bytes of stderr", self.stderr.len()));
        }
        problems
    }

    /// Refuses with exit 2 and a short message holding each of `words`.
    fn refused(&self, words: &[&str]) -> &Run {
        let problems = self.refusal_problems(words);
        assert!(
            problems.is_empty(),
            "{}: {}",
            problems.join(", "),
            self.describe()
        );
        self
    }
}

fn clip(text: &str) -> String {
    match text.char_indices().nth(2_000) {
        Some((end, _)) => format!("{}… ({} bytes)", &text[..end], text.len()),
        None => text.to_string(),
    }
}

/// Runs `zkcheck ARGS` in the workspace root; kills it and fails after
/// [`TIMEOUT`].
fn zkcheck(args: &[&str]) -> Run {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_zkcheck"))
        .args(args)
        .current_dir(root())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("zkcheck starts");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr")));
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for zkcheck") {
            break Some(status);
        }
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let run = Run {
        args: args.iter().map(|a| a.to_string()).collect(),
        code: status.and_then(|s| s.code()),
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
        elapsed: started.elapsed(),
    };
    assert!(
        status.is_some(),
        "killed after {TIMEOUT:?}: {}",
        run.describe()
    );
    run
}

/// A fresh directory for one test's files.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bad_input-{}", std::process::id()))
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

fn text(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// A valid scenario: the fixed lock, three clients, a short run.
const BASE: &str = r#"recipe = "lock"
variant = "fixed"
clients = 3
duration_ms = 2000
heal_ms = 2000

[config]
path = "/locks"
parents = ["/locks"]

[workload]
cycles = 3
hold_ms = [1, 5]

[properties]
check = ["mutual_exclusion", "liveness", "no_leaks"]
"#;

/// `error: FILE:LINE: key `KEY`: ` on a line of stderr, LINE a number.
fn names_line_and_key(stderr: &str, file: &str, key: &str) -> bool {
    let prefix = format!("error: {file}:");
    let suffix = format!(": key `{key}`: ");
    stderr.lines().any(|line| {
        line.strip_prefix(&prefix).is_some_and(|rest| {
            let digits = rest.chars().take_while(char::is_ascii_digit).count();
            digits > 0 && rest[digits..].starts_with(&suffix)
        })
    })
}

// ---------------------------------------------------------------------------
// The corpus: one file per class of bad scenario.

#[test]
fn every_corpus_scenario_is_refused_with_its_file_line_and_key() {
    let dir = Path::new("tests/corpus/bad-scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .expect("the corpus directory")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 25, "only {} corpus files", files.len());
    let mut failures = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).expect("a corpus file");
        let key = source
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("# expect-key:"))
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("{}: no `# expect-key:` first line", file.display()));
        let relative = dir.join(file.file_name().expect("a file name"));
        let run = zkcheck(&["sim", text(&relative)]);
        let mut problems = run.refusal_problems(&[text(&relative), &format!("key `{key}`")]);
        if !names_line_and_key(&run.stderr, text(&relative), key) {
            problems.push(format!(
                "no `error: {}:LINE: key `{key}`: `",
                relative.display()
            ));
        }
        if !problems.is_empty() {
            failures.push(format!("{}\n{}", problems.join(", "), run.describe()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} corpus files:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

#[test]
fn sweep_and_replay_refuse_bad_scenarios_too() {
    let file = "tests/corpus/bad-scenarios/schedule-pause-near-i64-max.toml";
    let key = "key `faults.schedule[1].pause_ms`";
    zkcheck(&["sweep", file, "--seeds", "0..2", "--jobs", "1"]).refused(&[file, key]);
    zkcheck(&["replay", file, "--seed", "1"]).refused(&[file, key]);
    zkcheck(&["sim", file, "--variant", "original"]).refused(&[file, key]);
}

// ---------------------------------------------------------------------------
// Files that are not scenario text.

#[test]
fn a_megabyte_key_is_refused_in_a_short_message() {
    let dir = scratch("megabyte-key");
    let file = dir.join("huge-key.toml");
    std::fs::write(&file, format!("{} = 1\n{BASE}", "k".repeat(1_000_000))).unwrap();
    let run = zkcheck(&["sim", text(&file)]);
    run.refused(&[&format!("{}:1: key `kkkk", file.display())]);
}

#[test]
fn long_values_are_clipped_in_messages() {
    let dir = scratch("long-values");
    let long = "s".repeat(100_000);
    let cases = [
        (
            "clients",
            format!("clients = \"{long}\"\n"),
            "clients = 3\n",
        ),
        (
            "config.path",
            format!("path = \"{long}\"\n"),
            "path = \"/locks\"\n",
        ),
        (
            "config.path",
            format!("path = \"/{long}/\"\n"),
            "path = \"/locks\"\n",
        ),
        (
            "variant",
            format!("variant = \"{long}\"\n"),
            "variant = \"fixed\"\n",
        ),
        ("name", format!("name = \"{long}\"\nrecipe"), "recipe"),
    ];
    let mut failures = Vec::new();
    for (index, (key, line, replaced)) in cases.iter().enumerate() {
        let file = dir.join(format!("long-{index}.toml"));
        std::fs::write(&file, BASE.replacen(replaced, line, 1)).unwrap();
        let run = zkcheck(&["sim", text(&file)]);
        let problems = run.refusal_problems(&[text(&file), &format!("key `{key}`")]);
        if !problems.is_empty() {
            failures.push(format!(
                "{key}: {}\n{}",
                problems.join(", "),
                run.describe()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_file_over_the_size_limit_is_refused_unread() {
    let dir = scratch("too-large");
    let file = dir.join("large.toml");
    let padding = format!("# {}\n", "x".repeat(1_000)).repeat(2_100);
    std::fs::write(&file, format!("{BASE}{padding}")).unwrap();
    zkcheck(&["sim", text(&file)]).refused(&[text(&file), "limit"]);
}

#[test]
fn a_nul_byte_is_refused_with_its_line() {
    let dir = scratch("nul-byte");
    let file = dir.join("nul.toml");
    let source = BASE.replacen(
        "clients = 3\n",
        "clients = 3\n# a comment \0 with a NUL\n",
        1,
    );
    std::fs::write(&file, source).unwrap();
    let run = zkcheck(&["sim", text(&file)]);
    run.refused(&[&format!("error: {}:4: ", file.display()), "NUL"]);
    assert!(
        !run.stderr.contains("key `#"),
        "a comment-shaped key: {}",
        run.describe()
    );
}

#[test]
fn text_that_is_not_utf8_is_refused_with_its_line() {
    let dir = scratch("not-utf8");
    let file = dir.join("latin1.toml");
    let mut bytes = BASE.as_bytes().to_vec();
    bytes.extend_from_slice(b"# caf\xe9\n");
    std::fs::write(&file, bytes).unwrap();
    let line = BASE.lines().count() + 1;
    zkcheck(&["sim", text(&file)]).refused(&[&format!("error: {}:{line}: ", file.display())]);
}

#[test]
fn a_named_pipe_is_refused_without_blocking() {
    let dir = scratch("pipe");
    let pipe = dir.join("scenario.toml");
    let made = Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo failed");
    for command in ["sim", "sweep", "replay"] {
        let run = zkcheck(&[command, text(&pipe)]);
        run.refused(&[text(&pipe)]);
        assert!(run.elapsed < Duration::from_secs(10), "{}", run.describe());
    }
}

#[test]
fn a_device_is_refused_without_reading_it() {
    let run = zkcheck(&["sim", "/dev/zero"]);
    run.refused(&["/dev/zero"]);
    assert!(run.elapsed < Duration::from_secs(10), "{}", run.describe());
    zkcheck(&["sweep", "/dev/zero"]).refused(&["/dev/zero"]);
}

#[test]
fn a_directory_or_a_missing_file_is_refused() {
    zkcheck(&["sim", "scenarios"]).refused(&["scenarios"]);
    zkcheck(&["replay", "scenarios/bugs"]).refused(&["scenarios/bugs"]);
    zkcheck(&["sim", "scenarios/no-such-file.toml"]).refused(&["scenarios/no-such-file.toml"]);
}

// ---------------------------------------------------------------------------
// Flags.

#[test]
fn the_last_u64_is_a_seed_and_runs_once() {
    let run = zkcheck(&[
        "sweep",
        "scenarios/lock-fixed.toml",
        "--seeds",
        "18446744073709551615",
        "--jobs",
        "1",
    ]);
    run.expect(0);
    assert!(run.stdout.contains(": 1 seeds in "), "{}", run.describe());
}

#[test]
fn an_empty_seed_range_is_refused() {
    zkcheck(&["sweep", "scenarios/lock-fixed.toml", "--seeds", "5..5"]).refused(&["--seeds"]);
    zkcheck(&["sweep", "scenarios/lock-fixed.toml", "--seeds", "9..2"]).refused(&["--seeds"]);
    zkcheck(&["sweep", "scenarios/lock-fixed.toml", "--seeds", "0..x"]).refused(&["--seeds"]);
}

#[test]
fn a_huge_seed_range_stops_at_the_first_failure() {
    let run = zkcheck(&[
        "sweep",
        "scenarios/bugs/bug1-prefix-ordering.toml",
        "--seeds",
        "0..100000000000",
        "--fail-fast",
        "--jobs",
        "2",
    ]);
    run.expect(1);
    assert!(run.elapsed < Duration::from_secs(20), "{}", run.describe());
    assert!(run.stdout.contains("VIOLATION"), "{}", run.describe());
}

#[test]
fn zero_jobs_and_bad_shards_are_refused() {
    zkcheck(&[
        "sweep",
        "scenarios/lock-fixed.toml",
        "--seeds",
        "0..2",
        "--jobs",
        "0",
    ])
    .refused(&["--jobs"]);
    zkcheck(&[
        "sweep",
        "scenarios/lock-fixed.toml",
        "--seeds",
        "0..2",
        "--jobs",
        "100000",
    ])
    .refused(&["--jobs"]);
    zkcheck(&[
        "sweep",
        "scenarios/lock-fixed.toml",
        "--seeds",
        "0..2",
        "--shard",
        "2/2",
    ])
    .refused(&["--shard"]);
}

#[test]
fn too_many_checker_threads_are_refused() {
    // `check` names itself (`zkcheck check: --threads: ...`) rather than
    // `error: `; the status and the flag are what count.
    for threads in ["10000", "0"] {
        let run = zkcheck(&["check", "lock", "--threads", threads]);
        run.expect(2);
        assert!(run.stderr.contains("--threads"), "{}", run.describe());
        assert!(run.stderr.len() < SHORT, "{}", run.describe());
    }
}

#[test]
fn unknown_recipes_and_bad_model_sizes_are_refused() {
    for (args, flag) in [
        (&["check", "padlock"][..], "RECIPE"),
        (&["check", "lock", "--variant", "patched"][..], "--variant"),
        (&["check", "lock", "--cycles", "0"][..], "--cycles"),
        (&["check", "lock", "--cycles", "1000"][..], "--cycles"),
        (&["check", "lock", "--servers", "3"][..], "--servers"),
        (&["check", "lock", "--servers", "0"][..], "--servers"),
        (
            &["check", "lock", "--servers", "2", "--lag", "0"][..],
            "--lag",
        ),
        (&["explore", "padlock"][..], "RECIPE"),
    ] {
        let run = zkcheck(args);
        run.expect(2);
        assert!(run.stderr.contains(flag), "{}", run.describe());
        assert!(run.stderr.len() < SHORT, "{}", run.describe());
    }
}

/// A client gives up on its session (client-side expiry) only after it lost
/// its connection: `client-expiry` with no fault that disconnects a client
/// would never be spent, and the check would pass without trying it.
#[test]
fn client_expiry_without_a_disconnect_is_refused() {
    for faults in ["client-expiry=1", "client-expiry=1,expiry=1"] {
        let run = zkcheck(&["check", "lock", "--faults", faults]);
        run.expect(2);
        for needle in [
            "--faults",
            "client-expiry=1",
            "after it lost its connection",
        ] {
            assert!(run.stderr.contains(needle), "{needle}: {}", run.describe());
        }
        assert!(run.stderr.len() < SHORT, "{}", run.describe());
    }
}

#[test]
fn the_registered_recipes_are_listed_with_kind_and_variants() {
    let run = zkcheck(&["recipes"]);
    run.expect(0);
    for line in [
        "lock (exclusive lock, default path /locks)",
        "shared_lock (shared lock, default path /shared/db)",
        "election (leader election, default path /leader)",
        "  original_shared_host ",
    ] {
        assert!(run.stdout.contains(line), "{line}: {}", run.describe());
    }
    // Each checkable variant names the reductions `check` accepts for it:
    // the fixed lock both, the fixed barrier (ordered by id) ranks only,
    // the original lock (ordered by session id) ranks only.
    let variant_line = |recipe: &str, variant: &str| -> String {
        let mut lines = run.stdout.lines().skip_while(|l| !l.starts_with(recipe));
        let prefix = format!("  {variant} ");
        lines
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("{recipe}/{variant}: {}", run.describe()))
            .to_string()
    };
    assert!(variant_line("lock ", "fixed").ends_with(" [--symmetry --ranks]"));
    assert!(variant_line("barrier ", "fixed").ends_with(" [--ranks]"));
    assert!(variant_line("lock ", "original").ends_with(" [--ranks]"));
}

#[test]
fn an_unknown_variant_flag_is_refused() {
    zkcheck(&["sim", "scenarios/lock-fixed.toml", "--variant", "patched"]).refused(&["--variant"]);
}

/// The lowest seed (below 1000) on which bug 1's scenario fails.
fn failing_seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(|| {
        let run = zkcheck(&[
            "sweep",
            "scenarios/bugs/bug1-prefix-ordering.toml",
            "--seeds",
            "0..1000",
            "--fail-fast",
            "--jobs",
            "1",
        ]);
        run.expect(1);
        let at = run.stdout.find("(seed ").expect("a failing seed") + "(seed ".len();
        let digits: String = run.stdout[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits
            .parse()
            .unwrap_or_else(|_| panic!("no seed: {}", run.describe()))
    })
}

#[test]
fn a_violation_is_not_hidden_by_an_unwritable_json_file() {
    let seed = failing_seed().to_string();
    let bug = "scenarios/bugs/bug1-prefix-ordering.toml";
    // A path that cannot be created is refused before the run (see
    // tests/suite/untrusted_input.rs); /dev/full opens, and its write fails
    // after the run.
    let json = "/dev/full";
    let run = zkcheck(&["sim", bug, "--seed", &seed, "--json", json]);
    run.expect(1);
    assert!(run.stdout.contains("VIOLATION"), "{}", run.describe());
    assert!(
        run.stderr.contains(json),
        "the write error is not reported: {}",
        run.describe()
    );
    let next = (failing_seed() + 1).to_string();
    let range = format!("{seed}..{next}");
    zkcheck(&["sweep", bug, "--seeds", &range, "--json", json]).expect(1);
}

/// `check` writes each counterexample's schedule into `--out` (default
/// `target/zkcheck`, under the directory it runs in): when that cannot be
/// made, the error names the path (the violation still exits 1).
#[test]
fn a_check_that_cannot_write_its_schedule_names_the_path() {
    let dir = scratch("unwritable-out");
    // A regular file where a directory must be: no directory under it can
    // be made, whoever runs the test (root ignores permission bits).
    let blocker = dir.join("not-a-dir");
    std::fs::write(&blocker, "").unwrap();
    let out = blocker.join("schedules");
    let args = ["check", "lock", "--variant", "original", "--progress", "0"];
    let run = zkcheck(&[&args[..], &["--out", text(&out)]].concat());
    run.expect(1);
    assert!(run.stderr.contains(text(&out)), "{}", run.describe());
    assert!(run.stderr.contains("cannot create"), "{}", run.describe());
    // The default, relative to a working directory where `target` is a file.
    std::fs::write(dir.join("target"), "").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_zkcheck"))
        .args(args)
        .current_dir(&dir)
        .output()
        .expect("zkcheck runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("target/zkcheck"), "{stderr}");
}

#[test]
fn a_pass_with_an_unwritable_json_file_is_an_error() {
    let json = "/nonexistent/dir/x.json";
    zkcheck(&[
        "sim",
        "scenarios/lock-fixed.toml",
        "--seed",
        "1",
        "--json",
        json,
    ])
    .refused(&[json]);
}

// ---------------------------------------------------------------------------
// Model checker schedules given where a scenario or a seed is expected.

/// A schedule written by `zkcheck check`: the counterexample to mutual
/// exclusion of the original lock with two clients.
fn schedule() -> &'static Path {
    static SCHEDULE: OnceLock<PathBuf> = OnceLock::new();
    SCHEDULE.get_or_init(|| {
        let dir = scratch("schedules");
        let run = zkcheck(&[
            "check",
            "lock",
            "--variant",
            "original",
            "--clients",
            "2",
            "--progress",
            "0",
            "--out",
            text(&dir),
        ]);
        run.expect(1);
        let mut written: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("the schedule directory")
            .map(|entry| entry.expect("an entry").path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
            .collect();
        written.sort();
        let preferred = dir.join("lock-original-mutual_exclusion.toml");
        if written.contains(&preferred) {
            return preferred;
        }
        written
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("no schedule written: {}", run.describe()))
    })
}

#[test]
fn a_schedule_replays_as_a_violation() {
    zkcheck(&["replay", text(schedule())]).expect(1);
    zkcheck(&["sim", text(schedule())]).expect(1);
}

#[test]
fn sweep_refuses_a_schedule() {
    zkcheck(&["sweep", text(schedule())]).refused(&[text(schedule()), "schedule"]);
}

#[test]
fn sim_refuses_seed_variant_and_shrink_on_a_schedule() {
    let file = text(schedule());
    zkcheck(&["sim", file, "--seed", "3"]).refused(&[file, "--seed"]);
    zkcheck(&["sim", file, "--variant", "fixed"]).refused(&[file, "--variant"]);
    zkcheck(&["sim", file, "--shrink", "x.toml"]).refused(&[file, "--shrink"]);
    assert!(!root().join("x.toml").exists(), "--shrink wrote x.toml");
}

#[test]
fn replay_refuses_a_seed_on_a_schedule() {
    let file = text(schedule());
    zkcheck(&["replay", file, "--seed", "1"]).refused(&[file, "--seed"]);
}

#[test]
fn a_schedule_with_an_unknown_key_is_refused() {
    let dir = scratch("bad-schedule");
    let file = dir.join("schedule.toml");
    let source = std::fs::read_to_string(schedule()).expect("the schedule");
    std::fs::write(&file, format!("{source}colour = \"red\"\n")).unwrap();
    zkcheck(&["replay", text(&file)]).refused(&[text(&file), "colour"]);
    zkcheck(&["sim", text(&file)]).refused(&[text(&file), "colour"]);
}

// ---------------------------------------------------------------------------
// A run that could not have failed.

/// Valid, but every message takes ten seconds, longer than the whole run
/// (two seconds of faults, two of heal): no session opens and no call is
/// made. (Every request lost before apply, `loss_before_apply = 1.0`, is
/// not enough: the calls in flight complete once the faults heal.)
const NO_PROGRESS: &str = r#"recipe = "lock"
variant = "fixed"
clients = 3
duration_ms = 2000
heal_ms = 2000

[config]
path = "/locks"
parents = ["/locks"]

[workload]
cycles = 3
hold_ms = [1, 5]

[timing]
latency = { min_us = 10000000, max_us = 10000000 }

[properties]
check = ["mutual_exclusion", "fenced_mutual_exclusion"]
"#;

#[test]
fn a_run_without_progress_is_not_a_pass() {
    let dir = scratch("vacuous");
    let file = dir.join("no-progress.toml");
    std::fs::write(&file, NO_PROGRESS).unwrap();
    let sim = zkcheck(&["sim", text(&file), "--seed", "0"]);
    sim.expect(2);
    assert!(
        !sim.stdout.contains("pass:"),
        "reported as a pass: {}",
        sim.describe()
    );
    assert!(sim.stderr.contains("error: "), "{}", sim.describe());
    assert!(
        sim.stderr.contains("could not have failed"),
        "{}",
        sim.describe()
    );
    zkcheck(&["sweep", text(&file), "--seeds", "0..3", "--jobs", "1"]).expect(2);
    zkcheck(&["replay", text(&file), "--seed", "0"]).expect(2);
}

/// The same run with liveness checked: no workload ever made a call (the
/// network answers nothing before the deadline), so the liveness report
/// ("never got a session") is not the recipe's. It did no work: exit 2 with
/// the reason, as without liveness, never exit 1.
#[test]
fn a_run_without_a_call_is_an_error_with_or_without_liveness() {
    let dir = scratch("vacuous-liveness");
    let file = dir.join("no-progress-liveness.toml");
    let with_liveness = NO_PROGRESS.replace(
        r#"check = ["mutual_exclusion", "fenced_mutual_exclusion"]"#,
        r#"check = ["mutual_exclusion", "fenced_mutual_exclusion", "liveness"]"#,
    );
    assert_ne!(with_liveness, NO_PROGRESS);
    std::fs::write(&file, with_liveness).unwrap();
    let sim = zkcheck(&["sim", text(&file), "--seed", "0"]);
    sim.expect(2);
    assert!(!sim.stdout.contains("VIOLATION"), "{}", sim.describe());
    for needle in [
        "could not have failed",
        "0 requests applied",
        "liveness/never-connected",
    ] {
        assert!(sim.stderr.contains(needle), "{needle}: {}", sim.describe());
    }
    zkcheck(&["sweep", text(&file), "--seeds", "0..3", "--jobs", "1"]).expect(2);
    zkcheck(&["replay", text(&file), "--seed", "0"]).expect(2);
}

/// A schedule names the property its replay judges: one the model does not
/// have is refused with the file, the line and the key, before anything
/// replays.
#[test]
fn a_schedule_with_an_unknown_property_is_refused() {
    let dir = scratch("schedule-property");
    let file = dir.join("schedule.toml");
    let source = std::fs::read_to_string(schedule()).expect("the schedule");
    let line = source
        .lines()
        .position(|l| l.starts_with("property = "))
        .expect("a property line")
        + 1;
    let forged: String = source
        .lines()
        .map(|l| match l.starts_with("property = ") {
            true => "property = \"world_peace\"".to_string(),
            false => l.to_string(),
        })
        .map(|l| l + "\n")
        .collect();
    std::fs::write(&file, forged).unwrap();
    let key = format!("{}:{line}: key `property`", text(&file));
    zkcheck(&["replay", text(&file)]).refused(&[&key, "world_peace", "mutual_exclusion"]);
    zkcheck(&["sim", text(&file)]).refused(&[&key]);
}

/// A catalog entry whose model property the model does not have is
/// refused by `bugs` with its file, line and key, before anything runs.
#[test]
fn bugs_refuses_an_unknown_model_property_with_its_key() {
    let dir = scratch("bugs-unknown-property");
    let entry = dir.join("bug9.toml");
    let text_of_entry = r#"recipe = "lock"
variant = "original"
clients = 3
duration_ms = 2000
heal_ms = 2000
expect = "violation"
expect_property = "liveness"
expect_signature = "liveness/watch-on-deleted-node"

[config]
path = "/locks"
parents = ["/locks"]

[properties]
check = ["liveness"]

[catalog]
bug = "9"
model = { property = "gremlins", clients = 2 }
"#;
    std::fs::write(&entry, text_of_entry).expect("write");
    let run = zkcheck(&["bugs", "--dir", text(&dir)]);
    run.expect(2);
    assert!(
        names_line_and_key(&run.stderr, text(&entry), "catalog.model.property"),
        "{}",
        run.describe()
    );
}

/// A catalog entry names the variant that must hold (`catalog.fixed`) and
/// may have a name instead of a number: `bugs` sweeps and model-checks
/// that variant, prints it and reports it; a variant the recipe does not
/// have is refused with the file, the line and the key, before anything
/// runs.
#[test]
fn bugs_runs_the_fixed_variant_a_catalog_entry_names() {
    let entry = |fixed: &str| {
        format!(
            r#"recipe = "lock"
variant = "original"
clients = 3
duration_ms = 5000
heal_ms = 5000
expect = "violation"
expect_property = "liveness"
expect_signature = "liveness/watch-on-deleted-node"

[config]
path = "/locks"
parents = ["/locks"]

[workload]
cycles = 10
hold_ms = [0, 3]
think_ms = [0, 3]

[properties]
check = ["liveness"]

[catalog]
bug = "lock9"
fixed = "{fixed}"
model = {{ property = "no_stuck_waiter", clients = 2 }}
"#
        )
    };
    let dir = scratch("bugs-fixed-variant");
    let file = dir.join("lock9.toml");
    // The fixed lock without its recovery sync holds on one server.
    std::fs::write(&file, entry("unsynced")).expect("write");
    let report = dir.join("report");
    let run = zkcheck(&[
        "bugs",
        "--dir",
        text(&dir),
        "--seeds",
        "0..20",
        "--jobs",
        "2",
        "--report",
        text(&report),
    ]);
    run.expect(0);
    for shown in [
        "lock9    lock original",
        "fixed:      unsynced, 0 of 20 seeds fail, model holds",
        "1 of 1 catalog entries caught",
    ] {
        assert!(run.stdout.contains(shown), "{shown}: {}", run.describe());
    }
    let json = std::fs::read_to_string(report.join("catalog.json")).expect("catalog.json");
    assert!(json.contains(r#""variant": "unsynced""#), "{json}");
    assert!(report.join("lock9.html").is_file());

    std::fs::write(&file, entry("gremlins")).expect("write");
    let run = zkcheck(&["bugs", "--dir", text(&dir)]);
    run.refused(&["gremlins", "unsynced"]);
    assert!(
        names_line_and_key(&run.stderr, text(&file), "catalog.fixed"),
        "{}",
        run.describe()
    );
}

/// `report` reads only its own schema version, and says so.
#[test]
fn report_refuses_another_schema_version() {
    let dir = scratch("report-version");
    let file = dir.join("old.json");
    std::fs::write(&file, r#"{"schema_version": 99}"#).expect("write");
    let run = zkcheck(&["report", text(&file), "--md"]);
    run.expect(2);
    assert!(
        run.stderr.contains("schema version 99"),
        "{}",
        run.describe()
    );
    let missing = dir.join("missing.json");
    zkcheck(&["report", text(&missing), "--html"]).expect(2);
}
