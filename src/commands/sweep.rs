//! `zkcheck sweep SCENARIO --seeds A..B --jobs N --shard K/N`: a scenario
//! over a range of seeds on all cores. Each worker is an OS thread that
//! creates one madsim runtime per seed (threads never run inside a
//! runtime). Progress goes to stderr, and only to a terminal.
//!
//! Exit status: 0 when every seed passes, 1 when one breaks a property (or
//! runs differently twice under `--check-determinism`), 2 on bad input.

use super::sim::{load_scenario, replay_command, write_json, EXIT_BAD_INPUT, EXIT_VIOLATION};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::ops::Range;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use zk_sim::oracles::Violation;
use zk_sim::scenario::{parse_seed_range, Runner, Scenario};

#[derive(clap::Args)]
pub struct SweepArgs {
    /// The scenario file (TOML).
    pub scenario: PathBuf,
    /// Run another variant of the scenario's recipe (e.g. `fixed` on a bug's scenario).
    #[arg(long)]
    pub variant: Option<String>,
    /// Seeds to run, `A..B` (B excluded); default: the scenario's `seeds`.
    #[arg(long)]
    pub seeds: Option<String>,
    /// Worker threads (default: every core).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Run only shard K of N (seeds whose offset in the range is K mod N).
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Run every seed twice and compare trace hashes.
    #[arg(long)]
    pub check_determinism: bool,
    /// Stop at the first failing seed.
    #[arg(long)]
    pub fail_fast: bool,
    /// Write the summary as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// One failing seed.
#[derive(Clone, Serialize)]
struct Failure {
    seed: u64,
    replay: String,
    violations: Vec<Violation>,
    nondeterministic: bool,
    panic: Option<String>,
}

#[derive(Serialize)]
struct SweepJson {
    scenario: String,
    file: String,
    seeds: Range<u64>,
    shard: Option<(u64, u64)>,
    runs: u64,
    passed: u64,
    failed: u64,
    failures_by_property: BTreeMap<String, u64>,
    first_failures: Vec<Failure>,
    requests: u64,
    wall_seconds: f64,
    seeds_per_second: f64,
    requests_per_second: f64,
}

/// What the workers share.
struct Sweep<'a> {
    runner: &'a dyn Runner,
    seeds: Vec<u64>,
    next: AtomicU64,
    done: AtomicU64,
    requests: AtomicU64,
    stop: AtomicBool,
    failures: Mutex<Vec<Failure>>,
    check_determinism: bool,
    fail_fast: bool,
}

pub fn run(args: SweepArgs) -> ExitCode {
    match sweep(&args) {
        Ok(code) | Err(code) => code,
    }
}

fn bad_input(message: String) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(EXIT_BAD_INPUT)
}

fn parse_shard(text: &str) -> Result<(u64, u64), String> {
    let bad = || format!("--shard {text}: expected K/N with K < N");
    let (k, n) = text.split_once('/').ok_or_else(bad)?;
    let (k, n): (u64, u64) = (k.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
    if n == 0 || k >= n {
        return Err(bad());
    }
    Ok((k, n))
}

fn sweep(args: &SweepArgs) -> Result<ExitCode, ExitCode> {
    let scenario = load_scenario(&args.scenario, args.variant.as_deref())?;
    let range = match &args.seeds {
        Some(text) => parse_seed_range(text).map_err(|e| bad_input(format!("--seeds: {e}")))?,
        None => scenario.seeds.clone(),
    };
    let shard = args
        .shard
        .as_deref()
        .map(parse_shard)
        .transpose()
        .map_err(bad_input)?;
    let seeds: Vec<u64> = range
        .clone()
        .filter(|seed| shard.is_none_or(|(k, n)| (seed - range.start) % n == k))
        .collect();
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let runner = scenario.runner();
    let sweep = Sweep {
        runner: runner.as_ref(),
        seeds,
        next: AtomicU64::new(0),
        done: AtomicU64::new(0),
        requests: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        failures: Mutex::new(Vec::new()),
        check_determinism: args.check_determinism,
        fail_fast: args.fail_fast,
    };
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| sweep.work());
        }
        if std::io::stderr().is_terminal() {
            scope.spawn(|| sweep.show_progress(started));
        }
    });
    let wall = started.elapsed().as_secs_f64();
    report(&scenario, &sweep, range, shard, wall, args)
}

impl Sweep<'_> {
    fn work(&self) {
        while !self.stop.load(Ordering::Relaxed) {
            let index = self.next.fetch_add(1, Ordering::Relaxed) as usize;
            let Some(&seed) = self.seeds.get(index) else {
                return;
            };
            if let Some(failure) = self.run_seed(seed) {
                if self.fail_fast {
                    self.stop.store(true, Ordering::Relaxed);
                }
                self.failures.lock().expect("failures").push(failure);
            }
            self.done.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn run_seed(&self, seed: u64) -> Option<Failure> {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let report = self.runner.run(seed, self.check_determinism);
            let nondeterministic = self.check_determinism
                && self.runner.run(seed, true).trace.hash() != report.trace.hash();
            (report, nondeterministic)
        }));
        match outcome {
            Ok((report, nondeterministic)) => {
                self.requests
                    .fetch_add(report.stats.requests, Ordering::Relaxed);
                (!report.passed() || nondeterministic).then(|| Failure {
                    seed,
                    replay: String::new(),
                    violations: report.violations,
                    nondeterministic,
                    panic: None,
                })
            }
            Err(payload) => {
                let message = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "panic".to_string());
                Some(Failure {
                    seed,
                    replay: String::new(),
                    violations: Vec::new(),
                    nondeterministic: false,
                    panic: Some(message),
                })
            }
        }
    }

    fn show_progress(&self, started: Instant) {
        let total = self.seeds.len() as u64;
        loop {
            let done = self.done.load(Ordering::Relaxed);
            let failed = self.failures.lock().expect("failures").len();
            let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-9);
            eprint!("\r{done}/{total} seeds, {failed} failing, {rate:.0} seeds/s   ");
            if done >= total || self.stop.load(Ordering::Relaxed) {
                eprintln!();
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

fn report(
    scenario: &Scenario,
    sweep: &Sweep,
    range: Range<u64>,
    shard: Option<(u64, u64)>,
    wall: f64,
    args: &SweepArgs,
) -> Result<ExitCode, ExitCode> {
    let mut failures = sweep.failures.lock().expect("failures").clone();
    failures.sort_by_key(|failure| failure.seed);
    for failure in &mut failures {
        failure.replay = replay_command(scenario, failure.seed);
    }
    let runs = sweep.done.load(Ordering::Relaxed);
    let requests = sweep.requests.load(Ordering::Relaxed);
    let mut by_property: BTreeMap<String, u64> = BTreeMap::new();
    for failure in &failures {
        for violation in &failure.violations {
            *by_property
                .entry(violation.property.name().to_string())
                .or_default() += 1;
        }
        if failure.nondeterministic {
            *by_property.entry("determinism".to_string()).or_default() += 1;
        }
        if failure.panic.is_some() {
            *by_property.entry("panic".to_string()).or_default() += 1;
        }
    }
    println!(
        "scenario {} ({} {}): {runs} seeds in {wall:.2} s ({:.0} seeds/s, {:.0} simulated requests/s), {} failed",
        scenario.name,
        scenario.recipe.name(),
        scenario.raw.variant,
        runs as f64 / wall,
        requests as f64 / wall,
        failures.len()
    );
    for (property, count) in &by_property {
        println!("  {property}: {count} seed(s)");
    }
    for failure in failures.iter().take(5) {
        describe(failure);
    }
    if let Some(path) = &args.json {
        let json = SweepJson {
            scenario: scenario.name.clone(),
            file: scenario.file.display().to_string(),
            seeds: range,
            shard,
            runs,
            passed: runs - failures.len() as u64,
            failed: failures.len() as u64,
            failures_by_property: by_property,
            first_failures: failures.iter().take(20).cloned().collect(),
            requests,
            wall_seconds: wall,
            seeds_per_second: runs as f64 / wall,
            requests_per_second: requests as f64 / wall,
        };
        write_json(path, &json)?;
    }
    Ok(if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_VIOLATION)
    })
}

fn describe(failure: &Failure) {
    for violation in &failure.violations {
        println!(
            "VIOLATION of {} (seed {}): {}",
            violation.property, failure.seed, violation.message
        );
    }
    if failure.nondeterministic {
        println!(
            "NON-DETERMINISTIC: seed {} gave two different traces",
            failure.seed
        );
    }
    if let Some(panic) = &failure.panic {
        println!("PANIC (seed {}): {panic}", failure.seed);
    }
    println!("  replay: {}", failure.replay);
}
