//! A panic inside a run is an internal error of zkcheck, never a property
//! violation of the recipe: `sweep` counts it apart (`internal_errors`,
//! bucket `internal_error`) and exits 3; `sim`, `replay` and `bugs` exit 3
//! with the seed, the panic and the `sim` command that reruns it; a
//! `zkcheck::testing` check fails saying it is an internal error.
//!
//! No shipped recipe panics (and none may be added to the shipped
//! registry for this), so this test is its own `main` (`harness = false`):
//! started with [`CHILD`] set, it is zkcheck's command line on the
//! built-in recipes plus the test-only `panicking_lock` below; otherwise
//! it runs the checks on that child.
//!
//! Every check runs the simulator, which exists only with `--cfg madsim`
//! (.cargo/config.toml): without it this test's `main` only says so.
#![cfg_attr(not(madsim), allow(dead_code, unused_imports))]

use std::path::Path;
use std::process::{Command, ExitCode};
use zkcheck::recipes::lock::{FixedLock, LockCall, LockOutcome, OriginalLock};
use zkcheck::recipes::{Input, Outbox, Recipe};
use zkcheck::{ClientContext, HoldCalls, RecipeEntry, RecipeKind, Registry, Variant};

/// Set in the environment of the child that runs the command line.
pub(crate) const CHILD: &str = "ZKCHECK_INTERNAL_ERROR_CLI_CHILD";
const SCENARIO: &str = "tests/fixtures/internal_error/panicking-lock.toml";
const CATALOG: &str = "tests/fixtures/internal_error/catalog";
/// What the fixture's panic says.
const PANIC: &str = "panicking_lock panics on purpose";

/// TEST FIXTURE: a built-in lock, except that a client whose unique id
/// (drawn from the seed) is a multiple of `panic_every` panics at its
/// first `Lock` call. Variants: `panics` (the fixed lock, 1 client in 4
/// panics), `fixed` (never panics), `original_panics` (the original lock,
/// bug 1 included, 1 client in 16 panics: a catalog entry).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct PanickingLock {
    inner: Inner,
    panics: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Inner {
    Fixed(FixedLock),
    Original(OriginalLock),
}

impl Recipe for PanickingLock {
    type Call = LockCall;
    type Outcome = LockOutcome;

    fn handle(&mut self, input: Input<LockCall>, out: &mut Outbox<LockOutcome>) {
        if self.panics && matches!(input, Input::Call(LockCall::Lock)) {
            panic!("{PANIC}");
        }
        match &mut self.inner {
            Inner::Fixed(lock) => lock.handle(input, out),
            Inner::Original(lock) => lock.handle(input, out),
        }
    }
}

fn entry() -> RecipeEntry {
    let variant = |name: &str, about: &str, original: bool, panic_every: u64| {
        let calls = HoldCalls::new(LockCall::Lock, LockCall::Unlock);
        Variant::hold(name, about, calls, move |c: &ClientContext| PanickingLock {
            inner: match original {
                true => Inner::Original(OriginalLock::new(c.path.clone())),
                false => Inner::Fixed(FixedLock::new(c.path.clone(), c.unique_id)),
            },
            panics: panic_every > 0 && c.unique_id.is_multiple_of(panic_every),
        })
        .needs_existing_path()
    };
    RecipeEntry::new("panicking_lock", RecipeKind::ExclusiveLock, "/locks")
        .variant(variant("panics", "panics on some seeds", false, 4))
        .variant(variant("fixed", "never panics", false, 0))
        .variant(variant(
            "original_panics",
            "the original lock, panics on some seeds",
            true,
            16,
        ))
}

/// TEST FIXTURE: an async "recipe" whose code starts an OS thread, which
/// the simulator refuses inside a run.
fn os_thread_entry() -> RecipeEntry {
    let run = zkcheck::asynchronous::workload(|_client, _ctx| async move {
        let _ = std::thread::spawn(|| ()).join();
    });
    RecipeEntry::new("os_thread", RecipeKind::ExclusiveLock, "/threads").variant(
        Variant::asynchronous(
            "spawns",
            "starts an OS thread",
            RecipeKind::ExclusiveLock,
            run,
        ),
    )
}

fn registry() -> Registry {
    Registry::builtin().with(entry()).with(os_thread_entry())
}

/// A live-only build (no `--cfg madsim`): nothing to check.
#[cfg(not(madsim))]
pub(crate) fn main() -> ExitCode {
    println!("test result: ok. 0 passed (the simulator needs --cfg madsim)");
    ExitCode::SUCCESS
}

#[cfg(madsim)]
pub(crate) fn main() -> ExitCode {
    if std::env::var_os(CHILD).is_some() {
        return zkcheck::main_with(registry());
    }
    let out = std::env::temp_dir().join(format!("zkcheck-internal-error-{}", std::process::id()));
    std::fs::create_dir_all(&out).expect("a temporary directory");
    let checks: [Check; 8] = [
        (
            "sweep counts a panic as an internal error (exit 3), not a violation",
            sweep,
        ),
        ("the sweep's JSON counts internal errors apart", sweep_json),
        ("merge of shards with internal errors exits 3", merge),
        ("sim exits 3 with the seed, the panic and the rerun", sim),
        ("replay exits 3 with the seed and the panic", replay),
        ("bugs reports a panicking seed as an internal error", bugs),
        ("zkcheck::testing fails with an internal error", testing),
        (
            "an OS thread in the code under test is named as such",
            os_thread,
        ),
    ];
    for (name, check) in checks {
        check(&out);
        println!("test {name} ... ok");
    }
    let _ = std::fs::remove_dir_all(&out);
    println!("test result: ok. {} passed", checks.len());
    ExitCode::SUCCESS
}

/// A named check, given an output directory.
type Check = (&'static str, fn(&Path));

/// What a finished command did.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn shown(&self) -> String {
        format!(
            "exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }

    fn expect(&self, code: i32, needles: &[&str]) {
        let shown = self.shown();
        assert_eq!(self.code, Some(code), "{shown}");
        for needle in needles {
            let found = self.stdout.contains(needle) || self.stderr.contains(needle);
            assert!(found, "`{needle}` missing\n{shown}");
        }
        // The default panic hook's noise stays off: zkcheck says it once.
        assert!(!self.stderr.contains("panicked at"), "{shown}");
        assert!(!shown.contains("VIOLATION"), "{shown}");
    }
}

/// The command line with the fixture registered.
fn with_fixture(args: &[&str]) -> Run {
    let output = Command::new(std::env::current_exe().expect("this test"))
        .args(args)
        .env(CHILD, "1")
        .env_remove("RUST_BACKTRACE")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the command starts");
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The lowest seed of 0..20 that panics and the lowest that passes, from
/// the sweep's JSON.
fn seeds(out: &Path) -> (u64, u64) {
    let json = sweep_json_value(out);
    let kept = &json["first_failures"];
    let panicking = kept[0]["seed"].as_u64().expect("a failing seed");
    let failing: Vec<u64> = kept
        .as_array()
        .expect("first_failures")
        .iter()
        .filter_map(|f| f["seed"].as_u64())
        .collect();
    let passing = (0..20)
        .find(|s| !failing.contains(s))
        .expect("a passing seed");
    (panicking, passing)
}

fn sweep_json_value(out: &Path) -> serde_json::Value {
    let path = out.join("sweep.json");
    if !path.exists() {
        let file = path.to_str().expect("UTF-8");
        with_fixture(&["sweep", SCENARIO, "--jobs", "2", "--json", file]);
    }
    let text = std::fs::read_to_string(&path).expect("the sweep's JSON");
    serde_json::from_str(&text).expect("JSON")
}

fn sweep(_: &Path) {
    let run = with_fixture(&["sweep", SCENARIO, "--jobs", "2"]);
    run.expect(
        3,
        &[
            "INTERNAL ERRORS of zkcheck, not violations",
            "internal_error",
            "INTERNAL ERROR of zkcheck (seed ",
            PANIC,
            "not a property violation of the recipe",
            &format!(" sim {SCENARIO} --seed "),
        ],
    );
    // Some seeds pass: the panic is the fixture's, seed by seed.
    assert!(!run.stdout.contains(", 20 failed"), "{}", run.shown());
}

fn sweep_json(out: &Path) {
    let json = sweep_json_value(out);
    let failed = json["failed"].as_u64().expect("failed");
    let internal = json["internal_errors"].as_u64().expect("internal_errors");
    assert!(failed > 0 && failed < 20, "{json}");
    assert_eq!(internal, failed, "{json}");
    assert_eq!(json["violations"].as_u64(), Some(0), "{json}");
    assert_eq!(json["no_progress"].as_u64(), Some(0), "{json}");
    let buckets = json["buckets"].as_array().expect("buckets");
    assert_eq!(buckets.len(), 1, "{json}");
    assert_eq!(buckets[0]["signature"], "internal_error", "{json}");
    assert_eq!(buckets[0]["seeds"].as_u64(), Some(internal), "{json}");
    let replay = buckets[0]["replay"].as_str().expect("replay");
    assert!(
        replay.contains(&format!(" sim {SCENARIO} --seed ")),
        "{replay}"
    );
    let panic = json["first_failures"][0]["panic"].as_str().expect("panic");
    assert!(
        panic.contains(PANIC) && panic.contains("internal_error.rs"),
        "{panic}"
    );
}

fn merge(out: &Path) {
    let shards: Vec<String> = (0..2)
        .map(|k| {
            let file = out.join(format!("shard-{k}.json"));
            let file = file.to_str().expect("UTF-8").to_string();
            let shard = format!("{k}/2");
            let run = with_fixture(&[
                "sweep", SCENARIO, "--jobs", "2", "--shard", &shard, "--json", &file,
            ]);
            assert!(matches!(run.code, Some(0 | 3)), "{}", run.shown());
            file
        })
        .collect();
    let merged = out.join("merged.json");
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(String::as_str));
    args.extend(["--json", merged.to_str().expect("UTF-8")]);
    let run = with_fixture(&args);
    run.expect(3, &["internal_error", &format!(" sim {SCENARIO} --seed ")]);
    let merged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&merged).expect("merged JSON"))
            .expect("JSON");
    let whole = sweep_json_value(out);
    for key in ["failed", "internal_errors", "violations", "no_progress"] {
        assert_eq!(merged[key], whole[key], "{key}: {merged}");
    }
}

fn sim(out: &Path) {
    let (panicking, passing) = seeds(out);
    let seed = panicking.to_string();
    let report = out.join("report");
    let report_dir = report.to_str().expect("UTF-8");
    let run = with_fixture(&["sim", SCENARIO, "--seed", &seed, "--report", report_dir]);
    run.expect(
        3,
        &[
            &format!("INTERNAL ERROR of zkcheck (seed {seed})"),
            PANIC,
            &format!(" sim {SCENARIO} --seed {seed}"),
        ],
    );
    let json = std::fs::read_dir(&report)
        .expect("the report directory")
        .map(|e| e.expect("an entry").path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("a JSON report");
    let text = std::fs::read_to_string(json).expect("the JSON report");
    assert!(text.contains("\"internal_error\""), "{text}");
    let passing = passing.to_string();
    with_fixture(&["sim", SCENARIO, "--seed", &passing]).expect(0, &["pass: "]);
}

fn replay(out: &Path) {
    let (panicking, _) = seeds(out);
    let seed = panicking.to_string();
    with_fixture(&["replay", SCENARIO, "--seed", &seed]).expect(
        3,
        &[&format!("INTERNAL ERROR of zkcheck (seed {seed})"), PANIC],
    );
}

fn os_thread(_: &Path) {
    let scenario = "tests/fixtures/internal_error/os-thread.toml";
    with_fixture(&["sim", scenario, "--seed", "1"]).expect(
        3,
        &[
            "INTERNAL ERROR of zkcheck (seed 1)",
            "started an OS thread inside a simulated run",
            "tokio::spawn",
        ],
    );
}

fn bugs(_: &Path) {
    // The entry is caught on the seeds that do not panic and its fix
    // holds: the panicking seeds make it an internal error (exit 3), and
    // none of them counts as catching the bug.
    let run = with_fixture(&["bugs", "--dir", CATALOG, "--jobs", "2", "--no-model"]);
    run.expect(
        3,
        &[
            "INTERNAL ERROR of zkcheck (seed ",
            PANIC,
            " sim tests/fixtures/internal_error/catalog/panicking-lock-catalog.toml --seed ",
            "not a verdict on the recipes",
        ],
    );
    let caught = run
        .stdout
        .lines()
        .find(|line| line.contains("simulation: "))
        .expect("the simulation row");
    assert!(!caught.contains("NOT CAUGHT"), "{}", run.shown());
    let panicking = run
        .stdout
        .matches("INTERNAL ERROR of zkcheck (seed ")
        .count();
    let (caught, ran) = caught
        .split_once(" seeds")
        .and_then(|(counts, _)| counts.trim().rsplit(' ').next()?.split_once('/'))
        .expect("caught/run seeds");
    let (caught, ran): (usize, usize) = (caught.parse().expect("n"), ran.parse().expect("n"));
    assert!(caught + panicking <= ran, "{}", run.shown());
}

#[cfg(madsim)]
fn testing(_: &Path) {
    let registry = registry();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        zkcheck::testing::scenario(&registry, SCENARIO)
            .seeds("0..20")
            .passes()
    }));
    let payload = outcome.expect_err("a panicking seed fails the test");
    let text = payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    for needle in [
        "INTERNAL ERROR of zkcheck (seed ",
        PANIC,
        "not a property violation of the recipe",
        "ZKCHECK_SEED=",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from: {text}");
    }
    // `.fails()` never returns a panic as the recipe's violation.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        zkcheck::testing::scenario(&registry, SCENARIO)
            .seeds("0..20")
            .fails()
    }));
    assert!(
        outcome.is_err(),
        "an internal error is not a found violation"
    );
}
