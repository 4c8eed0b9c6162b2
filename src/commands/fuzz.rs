//! `zkcheck fuzz SCENARIO`: a search guided by coverage
//! ([`zk_sim::guided::campaign`]). Starts from the scenario's first seeds,
//! keeps every run's draw tape that reached an abstract state or step no
//! run before it had, and mutates those tapes, under one campaign seed (the
//! same seed, the same runs), until a run breaks a property or `--runs` /
//! `--timeout` is spent. Prints a progress line, then the runs, the
//! corpus, the coverage and its curve per block of runs, what each kind of
//! change found; a failing run is written as a tape file that `zkcheck
//! replay` runs with the full trace, and the command is printed.
//!
//! Exit status: 1 when a run broke a property, 4 when the budget was spent
//! without one (a sample: not a pass), 2 on bad input, 3 when a run
//! panicked (an internal error of zkcheck; the rerun command printed).

use super::against_model::{AgainstModel, Comparison};
use super::common::{
    bad_input, load_scenario_with_text, quote, EXIT_INTERNAL_ERROR, EXIT_NOT_EXHAUSTIVE,
};
use super::coverage_report;
use super::Harness;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use zk_sim::guided::campaign::{fuzz, seeded, Campaign, Failing, Outcome, MOVES};
use zk_sim::guided::tally::CoverageTally;
use zk_sim::guided::tally::{block_for, summary_lines};
use zk_sim::scenario::Scenario;
use zk_sim::world::draws::{self, DrawRequest};
use zk_sim::world::tape_file::TapeFile;

#[derive(clap::Args)]
pub struct FuzzArgs {
    /// The scenario file (TOML).
    pub scenario: PathBuf,
    /// Run another variant of the scenario's recipe.
    #[arg(long)]
    pub variant: Option<String>,
    /// Most runs, the first seeds' included.
    #[arg(long, default_value_t = 10_000)]
    pub runs: u64,
    /// The campaign's seed: every pick and mutation is drawn from it.
    #[arg(long, default_value_t = 0)]
    pub campaign_seed: u64,
    /// The scenario's seeds the corpus starts from (from --first-seed).
    #[arg(long, default_value_t = 16)]
    pub initial_seeds: u64,
    /// The scenario's first seed the campaign runs (its first seeds, the
    /// fresh ones after them, and the seeds --against-seeds compares
    /// with); default: the first of the scenario's range.
    #[arg(long)]
    pub first_seed: Option<u64>,
    /// After the first seeds, the share of runs (0 to 1) that are the
    /// scenario's next seed rather than a mutant. Without it the campaign
    /// learns the share: the next seed is one more move, picked by how
    /// often it reached something new, as each change is.
    #[arg(long)]
    pub fresh_seeds: Option<f64>,
    /// Stop after this many seconds.
    #[arg(long)]
    pub timeout: Option<u64>,
    /// Directory the failing run's tape file is written to.
    #[arg(long, default_value = "target/zkcheck")]
    pub out: PathBuf,
    /// After the campaign, run as many of the scenario's own seeds (from
    /// its range's first) and compare what they covered with the
    /// campaign's: counts and both curves.
    #[arg(long)]
    pub against_seeds: bool,
    /// Write the campaign's report into DIR (JSON, HTML, Markdown, JUnit
    /// XML): the campaign, its coverage curve (and the seeds' with
    /// --against-seeds), the failing run replayed in full.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Measure the campaign's shared abstract states (and, with
    /// --against-seeds, the seeds') against the stateful checker's
    /// reachable set with this fault budget, as `sweep --against-model`.
    #[arg(long, value_name = "FAULTS")]
    pub against_model: Option<String>,
}

/// Most runs a campaign takes.
const MAX_RUNS: u64 = 100_000_000;
/// How often a progress line is printed where stderr is not a terminal.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

pub fn run(harness: &Harness, args: FuzzArgs) -> ExitCode {
    let loaded = load_scenario_with_text(harness, &args.scenario, args.variant.as_deref(), "fuzz");
    let (scenario, text) = match loaded {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    if !(1..=MAX_RUNS).contains(&args.runs) {
        return bad_input(format!("--runs: {} is outside 1..={MAX_RUNS}", args.runs));
    }
    if let Some(share) = args
        .fresh_seeds
        .filter(|share| !(0.0..=1.0).contains(share))
    {
        return bad_input(format!("--fresh-seeds: {share} is outside 0..=1"));
    }
    if args.timeout == Some(0) {
        return bad_input("--timeout: must be at least 1 second".to_string());
    }
    if args.initial_seeds == 0 || args.initial_seeds > args.runs {
        return bad_input(format!(
            "--initial-seeds: {} is outside 1..=--runs ({})",
            args.initial_seeds, args.runs
        ));
    }
    if let Err(code) = super::outputs::probe(None, args.report.as_deref()) {
        return code;
    }
    let against_model = match args
        .against_model
        .as_deref()
        .map(|faults| AgainstModel::prepare(harness, &scenario, faults))
    {
        Some(Err(e)) => return bad_input(format!("--against-model: {e}")),
        Some(Ok(model)) => Some(model),
        None => None,
    };
    let campaign = Campaign {
        seed: args.campaign_seed,
        runs: args.runs,
        timeout: args.timeout.map(Duration::from_secs),
        first_seed: first_seed(&scenario, &args),
        initial_seeds: args.initial_seeds,
        fresh_seeds: args.fresh_seeds,
    };
    let started = Instant::now();
    let runner = scenario.runner();
    let mut last_line = Instant::now();
    let terminal = std::io::stderr().is_terminal();
    let outcome = super::internal_error::catch(|| {
        fuzz(runner.as_ref(), &campaign, |outcome| {
            if last_line.elapsed() >= PROGRESS_EVERY || (terminal && outcome.runs % 200 == 0) {
                eprintln!("{}", progress_line(outcome, started));
                last_line = Instant::now();
            }
        })
    });
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(panic) => {
            eprintln!(
                "zkcheck fuzz: INTERNAL ERROR of zkcheck (a run panicked): {panic}; the campaign again: {}",
                this_command(harness, &args)
            );
            return ExitCode::from(EXIT_INTERNAL_ERROR);
        }
    };
    print_outcome(&scenario, &args, &outcome, started.elapsed());
    let seeds = args
        .against_seeds
        .then(|| seeded(runner.as_ref(), first_seed(&scenario, &args), outcome.runs));
    if let Some(seeds) = &seeds {
        print_against_seeds(first_seed(&scenario, &args), &outcome, seeds);
    }
    let compared = match against_model
        .as_ref()
        .map(|model| compare(harness, model, &outcome, seeds.as_ref()))
    {
        Some(Err(e)) => return bad_input(format!("--against-model: {e}")),
        Some(Ok(compared)) => Some(compared),
        None => None,
    };
    let (code, tape) = match &outcome.first_failure {
        Some(failing) => write_failing(harness, (&scenario, text), &args, failing),
        None => {
            println!(
                "\nno run broke a property: a sample of the world, not a pass (exit {EXIT_NOT_EXHAUSTIVE})"
            );
            (ExitCode::from(EXIT_NOT_EXHAUSTIVE), None)
        }
    };
    match &args.report {
        Some(dir) => {
            let searched = Searched {
                outcome: &outcome,
                seeds: seeds.as_ref(),
                compared: compared.as_ref(),
            };
            let document = fuzz_document(harness, &scenario, &args, &searched, tape);
            match super::report::write_dir(dir, &scenario.name, &document) {
                Ok(()) => code,
                Err(()) => ExitCode::from(super::common::EXIT_BAD_INPUT),
            }
        }
        None => code,
    }
}

/// The scenario's seed the campaign starts from: `--first-seed`, else the
/// first of the scenario's range.
fn first_seed(scenario: &Scenario, args: &FuzzArgs) -> u64 {
    args.first_seed.unwrap_or(scenario.seeds.first)
}

/// The seeds' coverage beside the campaign's, and the seeds' curve.
fn print_against_seeds(first: u64, outcome: &Outcome, seeds: &CoverageTally) {
    let last = first.wrapping_add(outcome.runs);
    println!(
        "against seeds {first}..{last}: they reached {} states, {} steps, {} client features; the campaign {}, {}, {}",
        seeds.states.len(),
        seeds.transitions.len(),
        seeds.features.len(),
        outcome.reached.states.len(),
        outcome.reached.transitions.len(),
        outcome.reached.features.len()
    );
    let block = block_for(outcome.runs);
    let news: Vec<String> = seeds
        .curve(1, outcome.runs, block)
        .iter()
        .map(|b| b.new_states.to_string())
        .collect();
    println!(
        "  the seeds' new states per {block} runs: {}",
        news.join(", ")
    );
}

/// What the campaign found and covered, and the seeds beside it.
struct Searched<'a> {
    outcome: &'a Outcome,
    seeds: Option<&'a CoverageTally>,
    /// The campaign's shared states against the model's.
    compared: Option<&'a Comparison>,
}

/// The campaign's shared states against the model's (and the seeds',
/// printed), each comparison's lines printed.
fn compare(
    harness: &Harness,
    model: &AgainstModel,
    outcome: &Outcome,
    seeds: Option<&CoverageTally>,
) -> Result<Comparison, String> {
    let campaign = model.compare(&outcome.reached.shared, None)?;
    println!("the campaign:");
    for line in campaign.summary_lines(&harness.program, "run") {
        println!("{line}");
    }
    if let Some(seeds) = seeds {
        println!("the seeds:");
        for line in model
            .compare(&seeds.shared, None)?
            .summary_lines(&harness.program, "run")
        {
            println!("{line}");
        }
    }
    Ok(campaign)
}

/// The campaign's report: the campaign, its coverage (and the seeds'),
/// the comparison with a model, and the failing run replayed in full from
/// its tape.
fn fuzz_document(
    harness: &Harness,
    scenario: &Scenario,
    args: &FuzzArgs,
    searched: &Searched,
    tape: Option<String>,
) -> zk_reports::Report {
    let (outcome, seeds) = (searched.outcome, searched.seeds);
    use zk_reports::schema;
    let title = format!(
        "fuzz {} ({} {}), campaign seed {}",
        scenario.name, scenario.recipe.name, scenario.raw.variant, args.campaign_seed
    );
    let mut document =
        super::report::document(schema::ReportKind::Fuzz, title, this_command(harness, args));
    let replay = tape
        .as_ref()
        .map(|path| format!("{} replay {}", harness.program, quote(path)));
    if let (Some(failing), Some(replay)) = (&outcome.first_failure, &replay) {
        let mut record = super::report::run_record(harness, scenario, &replayed(scenario, failing));
        record.replay = replay.clone();
        document.runs.push(record);
    }
    document.fuzz = Some(schema::Fuzz {
        scenario: scenario.file.display().to_string(),
        recipe: scenario.recipe.name.clone(),
        variant: scenario.raw.variant.clone(),
        campaign_seed: args.campaign_seed,
        runs: outcome.runs,
        seed_runs: outcome.seeds,
        corpus: outcome.corpus as u64,
        first_failing_run: outcome.first_failure.as_ref().map(|f| f.run),
        tape,
        replay,
        timed_out: outcome.timed_out,
    });
    let block = block_for(outcome.runs);
    let guided = format!("guided, campaign seed {}", args.campaign_seed);
    let mut curves = vec![coverage_report::curve(
        guided,
        block,
        &outcome.reached.curve(1, outcome.runs, block),
    )];
    if let Some(seeds) = seeds {
        let first = first_seed(scenario, args);
        let label = format!("seeds {first}..{}", first.wrapping_add(outcome.runs));
        curves.push(coverage_report::curve(
            label,
            block,
            &seeds.curve(1, outcome.runs, block),
        ));
    }
    let coverage = coverage_report::coverage(
        &outcome.reached,
        curves,
        searched.compared,
        &harness.program,
    );
    document.coverage = Some(coverage);
    document
}

/// The failing run again from its recorded tape, with its full trace.
fn replayed(scenario: &Scenario, failing: &Failing) -> zk_sim::world::RunReport {
    draws::install(DrawRequest {
        script: Some(failing.tape.clone()),
        record: true,
        stream_seed: None,
        coverage: false,
    });
    let report = scenario.runner().run(failing.tape.seed, true);
    let _ = draws::collect();
    report
}

fn progress_line(outcome: &Outcome, started: Instant) -> String {
    format!(
        "fuzz: {} runs, corpus {}, {} states, {} client features, {:.0} s",
        outcome.runs,
        outcome.corpus,
        outcome.reached.states.len(),
        outcome.reached.features.len(),
        started.elapsed().as_secs_f64()
    )
}

fn print_outcome(scenario: &Scenario, args: &FuzzArgs, outcome: &Outcome, elapsed: Duration) {
    let first = match &outcome.first_failure {
        Some(failing) => format!("first failing run: {}", failing.run),
        None if outcome.timed_out => "no failing run (stopped by --timeout)".to_string(),
        None => "no failing run".to_string(),
    };
    println!(
        "fuzz {} ({} {}), campaign seed {}: {} runs ({} of them the scenario's own seeds), corpus {}; {first}; {:.1} s",
        scenario.name,
        scenario.recipe.name,
        scenario.raw.variant,
        args.campaign_seed,
        outcome.runs,
        outcome.seeds,
        outcome.corpus,
        elapsed.as_secs_f64()
    );
    let block = block_for(outcome.runs);
    let curve = outcome.reached.curve(1, outcome.runs, block);
    for line in summary_lines(&outcome.reached, &curve, block, "runs") {
        println!("{line}");
    }
    let moves: Vec<String> = MOVES
        .iter()
        .zip(outcome.moves)
        .map(|(name, (runs, new))| format!("{name} {new} of {runs}"))
        .collect();
    println!(
        "  runs after the first seeds that reached something new, by move: {}",
        moves.join(", ")
    );
}

/// Writes the failing run's tape file (with `text`, the scenario file as
/// it was read for the campaign) and prints how to replay it.
fn write_failing(
    harness: &Harness,
    (scenario, text): (&Scenario, String),
    args: &FuzzArgs,
    failing: &Failing,
) -> (ExitCode, Option<String>) {
    let properties: Vec<&str> = failing
        .report
        .violations
        .iter()
        .map(|v| v.property_name())
        .collect();
    println!("\nrun {} broke {}", failing.run, properties.join(", "));
    let file = TapeFile {
        variant: scenario.raw.variant.clone(),
        all_violations: false,
        property: properties.first().map(|p| p.to_string()),
        scenario: text,
        tape: failing.tape.clone(),
    };
    let path = match write_tape(&args.out, scenario, failing.run, &file) {
        Ok(path) => path,
        Err(error) => {
            eprintln!("zkcheck fuzz: cannot write the tape file: {error}");
            return (ExitCode::from(EXIT_INTERNAL_ERROR), None);
        }
    };
    let written = path.display().to_string();
    let path = quote(&written);
    println!("tape written: {path} ({} words)", file.tape.words());
    println!("replay it: {} replay {path}", harness.program);
    (ExitCode::from(super::common::EXIT_VIOLATION), Some(written))
}

fn write_tape(
    dir: &Path,
    scenario: &Scenario,
    run: u64,
    file: &TapeFile,
) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let stem = format!("{}-{}-fuzz-run-{run}", scenario.name, scenario.raw.variant);
    let path = super::report::file_in(dir, &stem, "toml");
    std::fs::write(&path, file.to_toml())?;
    Ok(path)
}

/// The command that runs this campaign again, quoted so it pastes.
fn this_command(harness: &Harness, args: &FuzzArgs) -> String {
    let mut words = vec![
        harness.program.clone(),
        "fuzz".to_string(),
        quote(&args.scenario.display().to_string()),
    ];
    if let Some(variant) = &args.variant {
        words.extend(["--variant".to_string(), quote(variant)]);
    }
    words.extend([
        format!("--runs {}", args.runs),
        format!("--campaign-seed {}", args.campaign_seed),
        format!("--initial-seeds {}", args.initial_seeds),
    ]);
    if let Some(first) = args.first_seed {
        words.push(format!("--first-seed {first}"));
    }
    if let Some(share) = args.fresh_seeds {
        words.push(format!("--fresh-seeds {share}"));
    }
    words.join(" ")
}
