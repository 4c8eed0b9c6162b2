//! `zkcheck bench`: the simulator's speed as tables, measured on the binary
//! users run (its allocator included). The workload is the benchmark lock
//! scenario (`scenarios/bench/lock-5x100.toml`, built in: fixed WriteLock,
//! faults as in `scenarios/lock-fixed.toml`) with the client and cycle
//! counts each row says:
//! - speed: 5 clients, 20 cycles, on one thread (per core) and on every core
//!   (wall);
//! - cost against clients (2 to 200) and against cycles (x10), one thread:
//!   CPU per request, and per unit of work (a request, or a child name a
//!   getChildren reply carried: a lock's getChildren lists every contender).
//!
//! - the cost line over the clients rows: CPU per request as a fixed cost
//!   plus a cost per child name, fitted by least squares, with each row's
//!   deviation from it (a cost that grows faster than the work shows as a
//!   large deviation).
//!
//! Each row runs seeds 0, 1, ... until `--budget-seconds` has passed. Exit
//! status: 0; 1 if a seed of the fixed lock broke a property; 2 on bad
//! flags or an unwritable `--json`.

use super::common::{bad_input, write_json};
use super::Harness;
use crate::bench::{measure, CostFit, Figures};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;
use zk_sim::scenario::Scenario;

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Wall time each row runs seeds for (at least one seed), 0.1 to 600.
    #[arg(long, default_value_t = 3.0, value_name = "SECONDS")]
    pub budget_seconds: f64,
    /// Client counts of the scaling rows (comma-separated, each 1 to 200, each once).
    #[arg(long, value_delimiter = ',', default_value = "2,5,10,20,50,100,200")]
    pub clients: Vec<usize>,
    /// Write every row as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// The benchmark scenario, with `clients = 5` and `cycles = 100` to replace.
const TEMPLATE: &str = include_str!("../../scenarios/bench/lock-5x100.toml");

/// What `--json` writes.
#[derive(serde::Serialize)]
struct Measured<'a> {
    rows: &'a [Row],
    /// The cost line over the clients rows (absent with fewer than two
    /// distinct children counts).
    cost_fit: Option<CostFit>,
}

/// One measured row.
#[derive(serde::Serialize)]
struct Row {
    table: &'static str,
    clients: usize,
    cycles: u32,
    #[serde(flatten)]
    figures: Figures,
    requests_per_cpu_second: f64,
    requests_per_wall_second: f64,
    cpu_ns_per_request: f64,
    cpu_ns_per_work: f64,
    simulated_seconds_per_cpu_second: f64,
}

pub fn run(harness: &Harness, args: BenchArgs) -> ExitCode {
    measure_all(harness, args).unwrap_or_else(|status| status)
}

fn measure_all(harness: &Harness, args: BenchArgs) -> Result<ExitCode, ExitCode> {
    if !(0.1..=600.0).contains(&args.budget_seconds) {
        return Err(bad_input(format!(
            "--budget-seconds: {} is outside 0.1..=600",
            args.budget_seconds
        )));
    }
    if let Some(bad) = args.clients.iter().find(|c| !(1..=200).contains(*c)) {
        return Err(bad_input(format!("--clients: {bad} is outside 1..=200")));
    }
    // A count given twice would measure the same row twice and weigh it
    // twice in the cost line.
    if let Some((at, twice)) = args
        .clients
        .iter()
        .enumerate()
        .find(|(at, c)| args.clients[..*at].contains(c))
    {
        return Err(bad_input(format!(
            "--clients: {twice} is given twice (entry {} of `{}`): each count is one row; give each once",
            at + 1,
            args.clients
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(",")
        )));
    }
    super::outputs::probe(args.json.as_deref(), None)?;
    let budget = Duration::from_secs_f64(args.budget_seconds);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut rows = Vec::new();
    let mut row = |table, clients, cycles, threads| -> Result<(), ExitCode> {
        let scenario = scenario(harness, clients, cycles)?;
        let figures = measure(scenario.runner().as_ref(), threads, budget, 1);
        rows.push(Row::new(table, clients, cycles, figures));
        Ok(())
    };
    // Warm up (page in the code, fill the allocator's pages).
    measure(
        scenario(harness, 5, 20)?.runner().as_ref(),
        1,
        budget / 4,
        1,
    );
    row("speed", 5, 20, 1)?;
    row("speed", 5, 20, cores)?;
    for clients in &args.clients {
        row("clients", *clients, 20, 1)?;
    }
    row("cycles", 5, 200, 1)?;
    // The cycles table starts from the speed table's one-thread row: the
    // same workload, measured once.
    let base = Row::new("cycles", 5, 20, rows[0].figures.clone());
    let last = rows.len() - 1;
    rows.insert(last, base);
    print_tables(&rows, cores);
    let cost_fit = fit_clients_rows(&rows);
    print_cost_fit(&rows, cost_fit.as_ref());
    let failed: u64 = rows.iter().map(|r| r.figures.failed_seeds).sum();
    let written = args.json.as_ref().map_or(Ok(()), |file| {
        write_json(
            file,
            &Measured {
                rows: &rows,
                cost_fit,
            },
        )
    });
    if failed > 0 {
        // A broken property wins over an unwritable --json.
        eprintln!("error: {failed} seed(s) of the fixed lock broke a property while measuring");
        return Ok(ExitCode::from(1));
    }
    written.map_err(|()| ExitCode::from(2))?;
    Ok(ExitCode::SUCCESS)
}

/// The benchmark scenario with `clients` clients of `cycles` lock cycles.
fn scenario(harness: &Harness, clients: usize, cycles: u32) -> Result<Scenario, ExitCode> {
    let text = TEMPLATE
        .replacen("\nclients = 5\n", &format!("\nclients = {clients}\n"), 1)
        .replacen("\ncycles = 100\n", &format!("\ncycles = {cycles}\n"), 1);
    let name =
        format!("(built-in) scenarios/bench/lock-5x100.toml, {clients} clients, {cycles} cycles");
    Scenario::parse(Path::new(&name), &text, harness.registry.sim_recipes())
        .map_err(|e| bad_input(e.to_string()))
}

impl Row {
    fn new(table: &'static str, clients: usize, cycles: u32, figures: Figures) -> Row {
        Row {
            table,
            clients,
            cycles,
            requests_per_cpu_second: figures.requests_per_cpu_second(),
            requests_per_wall_second: figures.requests_per_wall_second(),
            cpu_ns_per_request: figures.cpu_ns_per_request(),
            cpu_ns_per_work: figures.cpu_ns_per_work(),
            simulated_seconds_per_cpu_second: figures.compression(),
            figures,
        }
    }
}

fn print_tables(rows: &[Row], cores: usize) {
    println!(
        "Simulator speed: fixed WriteLock, faults as in scenarios/lock-fixed.toml ({cores} cores)"
    );
    println!();
    println!("| table | clients | cycles | threads | seeds | simulated requests | wall s | CPU s | requests per CPU-second (per core) | requests per wall second | CPU ns per request | children returned per request | CPU ns per unit of work (a request or a child returned) | simulated s per CPU-second | failed seeds |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        let f = &row.figures;
        println!(
            "| {} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {:.0} | {:.0} | {:.0} | {:.1} | {:.0} | {:.0} | {} |",
            row.table,
            row.clients,
            row.cycles,
            f.threads,
            f.seeds,
            f.requests,
            f.wall_seconds,
            f.cpu_seconds,
            row.requests_per_cpu_second,
            row.requests_per_wall_second,
            row.cpu_ns_per_request,
            f.children_per_request(),
            row.cpu_ns_per_work,
            row.simulated_seconds_per_cpu_second,
            f.failed_seeds
        );
    }
}

fn clients_rows(rows: &[Row]) -> impl Iterator<Item = &Row> {
    rows.iter().filter(|r| r.table == "clients")
}

/// The cost line over the clients rows.
fn fit_clients_rows(rows: &[Row]) -> Option<CostFit> {
    let points: Vec<(f64, f64)> = clients_rows(rows)
        .map(|r| (r.figures.children_per_request(), r.cpu_ns_per_request))
        .collect();
    CostFit::fit(&points)
}

fn print_cost_fit(rows: &[Row], fit: Option<&CostFit>) {
    println!();
    let Some(fit) = fit else {
        println!("Cost line: needs clients rows with at least two different children counts (see --clients).");
        return;
    };
    println!(
        "Cost line over the clients rows (least squares): CPU ns per request = {:.0} + {:.0} x children returned per request",
        fit.per_request_ns, fit.per_child_ns
    );
    println!();
    println!("| clients | children per request | CPU ns per request, measured | on the line | deviation | CPU ns per request less {:.0} ns per child |", fit.per_child_ns);
    println!("|---:|---:|---:|---:|---:|---:|");
    for (row, deviation) in clients_rows(rows).zip(&fit.deviations) {
        let children = row.figures.children_per_request();
        println!(
            "| {} | {:.1} | {:.0} | {:.0} | {:+.1}% | {:.0} |",
            row.clients,
            children,
            row.cpu_ns_per_request,
            fit.fitted(children),
            deviation * 100.0,
            row.cpu_ns_per_request - fit.per_child_ns * children
        );
    }
    println!();
    if fit.deviations.len() < 3 {
        // Any line goes through two points: no test of linearity.
        println!("Two client counts: the line goes through both; give --clients three or more counts to test whether the cost is linear.");
        return;
    }
    println!(
        "Largest deviation from the line: {:.1}% ({} the +/-30% of linear cost)",
        fit.worst_deviation() * 100.0,
        if fit.worst_deviation() <= 0.3 {
            "within"
        } else {
            "outside"
        }
    );
}
