//! `zkcheck sim SCENARIO --seed N`: one seeded simulation of a scenario.
//! Also the helpers only the simulator's commands share (`sweep`, `replay`,
//! `merge`, `bugs`): the commands that replay or rerun a seed, printing a
//! violation with its replay command, refusing flags a schedule does not
//! take. What every command shares (loading a scenario, exit statuses,
//! writing JSON) is in [`super::common`].
//!
//! Exit status: 0 when every property holds, 1 on a violation (or a
//! non-deterministic run under `--check-determinism`), 2 on bad input, on
//! a run that could not have failed (no workload made progress), or when
//! an output file cannot be written. A violation wins: it is never hidden
//! behind an output error (see `main.rs`).

use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use zk_sim::scenario::{shrink::shrink, Scenario};
use zk_sim::world::RunReport;

use super::common::{
    bad_input, exit_status, exit_status_with_internal, parse_scenario, print_no_progress, quote,
    read_input, write_json,
};
use super::seed_commands::replay_command;
use super::Harness;

#[derive(clap::Args)]
pub struct SimArgs {
    /// The scenario file (TOML), or a schedule written by `zkcheck check`.
    pub scenario: PathBuf,
    /// The seed to run (default 0).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run another variant of the scenario's recipe (e.g. `fixed` on a bug's scenario).
    #[arg(long)]
    pub variant: Option<String>,
    /// Print the run's trace, one line per event.
    #[arg(long)]
    pub trace: bool,
    /// Run the seed twice and compare the traces' hashes.
    #[arg(long)]
    pub check_determinism: bool,
    /// On a violation, shrink the seed's faults into this scenario file.
    #[arg(long, value_name = "FILE")]
    pub shrink: Option<PathBuf>,
    /// Write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Keep the run going after its first violation: every property's
    /// first violation is reported.
    #[arg(long)]
    pub all_violations: bool,
    /// Write the run's report into DIR: JSON, an HTML page with its
    /// pictures, Markdown and JUnit XML.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
}

/// Standard output that ends the process quietly when the reader is gone
/// (`zkcheck replay ... | head`).
pub struct QuietStdout;

impl Write for QuietStdout {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match std::io::stdout().write(bytes) {
            Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
            other => other,
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stdout().flush()
    }
}

/// What a path given to `sim` or `replay` holds.
pub enum Input {
    Scenario(Box<Scenario>),
    /// A model checker schedule, with its text.
    Schedule(String),
}

/// Reads an input file once (a regular file of bounded size) and checks it
/// as a scenario, with another variant if asked, or recognizes a schedule;
/// on error prints it (file, line, key) for exit 2.
pub fn load_input(
    harness: &Harness,
    path: &Path,
    variant: Option<&str>,
) -> Result<Input, ExitCode> {
    let text = read_input(path)?;
    if zk_models::schedule::is_schedule_text(&text) {
        return Ok(Input::Schedule(text));
    }
    let scenario = parse_scenario(harness, path, &text, variant)?;
    Ok(Input::Scenario(Box::new(scenario)))
}

/// Refuses flags a schedule file does not take (a schedule is one exact
/// step order: no seed, no variant, nothing to shrink).
pub fn refuse_schedule_flags(path: &Path, flags: &[(&str, bool)]) -> Result<(), ExitCode> {
    match flags.iter().find(|(_, given)| *given) {
        Some((flag, _)) => Err(bad_input(format!(
            "{flag}: {} is a model checker schedule, which replays one exact step order; {flag} does not apply to it",
            path.display()
        ))),
        None => Ok(()),
    }
}

/// Prints a failed run: each broken property, the seed, and how to replay it.
pub fn print_violations(harness: &Harness, scenario: &Scenario, report: &RunReport) {
    for violation in &report.violations {
        println!(
            "VIOLATION of {} (seed {}):",
            violation.property_name(),
            report.seed
        );
        print!("  {violation}");
    }
    println!(
        "replay: {}",
        replay_command(&harness.program, scenario, report.seed)
    );
}

/// One run as JSON.
#[derive(Serialize)]
struct SimJson<'a> {
    scenario: &'a str,
    file: String,
    seed: u64,
    passed: bool,
    replay: String,
    trace_hash: Option<String>,
    report: &'a RunReport,
}

pub fn run(harness: &Harness, args: SimArgs) -> ExitCode {
    match sim(harness, &args) {
        Ok(code) | Err(code) => code,
    }
}

fn sim(harness: &Harness, args: &SimArgs) -> Result<ExitCode, ExitCode> {
    let scenario = match load_input(harness, &args.scenario, args.variant.as_deref())? {
        Input::Scenario(scenario) => scenario,
        Input::Schedule(text) => {
            refuse_schedule_flags(
                &args.scenario,
                &[
                    ("--variant", args.variant.is_some()),
                    ("--seed", args.seed.is_some()),
                    ("--check-determinism", args.check_determinism),
                    ("--shrink", args.shrink.is_some()),
                    ("--json", args.json.is_some()),
                    ("--all-violations", args.all_violations),
                    ("--report", args.report.is_some()),
                ],
            )?;
            return Ok(super::schedule::run_text(
                harness,
                &args.scenario,
                &text,
                args.trace,
            ));
        }
    };
    let mut scenario = scenario;
    scenario.all_violations = args.all_violations;
    if let Some(path) = &args.shrink {
        super::outputs::probe_file("--shrink", path)?;
    }
    super::outputs::probe(args.json.as_deref(), args.report.as_deref())?;
    let seed = args.seed.unwrap_or(0);
    let runner = scenario.runner();
    let want_trace = args.trace || args.check_determinism || args.report.is_some();
    let run = super::internal_error::catch(|| {
        let report = runner.run(seed, want_trace);
        let again = args.check_determinism.then(|| runner.run(seed, true));
        (report, again)
    });
    let (report, again) = match run {
        Ok(ran) => ran,
        Err(panic) => return Ok(internal_error(harness, &scenario, seed, &panic, args)),
    };
    let mut deterministic = true;
    let mut trace_hash = None;
    if let Some(again) = again {
        deterministic = again.trace.hash() == report.trace.hash();
        trace_hash = Some(format!("{:#018x}", report.trace.hash()));
    }
    if args.trace {
        let _ = write!(QuietStdout, "{}", report.trace);
    }
    println!(
        "scenario {} ({} {}), seed {seed}: {} requests, {} outcomes, {} faults, {:.1} ms simulated",
        scenario.name,
        scenario.recipe.name,
        scenario.raw.variant,
        report.stats.requests,
        report.stats.outcomes,
        report.stats.faults,
        report.stats.sim_time_ns as f64 / 1e6
    );
    if let Some(hash) = &trace_hash {
        println!(
            "trace hash: {hash} ({})",
            if deterministic {
                "identical on a second run"
            } else {
                "DIFFERS on a second run"
            }
        );
    }
    let vacuous = report.passed().then(|| report.vacuous()).flatten();
    if let Some(why) = &vacuous {
        print_no_progress(seed, why);
    } else if report.passed() {
        println!("pass: {}", property_list(&scenario));
    } else {
        print_violations(harness, &scenario, &report);
    }
    let mut output_failed = false;
    if let (false, Some(out)) = (report.passed(), &args.shrink) {
        output_failed |= shrink_to(harness, &scenario, seed, out).is_err();
    }
    if let Some(path) = &args.json {
        let json = SimJson {
            scenario: &scenario.name,
            file: scenario.file.display().to_string(),
            seed,
            passed: report.passed() && vacuous.is_none(),
            replay: replay_command(&harness.program, &scenario, seed),
            trace_hash,
            report: &report,
        };
        output_failed |= write_json(path, &json).is_err();
    }
    if let Some(dir) = &args.report {
        let record = super::report::run_record(harness, &scenario, &report);
        output_failed |= write_run_report(dir, &scenario, seed, record).is_err();
    }
    let violation = !report.passed() || !deterministic;
    Ok(exit_status(violation, output_failed || vacuous.is_some()))
}

/// The run panicked: an internal error of zkcheck, exit 3 (its `--report`
/// says so; no `--json` or `--shrink` is written, there is no run to show).
fn internal_error(
    harness: &Harness,
    scenario: &Scenario,
    seed: u64,
    panic: &str,
    args: &SimArgs,
) -> ExitCode {
    let rerun = super::internal_error::rerun_command(&harness.program, scenario, seed);
    println!(
        "scenario {} ({} {}), seed {seed}:",
        scenario.name, scenario.recipe.name, scenario.raw.variant
    );
    println!("{}", super::internal_error::describe(seed, panic, &rerun));
    let mut output_failed = false;
    if let Some(dir) = &args.report {
        let record = super::report::internal_error_record(scenario, seed, panic, &rerun);
        output_failed |= write_run_report(dir, scenario, seed, record).is_err();
    }
    exit_status_with_internal(false, true, output_failed)
}

/// Writes one seed's run as a report into `dir` (`NAME-seed-N.*`).
fn write_run_report(
    dir: &Path,
    scenario: &Scenario,
    seed: u64,
    record: zk_reports::schema::Run,
) -> Result<(), ()> {
    let mut document = super::report::document(
        zk_reports::schema::ReportKind::Run,
        format!(
            "{} ({} {}), seed {seed}",
            scenario.name, scenario.recipe.name, scenario.raw.variant
        ),
        super::report::this_command(),
    );
    document.runs.push(record);
    let name = format!("{}-seed-{seed}", scenario.name);
    super::report::write_dir(dir, &name, &document)
}

fn property_list(scenario: &Scenario) -> String {
    let names: Vec<&str> = scenario.properties.iter().map(|p| p.name()).collect();
    names.join(", ")
}

/// Shrinks a failing seed and writes the smaller scenario.
fn shrink_to(harness: &Harness, scenario: &Scenario, seed: u64, out: &Path) -> Result<(), ()> {
    match shrink(scenario, seed, 400) {
        Ok(shrunk) => {
            std::fs::write(out, shrunk.scenario.to_toml()).map_err(|error| {
                eprintln!("error: cannot write {}: {error}", out.display());
            })?;
            println!(
                "shrunk: {} of {} faults still break {} ({} runs); written to {}",
                shrunk.faults_after,
                shrunk.faults_before,
                shrunk.property,
                shrunk.runs,
                out.display()
            );
            println!(
                "rerun: {} sim {} --seed {seed}",
                harness.program,
                quote(&out.display().to_string())
            );
        }
        Err(error) => println!("shrink: {error}"),
    }
    Ok(())
}
