//! `zkcheck herd`: the herd-effect figure. Watch notifications per release
//! and reads per acquisition against the number of clients, for a herd
//! (the original election: every contender watches the children list)
//! against predecessor watches (the fixed election, the fixed WriteLock).
//!
//! Each compared variant runs a no-fault contention scenario shipped in
//! `scenarios/bench/` (compiled in, so the command runs from anywhere) with
//! its `clients` replaced by each count of `--clients`: the edited file goes
//! through the same validation as any scenario. Every point runs seeds
//! `0..--seeds`; its figures are the means over those runs of each run's
//! own mean ([`HerdFigures`], measured by the herd oracle whether or not the
//! scenario checks `herd`). Output: a Markdown table on stdout, optionally
//! an SVG chart (`--svg`) and JSON (`--json`). No wall clock reaches them:
//! the same flags give byte-identical output.
//!
//! Exit status: 0 when every run passed its scenario's properties, 1 when
//! one broke a property (its figures would describe a run cut short), 2 on
//! bad flags, a run that made no progress, or an unwritable output file.

use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use zk_sim::oracles::HerdFigures;
use zk_sim::scenario::{Runner, Scenario};

use super::common::{bad_input, exit_status, write_json, EXIT_VIOLATION};
use super::Harness;

#[derive(clap::Args)]
pub struct HerdArgs {
    /// Client counts to compare, comma-separated, each 2..=256.
    #[arg(long, default_value = "2,5,10,20,50,100")]
    pub clients: String,
    /// Seeds per point: seeds 0..N (N in 1..=1000).
    #[arg(long, default_value_t = DEFAULT_SEEDS)]
    pub seeds: u64,
    /// Worker threads (default: every core; at most 256).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Write the chart as a self-contained SVG to FILE.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Write the figures as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

const DEFAULT_SEEDS: u64 = 20;
const MAX_SEEDS: u64 = 1_000;
const MAX_JOBS: usize = 256;
/// The client counts a point may have (a herd needs two clients; the
/// scenario cap is 256).
const CLIENTS: std::ops::RangeInclusive<usize> = 2..=256;
/// Client counts in one command.
const MAX_POINTS: usize = 32;

/// One compared variant: a shipped scenario and the variant it runs.
struct Compared {
    recipe: &'static str,
    variant: &'static str,
    watch: &'static str,
    file: &'static str,
    text: &'static str,
}

const ELECTION: &str = include_str!("../../scenarios/bench/herd-election.toml");
const LOCK: &str = include_str!("../../scenarios/bench/herd-lock.toml");

const COMPARED: [Compared; 3] = [
    Compared {
        recipe: "election",
        variant: "original",
        watch: "herd: every contender watches the children list",
        file: "scenarios/bench/herd-election.toml",
        text: ELECTION,
    },
    Compared {
        recipe: "election",
        variant: "fixed",
        watch: "predecessor watch",
        file: "scenarios/bench/herd-election.toml",
        text: ELECTION,
    },
    Compared {
        recipe: "lock",
        variant: "fixed",
        watch: "predecessor watch",
        file: "scenarios/bench/herd-lock.toml",
        text: LOCK,
    },
];

impl Compared {
    fn label(&self) -> String {
        format!("{} {}", self.recipe, self.variant)
    }

    /// The scenario with `clients` clients, checked like any file.
    fn scenario(&self, harness: &Harness, clients: usize) -> Result<Scenario, String> {
        let mut table: toml::Table = toml::from_str(self.text).map_err(|e| e.to_string())?;
        table.insert("clients".to_string(), toml::Value::Integer(clients as i64));
        let text = toml::to_string(&table).map_err(|e| e.to_string())?;
        let scenario = Scenario::parse(Path::new(self.file), &text, harness.registry.sim_recipes())
            .map_err(|e| format!("with clients = {clients}: {e}"))?;
        if scenario.raw.variant == self.variant {
            return Ok(scenario);
        }
        scenario
            .with_variant(self.variant)
            .map_err(|e| format!("{}: variant {}: {e}", self.file, self.variant))
    }
}

/// One point of the figure: a variant with a number of clients.
#[derive(Clone, Debug, Serialize)]
struct Point {
    clients: usize,
    runs: u64,
    /// Sums over the runs.
    totals: HerdFigures,
    /// Mean over the runs of each run's notifications per release.
    notifications_per_release: f64,
    /// Mean over the runs of each run's reads per acquisition.
    reads_per_acquisition: f64,
    /// The most notifications one release caused, over every run.
    max_notifications_one_release: u32,
}

#[derive(Serialize)]
struct Series {
    recipe: &'static str,
    variant: &'static str,
    watch: &'static str,
    scenario: &'static str,
    points: Vec<Point>,
}

#[derive(Serialize)]
struct Figure {
    /// Seeds 0..seeds per point.
    seeds: u64,
    series: Vec<Series>,
}

/// What one run gives a point.
struct RunFigures {
    figures: HerdFigures,
    max_notifications: u32,
}

/// What one run gives: its figures, or the exit status and why it failed.
type RunResult = Result<RunFigures, (u8, String)>;

/// A panel's title and the value of a point it plots.
type Panel = (&'static str, fn(&Point) -> f64);

/// One run to do: variant, client count (indices), seed.
struct Job {
    series: usize,
    point: usize,
    seed: u64,
}

pub fn run(harness: &Harness, args: HerdArgs) -> ExitCode {
    match herd(harness, &args) {
        Ok(code) | Err(code) => code,
    }
}

/// Parses `--clients`: comma-separated counts, each in [`CLIENTS`],
/// without repeats; kept in ascending order.
fn parse_clients(text: &str) -> Result<Vec<usize>, String> {
    let mut counts = Vec::new();
    for word in text.split(',') {
        let word = word.trim();
        if word.is_empty() {
            return Err(format!(
                "`{text}`: expected client counts separated by commas (e.g. 2,5,10), found an empty entry"
            ));
        }
        let count: usize = word
            .parse()
            .map_err(|_| format!("`{word}` is not a client count"))?;
        if !CLIENTS.contains(&count) {
            return Err(format!(
                "{count} clients is outside {}..={} (a herd needs two clients; scenarios take at most {})",
                CLIENTS.start(),
                CLIENTS.end(),
                CLIENTS.end()
            ));
        }
        if counts.contains(&count) {
            return Err(format!("{count} clients is given twice"));
        }
        counts.push(count);
    }
    if counts.len() > MAX_POINTS {
        return Err(format!(
            "{} client counts; at most {MAX_POINTS}",
            counts.len()
        ));
    }
    counts.sort_unstable();
    Ok(counts)
}

fn herd(harness: &Harness, args: &HerdArgs) -> Result<ExitCode, ExitCode> {
    let counts = parse_clients(&args.clients).map_err(|e| bad_input(format!("--clients: {e}")))?;
    if !(1..=MAX_SEEDS).contains(&args.seeds) {
        return Err(bad_input(format!(
            "--seeds: {} is outside 1..={MAX_SEEDS}",
            args.seeds
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
    super::outputs::probe(args.json.as_deref(), None)?;
    let mut runners: Vec<Vec<Box<dyn Runner>>> = Vec::new();
    for compared in &COMPARED {
        let mut row = Vec::new();
        for &clients in &counts {
            let scenario = compared.scenario(harness, clients).map_err(|e| {
                bad_input(format!(
                    "the herd figure runs the built-in `{}` recipe: {e}",
                    compared.recipe
                ))
            })?;
            row.push(scenario.runner());
        }
        runners.push(row);
    }
    // The largest runs first, so that no worker is left with one at the end.
    let mut work = Vec::new();
    for point in (0..counts.len()).rev() {
        for series in 0..COMPARED.len() {
            for seed in 0..args.seeds {
                work.push(Job {
                    series,
                    point,
                    seed,
                });
            }
        }
    }
    let results = run_all(&runners, &work, jobs.min(work.len()));
    let mut figure = Figure {
        seeds: args.seeds,
        series: Vec::new(),
    };
    let mut failed = None;
    let mut per_point: Vec<Vec<Vec<RunFigures>>> = COMPARED
        .iter()
        .map(|_| counts.iter().map(|_| Vec::new()).collect())
        .collect();
    for (job, result) in work.iter().zip(results) {
        let compared = &COMPARED[job.series];
        let clients = counts[job.point];
        match result {
            Ok(figures) => per_point[job.series][job.point].push(figures),
            Err((code, message)) => {
                eprintln!(
                    "error: {} with {clients} clients, seed {}: {message}",
                    compared.label(),
                    job.seed
                );
                failed = Some(failed.map_or(code, |worst: u8| worst.min(code)));
            }
        }
    }
    if let Some(code) = failed {
        return Err(ExitCode::from(code));
    }
    for (compared, points) in COMPARED.iter().zip(per_point) {
        let points = counts
            .iter()
            .zip(points)
            .map(|(&clients, runs)| point(clients, &runs))
            .collect();
        figure.series.push(Series {
            recipe: compared.recipe,
            variant: compared.variant,
            watch: compared.watch,
            scenario: compared.file,
            points,
        });
    }
    print!("{}", table(&figure));
    let mut output_failed = false;
    if let Some(path) = &args.svg {
        output_failed |= std::fs::write(path, svg(&figure))
            .map_err(|error| eprintln!("error: cannot write {}: {error}", path.display()))
            .is_err();
    }
    if let Some(path) = &args.json {
        output_failed |= write_json(path, &figure).is_err();
    }
    Ok(exit_status(false, output_failed))
}

/// Runs every job on `jobs` threads; results in the order of `work`.
/// A failed run gives its exit status and why.
fn run_all(runners: &[Vec<Box<dyn Runner>>], work: &[Job], jobs: usize) -> Vec<RunResult> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<RunResult>>> = Mutex::new(work.iter().map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = work.get(index) else {
                    break;
                };
                let report = runners[job.series][job.point].run(job.seed, false);
                let result = if let Some(violation) = report.violations.first() {
                    Err((
                        EXIT_VIOLATION,
                        format!("the scenario's properties must hold for its figures to mean anything: {violation}"),
                    ))
                } else if let Some(why) = report.vacuous() {
                    Err((super::common::EXIT_BAD_INPUT, why))
                } else {
                    Ok(RunFigures {
                        figures: report.herd_figures,
                        max_notifications: report.herd_maxima.0,
                    })
                };
                results.lock().expect("no worker panics")[index] = Some(result);
            });
        }
    });
    results
        .into_inner()
        .expect("no worker panics")
        .into_iter()
        .map(|result| result.expect("every job ran"))
        .collect()
}

fn point(clients: usize, runs: &[RunFigures]) -> Point {
    let mut totals = HerdFigures::default();
    let mut notifications = 0.0;
    let mut reads = 0.0;
    let mut max_notifications = 0;
    for run in runs {
        totals.add(&run.figures);
        notifications += run.figures.notifications_per_release();
        reads += run.figures.reads_per_acquisition();
        max_notifications = max_notifications.max(run.max_notifications);
    }
    let n = runs.len().max(1) as f64;
    Point {
        clients,
        runs: runs.len() as u64,
        totals,
        notifications_per_release: notifications / n,
        reads_per_acquisition: reads / n,
        max_notifications_one_release: max_notifications,
    }
}

/// The figure as a Markdown table, one row per variant and client count.
fn table(figure: &Figure) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| variant | watch | clients | runs | releases | notifications per release | reads per acquisition | most notifications, one release |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|");
    for series in &figure.series {
        for p in &series.points {
            let _ = writeln!(
                out,
                "| {} {} | {} | {} | {} | {} | {:.2} | {:.2} | {} |",
                series.recipe,
                series.variant,
                series.watch,
                p.clients,
                p.runs,
                p.totals.releases,
                p.notifications_per_release,
                p.reads_per_acquisition,
                p.max_notifications_one_release
            );
        }
    }
    out
}

/// Line colours and marker shapes, one per series.
const COLOURS: [&str; 6] = [
    "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

/// The figure as a self-contained SVG: two panels (notifications per
/// release, reads per acquisition) against clients, both axes linear (a
/// cost that grows linearly with clients is a straight line).
fn svg(figure: &Figure) -> String {
    const PANEL_W: f64 = 460.0;
    const PANEL_H: f64 = 340.0;
    const LEGEND_H: f64 = 30.0 + 20.0 * COMPARED.len() as f64;
    let width = 2.0 * PANEL_W;
    let height = PANEL_H + LEGEND_H + 40.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        out,
        r##"<rect width="{width}" height="{height}" fill="#ffffff"/>"##
    );
    let _ = writeln!(
        out,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="16">Herd effect: per-run means over seeds 0..{} of a no-fault contention run</text>"#,
        width / 2.0,
        figure.seeds
    );
    let panels: [Panel; 2] = [
        ("watch notifications per release", |p| {
            p.notifications_per_release
        }),
        ("reads per acquisition", |p| p.reads_per_acquisition),
    ];
    for (index, (title, value)) in panels.iter().enumerate() {
        panel(
            &mut out,
            figure,
            index as f64 * PANEL_W,
            40.0,
            PANEL_W,
            PANEL_H,
            title,
            *value,
        );
    }
    // The legend, under both panels.
    let top = 40.0 + PANEL_H + 10.0;
    for (index, series) in figure.series.iter().enumerate() {
        let y = top + 20.0 * index as f64 + 10.0;
        let colour = COLOURS[index % COLOURS.len()];
        let x = 80.0;
        let _ = writeln!(
            out,
            r#"<line x1="{x}" y1="{y}" x2="{}" y2="{y}" stroke="{colour}" stroke-width="2"/>"#,
            x + 30.0
        );
        marker(&mut out, index, x + 15.0, y, colour);
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}">{} {} ({})</text>"#,
            x + 40.0,
            y + 4.0,
            series.recipe,
            series.variant,
            series.watch
        );
    }
    out.push_str("</svg>\n");
    out
}

/// An axis top and tick step that fit `max` with round numbers.
fn y_scale(max: f64) -> (f64, f64) {
    let max = max.max(1.0);
    let raw_step = max / 5.0;
    let magnitude = 10f64.powf(raw_step.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|step| *step >= raw_step)
        .unwrap_or(10.0 * magnitude);
    ((max / step).ceil() * step, step)
}

#[allow(clippy::too_many_arguments)]
fn panel(
    out: &mut String,
    figure: &Figure,
    left: f64,
    top: f64,
    width: f64,
    height: f64,
    title: &str,
    value: fn(&Point) -> f64,
) {
    let (x0, x1) = (left + 60.0, left + width - 20.0);
    let (y0, y1) = (top + height - 50.0, top + 30.0);
    let largest = figure
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.clients))
        .max()
        .unwrap_or(1);
    let (x_top, x_step) = y_scale(largest as f64);
    let x = |clients: usize| x0 + clients as f64 / x_top * (x1 - x0);
    let max = figure
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(value))
        .fold(0.0, f64::max);
    let (top_value, step) = y_scale(max);
    let y = |v: f64| y0 - v / top_value * (y0 - y1);
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle" font-size="14">{title}</text>"#,
        (x0 + x1) / 2.0,
        top + 16.0
    );
    // Grid and y ticks.
    let ticks = (top_value / step).round() as usize;
    for tick in 0..=ticks {
        let v = step * tick as f64;
        let _ = writeln!(
            out,
            r##"<line x1="{x0}" y1="{yv:.1}" x2="{x1}" y2="{yv:.1}" stroke="#dddddd"/>"##,
            yv = y(v)
        );
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            x0 - 6.0,
            y(v) + 4.0,
            trim_number(v)
        );
    }
    // x ticks at round client counts.
    let x_ticks = (x_top / x_step).round() as usize;
    for tick in 0..=x_ticks {
        let clients = x_step * tick as f64;
        let xv = x0 + clients / x_top * (x1 - x0);
        let _ = writeln!(
            out,
            r##"<line x1="{xv:.1}" y1="{y0}" x2="{xv:.1}" y2="{}" stroke="#000000"/>"##,
            y0 + 5.0
        );
        let _ = writeln!(
            out,
            r#"<text x="{xv:.1}" y="{}" text-anchor="middle">{}</text>"#,
            y0 + 18.0,
            trim_number(clients)
        );
    }
    let _ = writeln!(
        out,
        r##"<path d="M{x0},{y1} V{y0} H{x1}" fill="none" stroke="#000000"/>"##
    );
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">clients</text>"#,
        (x0 + x1) / 2.0,
        y0 + 36.0
    );
    let _ = writeln!(
        out,
        r#"<text x="{xl}" y="{yl}" text-anchor="middle" transform="rotate(-90 {xl} {yl})">{title}</text>"#,
        xl = left + 16.0,
        yl = (y0 + y1) / 2.0
    );
    for (index, series) in figure.series.iter().enumerate() {
        let colour = COLOURS[index % COLOURS.len()];
        let points: Vec<String> = series
            .points
            .iter()
            .map(|p| format!("{:.1},{:.1}", x(p.clients), y(value(p))))
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
            points.join(" ")
        );
        for p in &series.points {
            marker(out, index, x(p.clients), y(value(p)), colour);
        }
    }
}

/// A series' marker: circle, square, triangle, in turn.
fn marker(out: &mut String, index: usize, x: f64, y: f64, colour: &str) {
    let _ = match index % 3 {
        0 => writeln!(
            out,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="4" fill="{colour}"/>"#
        ),
        1 => writeln!(
            out,
            r#"<rect x="{:.1}" y="{:.1}" width="8" height="8" fill="{colour}"/>"#,
            x - 4.0,
            y - 4.0
        ),
        _ => writeln!(
            out,
            r#"<path d="M{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="{colour}"/>"#,
            x,
            y - 5.0,
            x - 5.0,
            y + 4.0,
            x + 5.0,
            y + 4.0
        ),
    };
}

/// A tick label: no trailing zeros.
fn trim_number(v: f64) -> String {
    let text = format!("{v:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_lists() {
        assert_eq!(parse_clients("10,2, 5").unwrap(), vec![2, 5, 10]);
        assert!(parse_clients("").unwrap_err().contains("empty entry"));
        assert!(parse_clients("2,,5").unwrap_err().contains("empty entry"));
        assert!(parse_clients("1").unwrap_err().contains("outside 2..=256"));
        assert!(parse_clients("257")
            .unwrap_err()
            .contains("outside 2..=256"));
        assert!(parse_clients("two")
            .unwrap_err()
            .contains("not a client count"));
        assert!(parse_clients("5,5").unwrap_err().contains("twice"));
    }

    #[test]
    fn y_scales_are_round() {
        assert_eq!(y_scale(0.0), (1.0, 0.2));
        assert_eq!(y_scale(1.0), (1.0, 0.2));
        assert_eq!(y_scale(98.3), (100.0, 20.0));
        assert_eq!(y_scale(3.4), (4.0, 1.0));
    }
}
