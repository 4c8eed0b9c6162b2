//! `zkcheck live SCENARIO --zk HOST:PORT [--seed N]`: the scenario's recipe
//! machines, workload and oracles against a real ZooKeeper 3.x, with real
//! faults (`zk_live::run_live`), under a root directory of the run's own
//! that is removed at the end.
//!
//! A live run is not deterministic; the seed decides the workload's draws
//! and which faults strike when. Exit status as `zkcheck sim`: 0 when every
//! property holds, 1 on a violation (with the command that reruns it live
//! and the one that simulates the same seed), 2 on bad input with nothing
//! written on the server: a fault the real world cannot inject (the message
//! names the scenario key), an address nothing answers at, a server that is
//! not ZooKeeper 3.x, a root that already exists, a hard open-file limit
//! below what the run needs (the number needed is named; a soft limit too
//! low is raised to the hard one). Also 2: a run ended by SIGINT, SIGTERM
//! or SIGHUP (its root removed) or that could not finish for the server.
//! 3 when the harness itself failed mid-run (a socket it could not open,
//! a panic in the driver): no verdict on the recipe.
//!
//! Roots that killed runs left behind (see `zk_live::stale`) are named at
//! the start of every run with the command that removes them;
//! `--list-stale` only lists them, `--remove-stale PATH` removes one
//! (refusing a root that is not zkcheck's or whose run still runs).
//!
//! `--vs-sim` also runs the same seed in the simulator (repeatedly, for at
//! least a second) and prints both speeds (workload cycles, i.e.
//! acquisitions, per wall second) and their ratio (BENCHMARKS.md). Only a
//! build with `--cfg madsim` has the simulator: in a live-only build
//! `--vs-sim` is bad input (exit 2, nothing run).

use super::common::{
    bad_input, exit_status, load_scenario, print_no_progress, quote, write_json, EXIT_BAD_INPUT,
    EXIT_INTERNAL_ERROR,
};
use super::Harness;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
#[cfg(madsim)]
use std::time::Instant;
use zk_live::descriptors::{descriptors_needed, DescriptorBudget};
use zk_live::stale::{find_stale_roots, remove_stale_roots, StaleRoot};
use zk_live::{run_live, LiveOptions, LiveRun, LiveRunError};
use zk_sim::scenario::Scenario;
use zk_sim::world::RunReport;

#[derive(clap::Args)]
pub struct LiveArgs {
    /// The scenario file (TOML); none with --list-stale or --remove-stale.
    #[arg(required_unless_present_any = ["list_stale", "remove_stale"])]
    pub scenario: Option<PathBuf>,
    /// The ZooKeeper server, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub zk: String,
    /// The seed (default 0): the workload's draws and the faults.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run another variant of the scenario's recipe.
    #[arg(long)]
    pub variant: Option<String>,
    /// The run's own directory on the server (must not exist; default
    /// `/zkcheck-live-<seed>-<pid>`).
    #[arg(long, value_name = "PATH")]
    pub root: Option<String>,
    /// Also simulate the same seed and compare speeds (needs a build with
    /// `--cfg madsim`).
    #[arg(long)]
    pub vs_sim: bool,
    /// Write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Only list the roots killed live runs left under `/`, each with the
    /// command that removes it; runs nothing.
    #[arg(long, conflicts_with_all = ["scenario", "remove_stale"])]
    pub list_stale: bool,
    /// Only remove this stale root (repeatable); a root that is not
    /// zkcheck's, or whose run still runs, is refused untouched.
    #[arg(long, value_name = "PATH", conflicts_with = "scenario")]
    pub remove_stale: Vec<String>,
}

/// One live run as JSON.
#[derive(Serialize)]
struct LiveJson<'a> {
    scenario: &'a str,
    file: String,
    server: &'a str,
    version: &'a str,
    seed: u64,
    passed: bool,
    rerun: String,
    wall_s: f64,
    report: &'a RunReport,
}

pub fn run(harness: &Harness, args: LiveArgs) -> ExitCode {
    if args.vs_sim && !cfg!(madsim) {
        return bad_input(
            "--vs-sim simulates the same seed, and this binary was built without `--cfg madsim` (a live-only build: the application's own tokio and zookeeper-client are the real ones); build without a RUSTFLAGS override to compare with the simulator",
        );
    }
    if !args.remove_stale.is_empty() {
        return remove_stale(&args.zk, &args.remove_stale);
    }
    let Some(file) = args.scenario.as_deref().filter(|_| !args.list_stale) else {
        return list_stale(harness, &args.zk);
    };
    let scenario = match load_scenario(harness, file, args.variant.as_deref(), "live") {
        Ok(scenario) => scenario,
        Err(code) => return code,
    };
    if cfg!(madsim) && scenario.variant().is_async() {
        return bad_input(format!(
            "{}: `variant = \"{}\"` is an async recipe, and this binary was built with `--cfg madsim`, so its zookeeper-client and tokio are the simulated ones; run it live from a build without it, where they are the real crates: RUSTFLAGS=\"\" cargo run --target-dir target/live -- live {} --variant {} --zk {}",
            file.display(),
            scenario.variant().name,
            quote(&file.display().to_string()),
            quote(&scenario.variant().name),
            quote(&args.zk)
        ));
    }
    if let Err(code) = super::outputs::probe(args.json.as_deref(), None) {
        return code;
    }
    let seed = args.seed.unwrap_or(0);
    let options = LiveOptions {
        addr: args.zk.clone(),
        seed,
        root: args.root.clone(),
    };
    println!(
        "live: scenario {} ({} {}), seed {seed}, server {}",
        scenario.name, scenario.recipe.name, scenario.raw.variant, args.zk
    );
    name_stale_roots(harness, &args.zk);
    let live = match run_live(&scenario, &options) {
        Ok(live) => live,
        Err(error) => return run_failed(&error, scenario.raw.clients),
    };
    let report = &live.report;
    let rerun = rerun_command(harness, &scenario, &args.zk, seed);
    print_summary(&live, scenario.raw.clients);
    let vacuous = report.passed().then(|| report.vacuous()).flatten();
    if let Some(why) = &vacuous {
        print_no_progress(seed, why);
    } else if report.passed() {
        let names: Vec<&str> = scenario.properties.iter().map(|p| p.name()).collect();
        println!("pass: {}", names.join(", "));
    } else {
        for violation in &report.violations {
            println!(
                "VIOLATION of {} (seed {seed}, live):",
                violation.property_name()
            );
            print!("  {violation}");
            if violation.diagnosis.is_none() {
                println!("  (no diagnosis live: simulate the seed for one, below)");
            }
        }
    }
    if !report.passed() {
        println!("rerun: {rerun}");
        // A live-only build has no simulator: the simulating build of the
        // same crate (`.cargo/config.toml`'s `--cfg madsim`) replays it.
        let program = if cfg!(madsim) {
            harness.program.as_str()
        } else {
            "cargo run --release --"
        };
        println!(
            "simulate: {program} sim {}{} --seed {seed}",
            quote(&scenario.file.display().to_string()),
            variant_flag(&scenario)
        );
    }
    println!("server: {} removed, nothing left", live.root);
    #[cfg(madsim)]
    if args.vs_sim {
        compare_with_sim(&scenario, &live);
    }
    let mut output_failed = false;
    if let Some(path) = &args.json {
        let json = LiveJson {
            scenario: &scenario.name,
            file: scenario.file.display().to_string(),
            server: &args.zk,
            version: &live.version,
            seed,
            passed: report.passed() && vacuous.is_none(),
            rerun,
            wall_s: live.wall.as_secs_f64(),
            report,
        };
        output_failed |= write_json(path, &json).is_err();
    }
    exit_status(!report.passed(), output_failed || vacuous.is_some())
}

/// The exit status and message of a live run that ended without a verdict.
fn run_failed(error: &LiveRunError, clients: usize) -> ExitCode {
    if error.is_bad_input() {
        return bad_input(error);
    }
    eprintln!("error: {error}");
    if error.is_internal() {
        let message = error.to_string();
        // EMFILE and ENFILE, as io::Error prints them.
        if message.contains("(os error 24)") || message.contains("(os error 23)") {
            eprintln!(
                "  (a run of {clients} clients needs about {} file descriptors: `ulimit -n` shows the limit)",
                descriptors_needed(clients)
            );
        }
        return ExitCode::from(EXIT_INTERNAL_ERROR);
    }
    ExitCode::from(EXIT_BAD_INPUT)
}

/// `--list-stale`: the stale roots on the server with their removal command.
fn list_stale(harness: &Harness, zk: &str) -> ExitCode {
    match find_stale_roots(zk) {
        Ok(stale) if stale.is_empty() => {
            println!("no stale roots under / on {zk}");
            ExitCode::SUCCESS
        }
        Ok(stale) => {
            print_stale(harness, zk, &stale);
            ExitCode::SUCCESS
        }
        Err(error) if error.is_bad_input() => bad_input(error),
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// `--remove-stale PATH...`: removes the named stale roots.
fn remove_stale(zk: &str, roots: &[String]) -> ExitCode {
    let outcome = remove_stale_roots(zk, roots);
    match outcome {
        Ok(removed) => {
            for root in removed {
                println!("removed stale root {root}");
            }
            ExitCode::SUCCESS
        }
        Err(error) => bad_input(error),
    }
}

/// Before a run: names the stale roots earlier killed runs left, with the
/// command that removes them. A scan that fails says so and the run goes
/// on (its own checks report an unreachable server).
fn name_stale_roots(harness: &Harness, zk: &str) {
    match find_stale_roots(zk) {
        Ok(stale) if stale.is_empty() => {}
        Ok(stale) => print_stale(harness, zk, &stale),
        Err(error) if error.is_bad_input() => {}
        Err(error) => eprintln!("note: could not look for stale roots: {error}"),
    }
}

fn print_stale(harness: &Harness, zk: &str, stale: &[StaleRoot]) {
    println!(
        "stale: {} root(s) left on the server by live runs that were killed:",
        stale.len()
    );
    for root in stale {
        println!("  {} ({})", root.root, root.owner.describe());
    }
    let paths: Vec<String> = stale
        .iter()
        .map(|root| format!(" --remove-stale {}", quote(root.root.as_str())))
        .collect();
    println!(
        "  remove with: {} live --zk {}{}",
        harness.program,
        quote(zk),
        paths.concat()
    );
}

fn print_summary(live: &LiveRun, clients: usize) {
    let report = &live.report;
    if let DescriptorBudget::Raised { from, to } = live.descriptors {
        println!(
            "file descriptors: the soft limit was raised from {from} to {to} (about {} needed)",
            descriptors_needed(clients)
        );
    }
    let stats = &report.stats;
    println!(
        "ZooKeeper {}, root {}: {} requests, {} outcomes, {} faults injected, {} of {} workloads done, {:.2} s wall",
        live.version,
        live.root,
        stats.requests,
        stats.outcomes,
        stats.faults,
        report.workloads_done,
        clients,
        live.wall.as_secs_f64()
    );
    for fault in &report.fault_history {
        println!("  fault: {fault}");
    }
    // Client-side expiry: the sessions a client gave up on (the run's
    // trace holds the clients' session changes).
    for line in report
        .trace
        .lines
        .iter()
        .filter(|l| l.text.contains("gives up"))
    {
        println!("  {line}");
    }
}

fn variant_flag(scenario: &Scenario) -> String {
    if scenario.raw.variant == scenario.file_variant {
        String::new()
    } else {
        format!(" --variant {}", quote(&scenario.raw.variant))
    }
}

/// The command that runs the same seed live again.
fn rerun_command(harness: &Harness, scenario: &Scenario, zk: &str, seed: u64) -> String {
    format!(
        "{} live {}{} --zk {} --seed {seed}",
        harness.program,
        quote(&scenario.file.display().to_string()),
        variant_flag(scenario),
        quote(zk)
    )
}

/// Simulates the same seed and prints both speeds: workload cycles
/// (acquisitions, or outcomes for recipes that acquire nothing) per wall
/// second, and the ratio.
#[cfg(madsim)]
fn compare_with_sim(scenario: &Scenario, live: &LiveRun) {
    let runner = scenario.runner();
    // The same seed again and again for at least a second (and 3 runs):
    // one run takes milliseconds, too little to time alone.
    let started = Instant::now();
    let mut runs = 0u64;
    let mut simulated = runner.run(live.report.seed, false);
    runs += 1;
    while runs < 3 || started.elapsed().as_secs_f64() < 1.0 {
        simulated = runner.run(live.report.seed, false);
        runs += 1;
    }
    let sim_wall = started.elapsed().as_secs_f64() / runs as f64;
    let cycles = |report: &RunReport| match report.herd_figures.acquisitions {
        0 => report.stats.progress,
        acquisitions => acquisitions,
    };
    let live_rate = cycles(&live.report) as f64 / live.wall.as_secs_f64().max(1e-9);
    let sim_rate = cycles(&simulated) as f64 / sim_wall.max(1e-9);
    println!(
        "live: {} cycles in {:.3} s wall = {:.0} cycles/s",
        cycles(&live.report),
        live.wall.as_secs_f64(),
        live_rate
    );
    println!(
        "sim:  {} cycles in {:.4} s wall (mean of {runs} runs of the seed) = {:.0} cycles/s ({})",
        cycles(&simulated),
        sim_wall,
        sim_rate,
        if simulated.passed() {
            "pass"
        } else {
            "VIOLATION"
        }
    );
    println!(
        "ratio: the simulator is {:.0}x faster",
        sim_rate / live_rate.max(1e-9)
    );
}
