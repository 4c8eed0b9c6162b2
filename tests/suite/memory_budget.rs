//! Memory budgets on the command line (issue 30, class 6): a search that
//! reaches its budget stops like a timeout, not exhaustive with the reason
//! "memory", and exits 4 (`EXIT_NOT_EXHAUSTIVE`), never 134 (an allocator
//! abort): the BFS, the DFS, the lasso search (`--liveness cycles`) and
//! the `--clients LO..HI` cutoff; under a real address-space limit the
//! default budget stops the search before the allocator fails; a bad
//! `--memory-budget` exits 2 naming the flag.

use std::process::Command;

/// What a finished zkcheck did.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn context(&self) -> String {
        format!(
            "exit {:?}\nstdout:\n{}\nstderr:\n{}",
            self.code, self.stdout, self.stderr
        )
    }

    /// Stopped by the memory budget: exit 4, the reason printed, no verdict
    /// claimed.
    fn expect_memory_stop(&self, budget: &str) {
        assert_eq!(self.code, Some(4), "{}", self.context());
        let reason = format!("not exhaustive: memory budget of {budget} reached after ");
        assert!(self.stdout.contains(&reason), "{}", self.context());
        assert!(!self.stdout.contains("VIOLATED"), "{}", self.context());
    }
}

/// The lock model with three clients, a connection loss and an expiry:
/// 13.7 M states, tens of seconds and gigabytes to exhaust.
const BIG_LOCK: [&str; 7] = [
    "check",
    "lock",
    "--variant",
    "fixed",
    "--clients",
    "3",
    "--faults=connection-loss=1,expiry=1",
];

fn zkcheck(args: &[&str]) -> Run {
    run(Command::new(env!("CARGO_BIN_EXE_zkcheck")).args(quiet(args)))
}

/// The arguments with progress lines off and schedules in a temp directory.
fn quiet(args: &[&str]) -> Vec<String> {
    let out = std::env::temp_dir().join(format!("zkcheck-memory-{}", std::process::id()));
    let extra = ["--progress", "0", "--out", out.to_str().expect("UTF-8")];
    args.iter().chain(&extra).map(|a| a.to_string()).collect()
}

fn run(command: &mut Command) -> Run {
    let output = command
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("zkcheck runs");
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn a_bfs_over_its_memory_budget_stops_with_exit_4() {
    zkcheck(&[&BIG_LOCK[..], &["--memory-budget", "1M"]].concat()).expect_memory_stop("1.0 MiB");
}

#[test]
fn the_report_keeps_the_memory_reason() {
    let dir = std::env::temp_dir().join(format!("zkcheck-memory-report-{}", std::process::id()));
    let dir_arg = dir.to_str().expect("UTF-8");
    let args = ["--memory-budget", "1M", "--report", dir_arg];
    zkcheck(&[&BIG_LOCK[..], &args].concat()).expect_memory_stop("1.0 MiB");
    let json = std::fs::read_to_string(dir.join("lock-fixed.json")).expect("the JSON report");
    let document: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(document["check"]["exhaustive"], false, "{json}");
    assert_eq!(document["check"]["stopped_by"], "memory", "{json}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_dfs_over_its_memory_budget_stops_with_exit_4() {
    let args = [
        "--strategy",
        "dfs",
        "--threads",
        "2",
        "--memory-budget",
        "1M",
    ];
    zkcheck(&[&BIG_LOCK[..], &args].concat()).expect_memory_stop("1.0 MiB");
}

#[test]
fn a_lasso_search_over_its_memory_budget_stops_with_exit_4() {
    let args = ["--liveness", "cycles", "--memory-budget", "2M"];
    let run = zkcheck(&[&BIG_LOCK[..], &args].concat());
    run.expect_memory_stop("2.0 MiB");
    let lasso = run
        .stdout
        .split("liveness as cycles")
        .nth(1)
        .unwrap_or_else(|| panic!("no lasso search\n{}", run.context()));
    assert!(
        lasso.contains("not exhaustive: memory budget of 2.0 MiB reached after")
            && lasso.contains("NO VERDICT: the search stopped at its memory budget"),
        "{}",
        run.context()
    );
}

#[test]
fn a_cutoff_skips_the_counts_after_one_over_its_memory_budget() {
    let run = zkcheck(&[
        "check",
        "lock",
        "--variant",
        "fixed",
        "--clients",
        "3..5",
        "--faults=connection-loss=1,expiry=1",
        "--memory-budget",
        "1M",
    ]);
    assert_eq!(run.code, Some(4), "{}", run.context());
    assert!(
        run.stdout.contains("MEMORY BUDGET")
            && run.stdout.contains(
                "skipped 4..5 client(s): 3 clients reached the memory budget, a larger count would not finish either"
            ),
        "{}",
        run.context()
    );
}

#[test]
fn the_default_budget_stops_before_an_address_space_limit_aborts() {
    // 1 GiB of address space: the default budget is half of it, the search
    // stops at two thirds of that. Unbounded, this search needs gigabytes
    // within seconds and the allocator aborts (exit 134).
    let limit_kib = 1 << 20;
    let args = quiet(&BIG_LOCK).join(" ");
    let script = format!(
        "ulimit -v {limit_kib} && exec {} {args}",
        env!("CARGO_BIN_EXE_zkcheck")
    );
    let run = run(Command::new("sh").args(["-c", &script]));
    run.expect_memory_stop("512.0 MiB");
}

#[test]
fn a_bad_memory_budget_exits_2_naming_the_flag() {
    for bad in ["4GB", "0M", "4", "1.5G", "-1G", "lots", "99999999999T"] {
        let flag = format!("--memory-budget={bad}");
        let run = zkcheck(&[&BIG_LOCK[..], &[flag.as_str()]].concat());
        assert_eq!(run.code, Some(2), "{bad}: {}", run.context());
        assert!(
            run.stderr.contains("--memory-budget"),
            "{bad}: {}",
            run.context()
        );
    }
    let over = zkcheck(&[&BIG_LOCK[..], &["--memory-budget", "1024T"]].concat());
    assert_eq!(over.code, Some(2), "{}", over.context());
    assert!(
        over.stderr.contains("--memory-budget")
            && over.stderr.contains("is more than this process may use"),
        "{}",
        over.context()
    );
}
