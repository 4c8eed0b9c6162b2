//! `zkcheck sim SCENARIO --seed N`: one seeded simulation of a scenario.
//! Also the helpers `sweep` and `replay` share: loading a scenario (exit 2
//! on a bad file), printing a violation with the command that replays it,
//! and writing JSON.
//!
//! Exit status: 0 when every property holds, 1 on a violation (or a
//! non-deterministic run under `--check-determinism`), 2 on bad input.

use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use zk_sim::scenario::{shrink::shrink, Scenario};
use zk_sim::world::RunReport;

#[derive(clap::Args)]
pub struct SimArgs {
    /// The scenario file (TOML), or a schedule written by `zkcheck check`.
    pub scenario: PathBuf,
    /// The seed to run.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
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
}

pub const EXIT_VIOLATION: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;

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

/// Loads a scenario, with another variant if asked; on error prints it
/// (file, line, key) for exit 2.
pub fn load_scenario(path: &Path, variant: Option<&str>) -> Result<Scenario, ExitCode> {
    let bad = |message: String| {
        eprintln!("error: {message}");
        ExitCode::from(EXIT_BAD_INPUT)
    };
    let scenario = Scenario::load(path).map_err(|error| bad(error.to_string()))?;
    match variant {
        Some(variant) => scenario
            .with_variant(variant)
            .map_err(|e| bad(format!("--variant: {e}"))),
        None => Ok(scenario),
    }
}

/// The command that replays a seed of a scenario.
pub fn replay_command(scenario: &Scenario, seed: u64) -> String {
    let variant = if scenario.raw.variant == scenario.file_variant {
        String::new()
    } else {
        format!(" --variant {}", scenario.raw.variant)
    };
    format!(
        "zkcheck replay {}{variant} --seed {seed}",
        scenario.file.display()
    )
}

/// Prints a failed run: each broken property, the seed, and how to replay it.
pub fn print_violations(scenario: &Scenario, report: &RunReport) {
    for violation in &report.violations {
        println!(
            "VIOLATION of {} (seed {}):",
            violation.property, report.seed
        );
        print!("  {violation}");
    }
    println!("replay: {}", replay_command(scenario, report.seed));
}

/// Writes a value as pretty JSON; an unwritable file is bad input.
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<(), ExitCode> {
    let text = serde_json::to_string_pretty(value).expect("reports serialize");
    std::fs::write(path, text + "\n").map_err(|error| {
        eprintln!("error: cannot write {}: {error}", path.display());
        ExitCode::from(EXIT_BAD_INPUT)
    })
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

pub fn run(args: SimArgs) -> ExitCode {
    match sim(&args) {
        Ok(code) | Err(code) => code,
    }
}

fn sim(args: &SimArgs) -> Result<ExitCode, ExitCode> {
    if super::schedule::is_schedule(&args.scenario) {
        return Ok(super::schedule::run(&args.scenario, args.trace));
    }
    let scenario = load_scenario(&args.scenario, args.variant.as_deref())?;
    let runner = scenario.runner();
    let want_trace = args.trace || args.check_determinism;
    let report = runner.run(args.seed, want_trace);
    let mut deterministic = true;
    let mut trace_hash = None;
    if args.check_determinism {
        let again = runner.run(args.seed, true);
        deterministic = again.trace.hash() == report.trace.hash();
        trace_hash = Some(format!("{:#018x}", report.trace.hash()));
    }
    if args.trace {
        let _ = write!(QuietStdout, "{}", report.trace);
    }
    println!(
        "scenario {} ({} {}), seed {}: {} requests, {} outcomes, {} faults, {:.1} ms simulated",
        scenario.name,
        scenario.recipe.name(),
        scenario.raw.variant,
        args.seed,
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
    if report.passed() {
        println!("pass: {}", property_list(&scenario));
    } else {
        print_violations(&scenario, &report);
    }
    if let (false, Some(out)) = (report.passed(), &args.shrink) {
        shrink_to(&scenario, args.seed, out)?;
    }
    if let Some(path) = &args.json {
        let json = SimJson {
            scenario: &scenario.name,
            file: scenario.file.display().to_string(),
            seed: args.seed,
            passed: report.passed(),
            replay: replay_command(&scenario, args.seed),
            trace_hash,
            report: &report,
        };
        write_json(path, &json)?;
    }
    Ok(if report.passed() && deterministic {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_VIOLATION)
    })
}

fn property_list(scenario: &Scenario) -> String {
    let names: Vec<&str> = scenario.properties.iter().map(|p| p.name()).collect();
    names.join(", ")
}

/// Shrinks a failing seed and writes the smaller scenario.
fn shrink_to(scenario: &Scenario, seed: u64, out: &Path) -> Result<(), ExitCode> {
    match shrink(scenario, seed, 400) {
        Ok(shrunk) => {
            std::fs::write(out, shrunk.scenario.to_toml()).map_err(|error| {
                eprintln!("error: cannot write {}: {error}", out.display());
                ExitCode::from(EXIT_BAD_INPUT)
            })?;
            println!(
                "shrunk: {} of {} faults still break {} ({} runs); written to {}",
                shrunk.faults_after,
                shrunk.faults_before,
                shrunk.property,
                shrunk.runs,
                out.display()
            );
            println!("rerun: zkcheck sim {} --seed {seed}", out.display());
        }
        Err(error) => println!("shrink: {error}"),
    }
    Ok(())
}
