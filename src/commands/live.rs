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
//! not ZooKeeper 3.x, a root that already exists.
//!
//! `--vs-sim` also runs the same seed in the simulator (repeatedly, for at
//! least a second) and prints both speeds (workload cycles, i.e.
//! acquisitions, per wall second) and their ratio (BENCHMARKS.md).

use super::sim::{
    bad_input, exit_status, load_scenario, print_no_progress, quote, write_json, EXIT_BAD_INPUT,
};
use super::Harness;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;
use zk_live::{run_live, LiveOptions, LiveRun};
use zk_sim::scenario::Scenario;
use zk_sim::world::RunReport;

#[derive(clap::Args)]
pub struct LiveArgs {
    /// The scenario file (TOML).
    pub scenario: PathBuf,
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
    /// Also simulate the same seed and compare speeds.
    #[arg(long)]
    pub vs_sim: bool,
    /// Write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
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
    let scenario = match load_scenario(harness, &args.scenario, args.variant.as_deref(), "live") {
        Ok(scenario) => scenario,
        Err(code) => return code,
    };
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
    let live = match run_live(&scenario, &options) {
        Ok(live) => live,
        Err(error) if error.is_bad_input() => return bad_input(error),
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
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
            println!("VIOLATION of {} (seed {seed}, live):", violation.property);
            print!("  {violation}");
            if violation.diagnosis.is_none() {
                println!("  (no diagnosis live: simulate the seed for one, below)");
            }
        }
    }
    if !report.passed() {
        println!("rerun: {rerun}");
        println!(
            "simulate: {} sim {}{} --seed {seed}",
            harness.program,
            quote(&scenario.file.display().to_string()),
            variant_flag(&scenario)
        );
    }
    println!("server: {} removed, nothing left", live.root);
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

fn print_summary(live: &LiveRun, clients: usize) {
    let report = &live.report;
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
