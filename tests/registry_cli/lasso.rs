//! `zkcheck check --liveness cycles` on the command line: exit 1 and a
//! replayable lasso for a livelock, 0 when there is none, 4 when the search
//! stops at its limit without one (not exhaustive), 2 on bad flags; `replay`
//! of the written schedule runs the cycle and says it is a lasso.
//!
//! No built-in recipe livelocks, so this test is its own `main`
//! (`harness = false`): started with [`CHILD`] set, it is zkcheck's command
//! line on the built-in recipes plus the `polling_lock` and `churn_latch`
//! fixtures (`models/tests/common/polling.rs`, `churn.rs`); otherwise it
//! runs the checks below on that child and on the `zkcheck` binary.

use crate::{churn, polling};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// Set in the environment of the child that runs the command line.
pub(crate) const CHILD: &str = "ZKCHECK_LASSO_CLI_CHILD";

pub(crate) fn main() -> ExitCode {
    if std::env::var_os(CHILD).is_some() {
        return zkcheck::main_with(
            zkcheck::Registry::builtin()
                .with(polling::entry())
                .with(churn::entry()),
        );
    }
    let out = std::env::temp_dir().join(format!("zkcheck-lasso-cli-{}", std::process::id()));
    let checks: [Check; 8] = [
        (
            "a livelock exits 1 with a lasso and its replay command",
            livelock,
        ),
        ("the written lasso replays as a lasso", replay),
        (
            "a lasso found from an initial state records it and replays from it",
            from_initial_state,
        ),
        ("the fixed polling lock exits 0", fixed_fixture),
        (
            "a latch churning at 3 clients is a lasso with --ranks, its fix none",
            churn,
        ),
        (
            "the fixed lock exits 0 and the default ignores cycles",
            fixed_builtin,
        ),
        ("a search stopped at its state limit exits 4", cut),
        ("bad flags and a bad cycle_start exit 2", bad_input),
    ];
    for (name, check) in checks {
        check(&out);
        println!("test {name} ... ok");
    }
    let _ = std::fs::remove_dir_all(&out);
    println!("test result: ok. {} passed", checks.len());
    ExitCode::SUCCESS
}

/// A named check, given the output directory.
type Check = (&'static str, fn(&Path));

/// What a finished command did.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn expect(&self, code: i32, needles: &[&str]) {
        let shown = format!(
            "exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        );
        assert_eq!(self.code, Some(code), "{shown}");
        for needle in needles {
            let found = self.stdout.contains(needle) || self.stderr.contains(needle);
            assert!(found, "`{needle}` missing\n{shown}");
        }
        assert!(!shown.contains("panicked"), "{shown}");
    }
}

fn run(program: &Path, child: bool, args: &[&str]) -> Run {
    let mut command = Command::new(program);
    command.args(args).current_dir(env!("CARGO_MANIFEST_DIR"));
    if child {
        command.env(CHILD, "1");
    }
    let output = command.output().expect("the command starts");
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The command line with the fixture registered.
fn with_fixture(args: &[&str]) -> Run {
    run(&std::env::current_exe().expect("this test"), true, args)
}

/// The shipped binary.
fn zkcheck(args: &[&str]) -> Run {
    run(Path::new(env!("CARGO_BIN_EXE_zkcheck")), false, args)
}

fn schedule_of(out: &Path) -> PathBuf {
    out.join("polling_lock-livelock-progress.toml")
}

fn livelock(out: &Path) {
    let out = out.to_str().expect("a UTF-8 path");
    let args = ["check", "polling_lock", "--variant", "livelock"];
    let run = with_fixture(&[&args[..], &["--liveness", "cycles", "--out", out]].concat());
    run.expect(
        1,
        &[
            "liveness                   eventually holds",
            "livelock (lasso): 12 steps to the cycle, 3 steps around it",
            "   13. c1 fire_timer",
            "schedule written:",
            "polling_lock-livelock-progress.toml",
            " replay ",
        ],
    );
}

fn replay(out: &Path) {
    let schedule = schedule_of(out);
    let text = std::fs::read_to_string(&schedule).expect("the lasso's schedule");
    assert!(text.contains("cycle_start = 12"), "{text}");
    let run = with_fixture(&["replay", schedule.to_str().expect("UTF-8")]);
    run.expect(
        1,
        &[
            "lasso: 12 step(s) to the cycle, then its 3 step(s) run 2 times: back in the state it started in after every round; the calls of c1 stayed pending",
            "agrees with the model: progress (liveness) violated",
        ],
    );
}

fn from_initial_state(out: &Path) {
    let out = out.join("initial");
    let dir = out.to_str().expect("a UTF-8 path");
    let args = ["check", "polling_lock", "--variant", "livelock"];
    let initial = [
        "--node",
        "/polling/stale",
        "--liveness",
        "cycles",
        "--out",
        dir,
    ];
    let run = with_fixture(&[&args[..], &initial[..]].concat());
    run.expect(
        1,
        &["initial state:", "livelock (lasso):", "schedule written:"],
    );
    let schedule = schedule_of(&out);
    let text = std::fs::read_to_string(&schedule).expect("the lasso's schedule");
    assert!(
        text.contains("[[initial.node]]\npath = \"/polling/stale\""),
        "{text}"
    );
    let run = with_fixture(&["replay", schedule.to_str().expect("UTF-8")]);
    run.expect(
        1,
        &[
            "started from the schedule's initial state",
            "agrees with the model: progress (liveness) violated",
        ],
    );
}

fn fixed_fixture(out: &Path) {
    let out = out.to_str().expect("a UTF-8 path");
    let args = ["check", "polling_lock", "--variant", "fixed", "--liveness"];
    let run = with_fixture(&[&args[..], &["cycles", "--out", out]].concat());
    run.expect(0, &["no livelock", "6 component(s), 6 of them unfair"]);
}

fn churn(out: &Path) {
    let out = out.to_str().expect("a UTF-8 path");
    let args = ["check", "churn_latch", "--clients", "3", "--ranks"];
    let cycles = ["--liveness", "cycles", "--out", out];
    let run = with_fixture(&[&args[..], &["--variant", "reset"], &cycles[..]].concat());
    run.expect(
        1,
        &[
            "states: 39146, transitions: 111612",
            "livelock (lasso): 19 steps to the cycle, 12 steps around it; c1, c2 wait(s) forever",
            "churn_latch-reset-progress.toml",
        ],
    );
    let run = with_fixture(&[&args[..], &["--variant", "fixed"], &cycles[..]].concat());
    run.expect(0, &["states: 18176, transitions: 45408", "no livelock"]);
}

fn fixed_builtin(out: &Path) {
    let out = out.to_str().expect("a UTF-8 path");
    let args = [
        "check",
        "lock",
        "--faults",
        "connection-loss=1",
        "--out",
        out,
    ];
    let run = zkcheck(&[&args[..], &["--liveness", "cycles"]].concat());
    run.expect(0, &["states: 2126, transitions: 4756", "no livelock"]);
    // Without the flag, nothing about cycles; the livelock passes as before.
    let run = zkcheck(&args);
    run.expect(0, &[]);
    assert!(!run.stdout.contains("liveness as cycles"), "{}", run.stdout);
    let run = with_fixture(&[
        "check",
        "polling_lock",
        "--variant",
        "livelock",
        "--out",
        out,
    ]);
    run.expect(0, &[]);
}

fn cut(out: &Path) {
    let out = out.to_str().expect("a UTF-8 path");
    let args = [
        "check",
        "lock",
        "--liveness",
        "cycles",
        "--lasso-states",
        "10",
    ];
    let run = zkcheck(&[&args[..], &["--out", out]].concat());
    // Stopped by its state limit without a lasso: not exhaustive (4), not a pass.
    run.expect(
        4,
        &["NO VERDICT", "state limit (10 states)", "not exhaustive"],
    );
}

fn bad_input(out: &Path) {
    zkcheck(&["check", "lock", "--lasso-states", "5"]).expect(2, &["--lasso-states"]);
    zkcheck(&[
        "check",
        "lock",
        "--liveness",
        "cycles",
        "--lasso-states",
        "0",
    ])
    .expect(2, &["--lasso-states: must be at least 1"]);
    zkcheck(&["check", "lock", "--liveness", "forever"]).expect(2, &["--liveness"]);
    let text = std::fs::read_to_string(schedule_of(out)).expect("the lasso's schedule");
    let bad = out.join("bad-cycle-start.toml");
    std::fs::write(&bad, text.replace("cycle_start = 12", "cycle_start = 15")).expect("written");
    with_fixture(&["replay", bad.to_str().expect("UTF-8")]).expect(
        2,
        &[
            "bad-cycle-start.toml:",
            "cycle_start",
            "a cycle needs at least one",
        ],
    );
}
