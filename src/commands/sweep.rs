//! `zkcheck sweep SCENARIO --seeds A..B --jobs N --shard K/N`: a scenario
//! over a range of seeds on all cores. Each worker is an OS thread that
//! creates one madsim runtime per seed (threads never run inside a
//! runtime). Seeds are drawn lazily from the range (never listed), each
//! seed's world is freed when its run ends, and the memory kept does not
//! grow with the seeds ([`super::sweep_result::Findings`]: counts, failing
//! seeds by signature with each bucket's lowest seeds, the lowest failures
//! in full). A shard's `--json` is what `zkcheck merge` combines. Progress
//! goes to stderr: a line rewritten in place on a terminal, a line every
//! 5 s elsewhere.
//!
//! Exit status: 1 when a seed breaks a property (or runs differently twice
//! under `--check-determinism`); otherwise 3 when a seed's run panicked
//! (an internal error of zkcheck, counted apart, printed with its seed,
//! the panic and the `sim` command that reruns it:
//! [`super::internal_error`]); otherwise 2 on bad input, when a seed made
//! no progress at all (its verdict could not have failed), or when the
//! JSON cannot be written; 0 when every seed passes.

use super::against_model::AgainstModel;
use super::common::{bad_input, exit_status_with_internal, load_scenario, write_json};
use super::coverage_report;
use super::internal_error;
use super::seed_commands::replay_command;
use super::sweep_result::{
    describe, print_buckets, text_hash, BucketJson, Failure, Findings, SweepCoverage, SweepJson,
    FORMAT, FORMAT_VERSION, KEPT_FAILURES, KEPT_SEEDS_PER_BUCKET,
};
use super::Harness;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use zk_sim::guided::tally::CoverageTally;
use zk_sim::scenario::{Runner, Scenario, SeedRange, Shard};

#[derive(clap::Args)]
pub struct SweepArgs {
    /// The scenario file (TOML).
    pub scenario: PathBuf,
    /// Run another variant of the scenario's recipe (e.g. `fixed` on a bug's scenario).
    #[arg(long)]
    pub variant: Option<String>,
    /// Seeds to run, `A..B` (B excluded) or one seed; default: the scenario's `seeds`.
    #[arg(long)]
    pub seeds: Option<String>,
    /// Worker threads (default: every core; at most 256).
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
    /// Keep each run going after its first violation, so that every
    /// property's first violation shows (a seed then counts in every
    /// bucket it shows).
    #[arg(long)]
    pub all_violations: bool,
    /// Write the sweep's report into DIR (JSON, HTML, Markdown, JUnit XML):
    /// the buckets, and the first seed of each replayed in full.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Keep every run's abstract states and steps: the summary (and the
    /// JSON) says how many the seeds reached and how many each block of
    /// seeds added (where the curve flattens); shards merge theirs.
    #[arg(long)]
    pub coverage: bool,
    /// With --coverage: measure the seeds' shared abstract states against
    /// the stateful checker's reachable set for the scenario's recipe,
    /// variant, clients and cycles with this fault budget (`KIND=BUDGET,...`
    /// as `check --faults` takes it): the fraction reached, the states
    /// beyond the model, the shortest never-reached ones.
    #[arg(long, value_name = "FAULTS", requires = "coverage")]
    pub against_model: Option<String>,
    /// With --against-model: write the never-reached states' shortest
    /// paths into DIR as schedules (`zkcheck replay FILE` leads the
    /// stepper into the state).
    #[arg(long, value_name = "DIR", requires = "against_model")]
    pub never_reached: Option<PathBuf>,
}

/// Buckets whose first seed a report replays in full.
const REPORTED_BUCKETS: usize = 10;

/// How often a sweep prints a progress line where stderr is not a terminal.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);
/// Most worker threads (each holds a simulated world).
const MAX_JOBS: usize = 256;

/// What the workers share.
struct Sweep<'a> {
    runner: &'a dyn Runner,
    /// How to rerun a seed that panicked (`sim SCENARIO --seed N`).
    rerun: &'a (dyn Fn(u64) -> String + Sync),
    seeds: Mutex<Box<dyn Iterator<Item = u64> + Send>>,
    total: u128,
    done: AtomicU64,
    requests: AtomicU64,
    stop: AtomicBool,
    findings: Mutex<Findings>,
    /// [`text_hash`] of the scenario file.
    scenario_hash: String,
    check_determinism: bool,
    fail_fast: bool,
    /// Each state and step reached, with its lowest seed (`--coverage`).
    coverage: Option<Mutex<CoverageTally>>,
    /// `--against-model`: the model the coverage is measured against.
    against_model: Option<AgainstModel>,
}

pub fn run(harness: &Harness, args: SweepArgs) -> ExitCode {
    match sweep(harness, &args) {
        Ok(code) | Err(code) => code,
    }
}

fn sweep(harness: &Harness, args: &SweepArgs) -> Result<ExitCode, ExitCode> {
    let mut scenario = load_scenario(harness, &args.scenario, args.variant.as_deref(), "sweep")?;
    scenario.all_violations = args.all_violations;
    let range = match &args.seeds {
        Some(text) => SeedRange::parse(text).map_err(|e| bad_input(format!("--seeds: {e}")))?,
        None => scenario.seeds,
    };
    let shard = args
        .shard
        .as_deref()
        .map(Shard::parse)
        .transpose()
        .map_err(|e| bad_input(format!("--shard: {e}")))?;
    let total = range.len_in(shard);
    if total == 0 {
        return Err(bad_input(format!(
            "--shard: shard {} of {} holds none of the {} seed(s) of {range}",
            shard.map_or(0, |s| s.index),
            shard.map_or(1, |s| s.count),
            range.len()
        )));
    }
    let jobs = match args.jobs {
        Some(jobs) if !(1..=MAX_JOBS).contains(&jobs) => {
            return Err(bad_input(format!(
                "--jobs: {jobs} is outside 1..={MAX_JOBS}"
            )))
        }
        Some(jobs) => jobs,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let jobs = jobs.min(usize::try_from(total).unwrap_or(usize::MAX));
    let scenario_hash = text_hash(&zk_sim::input::read_input(&args.scenario).map_err(bad_input)?);
    super::outputs::probe(args.json.as_deref(), args.report.as_deref())?;
    let against_model = args
        .against_model
        .as_deref()
        .map(|faults| AgainstModel::prepare(harness, &scenario, faults))
        .transpose()
        .map_err(|e| bad_input(format!("--against-model: {e}")))?;
    let runner = scenario.runner();
    let rerun = |seed| internal_error::rerun_command(&harness.program, &scenario, seed);
    let sweep = Sweep {
        runner: runner.as_ref(),
        rerun: &rerun,
        seeds: Mutex::new(Box::new(range.iter(shard))),
        total,
        done: AtomicU64::new(0),
        requests: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        findings: Mutex::new(Findings::default()),
        scenario_hash,
        check_determinism: args.check_determinism,
        fail_fast: args.fail_fast,
        coverage: args.coverage.then(Default::default),
        against_model,
    };
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| sweep.work());
        }
        scope.spawn(|| sweep.show_progress(started, std::io::stderr().is_terminal()));
    });
    let wall = started.elapsed().as_secs_f64();
    Ok(report(harness, &scenario, &sweep, range, shard, wall, args))
}

impl Sweep<'_> {
    fn next_seed(&self) -> Option<u64> {
        if self.stop.load(Ordering::Relaxed) {
            return None;
        }
        self.seeds.lock().expect("seeds").next()
    }

    fn work(&self) {
        while let Some(seed) = self.next_seed() {
            if let Some(failure) = self.run_seed(seed) {
                if self.fail_fast {
                    self.stop.store(true, Ordering::Relaxed);
                }
                self.findings.lock().expect("findings").add(failure);
            }
            self.done.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn run_seed(&self, seed: u64) -> Option<Failure> {
        let outcome = internal_error::catch(|| {
            if self.coverage.is_some() {
                zk_sim::world::draws::install(zk_sim::world::draws::DrawRequest {
                    coverage: true,
                    ..Default::default()
                });
            }
            let mut report = self.runner.run(seed, self.check_determinism);
            if let (Some(tally), Some(run)) = (&self.coverage, report.coverage.take()) {
                tally.lock().expect("coverage").add(seed, &run);
            }
            let divergence = self
                .check_determinism
                .then(|| self.runner.run(seed, true).trace)
                .filter(|again| again.hash() != report.trace.hash())
                .map(|again| {
                    report
                        .trace
                        .first_divergence(&again)
                        .unwrap_or_else(|| "the traces hash differently".to_string())
                });
            (report, divergence)
        });
        let failure = |panic| Failure {
            seed,
            replay: String::new(),
            violations: Vec::new(),
            nondeterministic: false,
            divergence: None,
            vacuous: None,
            panic,
        };
        match outcome {
            Ok((report, divergence)) => {
                let nondeterministic = divergence.is_some();
                self.requests
                    .fetch_add(report.stats.requests, Ordering::Relaxed);
                // A seed that ran differently twice is a violation, not
                // also a run without progress.
                let vacuous = (report.passed() && !nondeterministic)
                    .then(|| report.vacuous())
                    .flatten();
                (!report.passed() || nondeterministic || vacuous.is_some()).then(|| Failure {
                    violations: report.violations,
                    nondeterministic,
                    divergence,
                    vacuous,
                    ..failure(None)
                })
            }
            Err(panic) => Some(Failure {
                replay: (self.rerun)(seed),
                ..failure(Some(panic))
            }),
        }
    }

    /// Progress on stderr: on a terminal, one line rewritten five times a
    /// second; elsewhere (a CI log), a new line every
    /// [`PROGRESS_EVERY`], the first after that long.
    fn show_progress(&self, started: Instant, terminal: bool) {
        let tick = Duration::from_millis(200);
        let mut next_line = PROGRESS_EVERY;
        loop {
            let done = self.done.load(Ordering::Relaxed);
            let over = u128::from(done) >= self.total || self.stop.load(Ordering::Relaxed);
            let elapsed = started.elapsed();
            let failed = self.findings.lock().expect("findings").failed;
            let rate = done as f64 / elapsed.as_secs_f64().max(1e-9);
            let line = format!(
                "{done}/{} seeds, {failed} failing, {rate:.0} seeds/s",
                self.total
            );
            if terminal {
                eprint!("\r{line}   ");
                if over {
                    eprintln!();
                }
            } else if elapsed >= next_line && !over {
                eprintln!("progress: {line}, {:.0} s", elapsed.as_secs_f64());
                next_line += PROGRESS_EVERY;
            }
            if over {
                return;
            }
            std::thread::sleep(tick);
        }
    }
}

fn report(
    harness: &Harness,
    scenario: &Scenario,
    sweep: &Sweep,
    range: SeedRange,
    shard: Option<Shard>,
    wall: f64,
    args: &SweepArgs,
) -> ExitCode {
    let findings = sweep.findings.lock().expect("findings");
    let replay = |seed| replay_command(&harness.program, scenario, seed);
    let failures = findings.first_failures(&replay);
    let runs = sweep.done.load(Ordering::Relaxed);
    let requests = sweep.requests.load(Ordering::Relaxed);
    let internal = match findings.internal_errors {
        0 => String::new(),
        n => format!(" ({n} of them INTERNAL ERRORS of zkcheck, not violations)"),
    };
    println!(
        "scenario {} ({} {}): {runs} seeds in {wall:.2} s ({:.0} seeds/s, {:.0} simulated requests/s), {} failed{internal}",
        scenario.name,
        scenario.recipe.name,
        scenario.raw.variant,
        runs as f64 / wall,
        requests as f64 / wall,
        findings.failed
    );
    let buckets = findings.buckets(&replay);
    print_buckets(&buckets, findings.failed);
    let coverage = sweep
        .coverage
        .as_ref()
        .map(|tally| SweepCoverage::of(tally.lock().expect("coverage").clone(), range));
    if let Some(coverage) = &coverage {
        for line in coverage.summary_lines() {
            println!("{line}");
        }
    }
    let coverage = match (coverage, &sweep.against_model) {
        (Some(mut coverage), Some(model)) => {
            let compared =
                match model.compare(&coverage.reached.shared, args.never_reached.as_deref()) {
                    Ok(compared) => compared,
                    Err(e) => return bad_input(format!("--against-model: {e}")),
                };
            for line in compared.summary_lines(&harness.program, "seed") {
                println!("{line}");
            }
            coverage.against_model = Some(compared);
            Some(coverage)
        }
        (coverage, _) => coverage,
    };
    for failure in failures.iter().take(3) {
        describe(failure);
    }
    let no_progress = findings.no_progress();
    if no_progress > 0 {
        eprintln!(
            "error: {no_progress} seed(s) made no progress or too little progress (below {}% of the workload's planned goals), so their verdicts could not have failed (or nearly); check the scenario's [config], [workload] and fault rates",
            zk_sim::world::MIN_GOAL_PERCENT
        );
    }
    print_internal_errors(&findings, &failures);
    let complete = u128::from(runs) == sweep.total;
    let mut output_failed = false;
    let report_coverage = coverage.as_ref().map(|c| {
        let curve = coverage_report::curve(format!("seeds {range}"), c.block_seeds, &c.curve);
        let against = c.against_model.as_ref();
        coverage_report::coverage(&c.reached, vec![curve], against, &harness.program)
    });
    if let Some(path) = &args.json {
        let json = SweepJson {
            format: FORMAT.to_string(),
            format_version: FORMAT_VERSION,
            generated_by: format!("zkcheck {}", env!("CARGO_PKG_VERSION")),
            scenario: scenario.name.clone(),
            file: scenario.file.display().to_string(),
            scenario_hash: sweep.scenario_hash.clone(),
            recipe: scenario.recipe.name.clone(),
            variant: scenario.raw.variant.clone(),
            seeds: range.to_string(),
            shard: shard.map(|s| (s.index, s.count)),
            all_violations: args.all_violations,
            check_determinism: args.check_determinism,
            fail_fast: args.fail_fast,
            expected_runs: sweep.total,
            complete,
            merged_shards: None,
            runs,
            passed: runs - findings.failed,
            failed: findings.failed,
            violations: findings.violations,
            internal_errors: findings.internal_errors,
            no_progress,
            failures_by_property: findings.by_property(),
            kept_seeds_per_bucket: KEPT_SEEDS_PER_BUCKET as u64,
            buckets: buckets.clone(),
            kept_first_failures: KEPT_FAILURES as u64,
            first_failures: failures,
            requests,
            wall_seconds: wall,
            seeds_per_second: runs as f64 / wall,
            requests_per_second: requests as f64 / wall,
            coverage,
            digest: String::new(),
        }
        .sealed();
        output_failed = write_json(path, &json).is_err();
    }
    if let Some(dir) = &args.report {
        let incomplete = (!complete).then(|| {
            format!(
                "{runs} of {} seeds ran (stopped by --fail-fast)",
                sweep.total
            )
        });
        let mut document = sweep_document(
            harness,
            scenario,
            &buckets,
            &range.to_string(),
            (runs, findings.failed),
            incomplete,
        );
        document.coverage = report_coverage;
        output_failed |= super::report::write_dir(dir, &scenario.name, &document).is_err();
    }
    exit_status_with_internal(
        findings.violations > 0,
        findings.internal_errors > 0,
        output_failed || no_progress > 0,
    )
}

/// Says how many seeds hit an internal error of zkcheck, and shows the
/// kept ones not shown above (each with its seed, panic and rerun command).
pub fn print_internal_errors(findings: &Findings, failures: &[Failure]) {
    if findings.internal_errors == 0 {
        return;
    }
    for failure in failures
        .iter()
        .skip(3)
        .filter(|failure| failure.panic.is_some())
        .take(3)
    {
        describe(failure);
    }
    eprintln!(
        "error: {} seed(s) hit an INTERNAL ERROR of zkcheck (the run panicked): a bug in zkcheck, not counted as violations of the recipe; please report it with the rerun command",
        findings.internal_errors
    );
}

/// The sweep (or a merge of its shards) as a report: its buckets, and
/// the first seed of each (at most [`REPORTED_BUCKETS`]) run again with
/// its trace. `counts` is (runs, failed).
pub fn sweep_document(
    harness: &Harness,
    scenario: &Scenario,
    buckets: &[BucketJson],
    seeds: &str,
    (runs, failed): (u64, u64),
    incomplete: Option<String>,
) -> zk_reports::Report {
    use zk_reports::schema;
    let mut document = super::report::document(
        schema::ReportKind::Sweep,
        format!(
            "{} ({} {}), seeds {seeds}{}",
            scenario.name,
            scenario.recipe.name,
            scenario.raw.variant,
            if incomplete.is_some() {
                " (INCOMPLETE)"
            } else {
                ""
            }
        ),
        super::report::this_command(),
    );
    let runner = scenario.runner();
    let mut replayed = std::collections::BTreeSet::new();
    for bucket in buckets.iter().take(REPORTED_BUCKETS) {
        if replayed.insert(bucket.first_seed) {
            let report = runner.run(bucket.first_seed, true);
            document
                .runs
                .push(super::report::run_record(harness, scenario, &report));
        }
    }
    document.sweep = Some(schema::Sweep {
        scenario: scenario.file.display().to_string(),
        recipe: scenario.recipe.name.clone(),
        variant: scenario.raw.variant.clone(),
        seeds: seeds.to_string(),
        runs,
        passed: runs - failed,
        failed,
        buckets: buckets
            .iter()
            .map(|b| schema::Bucket {
                signature: b.signature.clone(),
                summary: b.summary.clone(),
                seeds: b.seeds,
                first_seed: b.first_seed,
                replay: b.replay.clone(),
                first_seeds: b.first_seeds.clone(),
            })
            .collect(),
        kept_seeds_per_bucket: Some(KEPT_SEEDS_PER_BUCKET as u64),
        incomplete,
    });
    document
}
