//! `zkcheck check` on an async recipe (simulating build only): depth-first
//! search by re-execution over the simulated world's choices (which
//! client's request the server applies next, which fault strikes a
//! request), see `zk_sim::explore`. Prints the executions run and pruned
//! and an estimate of the whole tree's (Knuth's),
//! whether the search was exhaustive under its bounds and every property's
//! verdict; writes each property's shortest counterexample found as a
//! choice file that `zkcheck replay` runs, and prints the command.
//! `--strategy pct` samples the same choices instead (PCT,
//! `zk_sim::explore::pct`): runs drawn, the first failing run, verdicts,
//! and each property's first failing run as a choice file.
//!
//! The explored world is `zk_sim::explore::run::World`'s: a run is a
//! function of its choice string.
//!
//! Exit status as `check`: 1 on a violation, 2 on bad input or when every
//! execution was vacuous (the workload achieved nothing: no verdict, as
//! `run` says of such a seed), 3 when the world is not a function of its
//! choices, 4 when a bound cut the search (or a sample was drawn) and it
//! found nothing, 0 when an exhaustive search found every property to
//! hold.

use super::check_args::CheckArgs;
use super::check_args::Clients;
use super::check_world::{dimensions, render};
use super::common::{bad_input, quote, EXIT_INTERNAL_ERROR};
use super::explored::{AsyncStrategy, Explored, Given, MAX_SCENARIO_CLIENTS};
use super::Harness;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use zk_sim::explore::file::{choice_string, ChoiceFile};
use zk_sim::explore::pct::{sample, Samples, Sampling, Strategy};
use zk_sim::explore::run::{explore, replay, World, WorldSource};
use zk_sim::explore::search::{Bounds, Found, Stop, Summary, Vacuity};
use zk_sim::explore::{DurationPoints, FaultAllowance, RuntimeSeeds};
use zk_sim::scenario::{Scenario, ScenarioError};
use zk_sim::world::RunReport;

/// Most clients an exploration takes.
const MAX_CLIENTS: usize = 4;
/// PCT's most priority change points + 1, and the runs drawn by default.
const MAX_PCT_DEPTH: usize = 10;
const DEFAULT_PCT_RUNS: u64 = 1000;

/// `--strategy pct`'s flags, checked: `--depth` (default 3, PCT's d),
/// `--runs` (default 1000), `--seed`.
fn pct_strategy(
    depth: Option<usize>,
    runs: Option<std::num::NonZeroU32>,
    seed: u64,
) -> Result<AsyncStrategy, String> {
    let depth = depth.unwrap_or(3);
    if !(1..=MAX_PCT_DEPTH).contains(&depth) {
        return Err(format!(
            "--depth: PCT's depth (priority change points + 1) is in 1..={MAX_PCT_DEPTH}"
        ));
    }
    Ok(AsyncStrategy::Pct {
        depth: depth as u32,
        runs: runs.map_or(DEFAULT_PCT_RUNS, |n| u64::from(n.get())),
        seed,
    })
}

/// The strategy the flags ask for (`--liveness` other than terminal
/// does not apply: an explored execution ends when its world does).
fn strategy_of(args: &CheckArgs) -> Result<AsyncStrategy, String> {
    use super::check_args::StrategyArg;
    if args.liveness != super::lasso::LivenessArg::Terminal {
        return Err("--liveness: an async recipe's executions are judged at their end; this flag does not apply".into());
    }
    match args.strategy {
        StrategyArg::Bfs | StrategyArg::Dfs if args.depth.is_some() || args.runs.is_some() => {
            Err("--depth/--runs: PCT's (--strategy pct); not available on an async recipe's depth-first exploration".into())
        }
        StrategyArg::Bfs | StrategyArg::Dfs => Ok(AsyncStrategy::Dfs),
        StrategyArg::Pct => pct_strategy(args.depth, args.runs, args.seed),
        StrategyArg::Simulation => Err(
            "--strategy simulation: an async recipe is explored depth first by re-execution, or sampled with --strategy pct".into(),
        ),
    }
}

/// True if `recipe`/`variant` names an async recipe of the registry.
pub fn is_async(harness: &Harness, recipe: &str, variant: &str) -> bool {
    matches!(
        harness.registry.model(recipe, variant),
        Err(zk_models::RegistryError::AsyncRecipe { .. })
    )
}

/// True if `check`'s argument names a scenario file rather than a recipe
/// (a recipe's name has neither a `.toml` end nor a `/`).
pub fn is_scenario_file(argument: &str) -> bool {
    argument.ends_with(".toml") || argument.contains('/')
}

/// The flags, checked: the explored world and the search's bounds.
fn resolve(harness: &Harness, args: &CheckArgs) -> Result<Explored, ExitCode> {
    let model = &args.model;
    let refused = [
        ("--symmetry", model.symmetry),
        ("--ranks", model.ranks),
        ("--all-orders", model.all_orders),
        ("--no-reduction", model.no_reduction),
        ("--servers", model.servers != 1),
        ("--lag", model.lag.is_some()),
        ("--unrevalidated-reconnects", model.unrevalidated_reconnects),
        ("--threads", args.threads != 1),
        ("--examples", args.examples),
        ("--report", args.report.is_some()),
        ("--lasso-states", args.lasso_states.is_some()),
        ("--memory-budget", args.memory_budget.is_some()),
        ("--node", !args.initial.nodes.is_empty()),
        ("--container", !args.initial.containers.is_empty()),
        ("--sequence-start", !args.initial.sequence_starts.is_empty()),
    ];
    if let Some((flag, _)) = refused.iter().find(|(_, given)| *given) {
        return Err(bad_input(format!(
            "{flag}: not available on an explored world (an async recipe or a scenario file), which `check` explores by re-execution (docs/async-recipe.md)"
        )));
    }
    let given = match is_scenario_file(&model.recipe) {
        true => Some(given_scenario(harness, Path::new(&model.recipe))?),
        false => None,
    };
    flags(harness, args, given).map_err(bad_input)
}

/// Reads the scenario file `check` was given (errors name the file, the
/// line and the key).
fn given_scenario(harness: &Harness, path: &Path) -> Result<Given, ExitCode> {
    let text = super::common::read_input(path)?;
    if zk_models::schedule::is_schedule_text(&text) || zk_sim::explore::file::is_choice_text(&text)
    {
        return Err(bad_input(format!(
            "{}: not a scenario file: `check` explores a scenario's world; replay this file with `{} replay {}`",
            path.display(),
            harness.program,
            quote(&path.display().to_string())
        )));
    }
    let scenario =
        Scenario::parse(path, &text, harness.registry.sim_recipes()).map_err(bad_input)?;
    Ok(Given {
        path: path.to_path_buf(),
        scenario,
        text,
    })
}

/// The flags' bounds on the world and the search, checked.
fn flags(harness: &Harness, args: &CheckArgs, given: Option<Given>) -> Result<Explored, String> {
    let model = &args.model;
    let strategy = strategy_of(args)?;
    if strategy != AsyncStrategy::Dfs
        && (args.max_delays.is_some() || args.max_executions.is_some())
    {
        return Err(
            "--max-delays/--max-executions: bound the depth-first search; PCT draws --runs runs"
                .into(),
        );
    }
    let default_clients = match &given {
        Some(given) => given.scenario.raw.clients.min(MAX_SCENARIO_CLIENTS),
        None => super::check_args::DEFAULT_CLIENTS,
    };
    let clients = match model.clients.unwrap_or(Clients::One(default_clients)) {
        Clients::One(n) if (1..=MAX_CLIENTS).contains(&n) => n,
        _ => {
            return Err(format!(
                "--clients: an explored world has one client count in 1..={MAX_CLIENTS}"
            ))
        }
    };
    let cycles = u32::try_from(model.cycles)
        .ok()
        .filter(|c| (1..=3).contains(c))
        .ok_or("--cycles: an explored world has 1..=3 cycles")?;
    let faults = FaultAllowance::parse(&model.faults).map_err(|e| format!("--faults: {e}"))?;
    let durations = match args.duration_points {
        None => DurationPoints::default(),
        Some(n) if (1..=DurationPoints::MAX).contains(&u32::from(n)) => DurationPoints(n.into()),
        Some(_) => {
            return Err(format!(
                "--duration-points: the points of a duration's range tried, 1..={}",
                DurationPoints::MAX
            ))
        }
    };
    if args.timeout == Some(0) {
        return Err("--timeout: must be at least 1 second".into());
    }
    let (recipe, variant) = match &given {
        Some(given) => (
            given.scenario.recipe.name.clone(),
            model
                .variant
                .clone()
                .unwrap_or(given.scenario.raw.variant.clone()),
        ),
        None => (model.recipe.clone(), model.variant().to_string()),
    };
    let world = World {
        recipe,
        variant,
        clients,
        cycles,
        source: match &given {
            Some(given) => WorldSource::Scenario {
                name: given.path.clone(),
                text: given.text.clone(),
            },
            None => WorldSource::Recipe,
        },
        durations,
    };
    let scenario = world.scenario(harness.registry.sim_recipes())?;
    if faults.has_server_faults() && scenario.world_config().servers == 1 {
        return Err(format!(
            "--faults {faults}: an ensemble fault needs an ensemble (a scenario with `ensemble` above 1); this world has one server"
        ));
    }
    let runtime_seeds = match &args.runtime_seeds {
        None => RuntimeSeeds::default(),
        Some(text) => RuntimeSeeds::parse(text).map_err(|e| format!("--runtime-seeds: {e}"))?,
    };
    let bounds = Bounds {
        faults,
        durations,
        max_delays: args.max_delays.map(u32::from),
        max_executions: args.max_executions.map(|n| u64::from(n.get())),
        timeout: args.timeout.map(Duration::from_secs),
        no_memo: false,
        runtime_seeds,
    };
    Ok(Explored {
        world,
        given,
        scenario,
        bounds,
        clients_given: model.clients.is_some(),
        strategy,
    })
}

/// `zkcheck check` on an async recipe.
pub fn run(harness: &Harness, args: &CheckArgs) -> ExitCode {
    let explored = match resolve(harness, args) {
        Ok(explored) => explored,
        Err(code) => return code,
    };
    if let AsyncStrategy::Pct { depth, runs, seed } = explored.strategy {
        let sampling = Sampling {
            strategy: Strategy::Pct { depth },
            runs,
            seed,
            faults: explored.bounds.faults,
            durations: explored.bounds.durations,
            stop_at_first: false,
            timeout: explored.bounds.timeout,
            runtime_seeds: explored.bounds.runtime_seeds,
        };
        return run_pct(harness, args, &explored, &sampling);
    }
    let started = Instant::now();
    let summary = explore(&explored.scenario, &explored.bounds);
    let summary = match summary {
        Ok(summary) => summary,
        Err(error) => {
            eprintln!("zkcheck check: internal error: {error}");
            return ExitCode::from(EXIT_INTERNAL_ERROR);
        }
    };
    print_summary(&explored, &summary, started.elapsed());
    if summary.all_vacuous() {
        return no_verdict(summary.complete(), &summary.vacuity);
    }
    let found: Vec<&Found> = summary.found.iter().collect();
    let written = write_counterexamples(harness, args, &explored, &found);
    let violation = !summary.found.is_empty();
    if !summary.exhaustive && !violation {
        println!("\n{}", super::check_output::NOT_EXHAUSTIVE_NOTE);
    }
    super::check_output::verdict_status(violation, written.is_err(), !summary.exhaustive)
}

/// Every execution was vacuous: no verdict, exit 2 (as `run` and `replay`
/// say of a seed whose workload achieved nothing).
fn no_verdict(executions: u64, vacuity: &Vacuity) -> ExitCode {
    let why = vacuity.first.as_deref().unwrap_or("no progress");
    eprintln!(
        "error: none of the {executions} explored execution(s) could have failed (or nearly): the first: {why}; check the recipe's workload and setup"
    );
    ExitCode::from(super::common::EXIT_BAD_INPUT)
}

/// `check --strategy pct`: draws the runs, prints what they found, writes
/// each violated property's first failing run as a choice file. A sample
/// that finds nothing is not exhaustive (exit 4).
fn run_pct(
    harness: &Harness,
    args: &CheckArgs,
    explored: &Explored,
    sampling: &Sampling,
) -> ExitCode {
    let started = Instant::now();
    let samples = match sample(
        explored.scenario.runner().as_ref(),
        explored.world.clients,
        sampling,
    ) {
        Ok(samples) => samples,
        Err(error) => {
            eprintln!("zkcheck check: internal error: {error}");
            return ExitCode::from(EXIT_INTERNAL_ERROR);
        }
    };
    print_samples(explored, sampling, &samples, started.elapsed());
    if samples.all_vacuous() {
        return no_verdict(samples.runs, &samples.vacuity);
    }
    let found: Vec<&Found> = samples.found.iter().map(|s| &s.found).collect();
    let written = write_counterexamples(harness, args, explored, &found);
    let violation = !found.is_empty();
    if !violation {
        println!("\n{PCT_NOT_EXHAUSTIVE_NOTE}");
    }
    super::check_output::verdict_status(violation, written.is_err(), true)
}

const PCT_NOT_EXHAUSTIVE_NOTE: &str = "not exhaustive: PCT draws a sample of the executions; no violation in it, which is not a pass (exit 4)";

fn print_samples(explored: &Explored, sampling: &Sampling, samples: &Samples, elapsed: Duration) {
    let scenario = &explored.scenario;
    let mut out = std::io::stdout().lock();
    let depth = match sampling.strategy {
        Strategy::Pct { depth } => depth,
        Strategy::Uniform => 0,
    };
    let how = format!("PCT, depth {depth}, seed {}", sampling.seed);
    let _ = writeln!(out, "{}", headline(explored, &how));
    let order = format!("PCT's priorities (depth {depth}); durations drawn uniformly");
    let _ = write!(out, "{}", render(&dimensions(explored, &order, true)));
    let first = match samples.first_failure {
        Some(run) => format!("first failing run: {run}"),
        None => "no failing run".to_string(),
    };
    let _ = writeln!(
        out,
        "runs: {} of {} drawn ({} executions of the world; {} order steps, {} request and {} between-request fault points in the default run); {first}; {:.1} s",
        samples.runs,
        sampling.runs,
        samples.executions,
        samples.steps,
        samples.fault_points,
        samples.strike_points,
        elapsed.as_secs_f64()
    );
    if samples.stop == Some(Stop::Timeout) {
        let _ = writeln!(out, "stopped by --timeout");
    }
    if samples.vacuity.executions > 0 {
        let _ = writeln!(
            out,
            "{} run(s) vacuous (the workload achieved nothing; not passes)",
            samples.vacuity.executions
        );
    }
    for property in &scenario.properties {
        let name = property.to_string();
        let verdict = match samples.found.iter().find(|s| s.found.property == name) {
            Some(sampled) => format!(
                "VIOLATED (first in run {}; {} choice points, {} delay(s))",
                sampled.run, sampled.found.points, sampled.found.delays
            ),
            None => "no violation found (a sample: not exhaustive)".to_string(),
        };
        let _ = writeln!(out, "  {name}: {verdict}");
    }
    let found: Vec<&Found> = samples.found.iter().map(|s| &s.found).collect();
    print_own_invariants(&mut out, scenario, &found);
}

/// The recipe's own invariants a search found broken (they are no
/// scenario property: the application named them, `ctx.violation`).
fn print_own_invariants(out: &mut impl Write, scenario: &Scenario, found: &[&Found]) {
    let checked = |name: &str| scenario.properties.iter().any(|p| p.name() == name);
    for found in found.iter().filter(|f| !checked(&f.property)) {
        let _ = writeln!(
            out,
            "  {}: VIOLATED (the recipe's own invariant; {} choice points, {} delay(s))",
            found.property, found.points, found.delays
        );
    }
}

/// The first line of a summary: what world, and how it was searched.
fn headline(explored: &Explored, how: &str) -> String {
    let scenario = &explored.scenario;
    let world = match &explored.given {
        Some(given) => format!("{}: ", given.path.display()),
        None => String::new(),
    };
    let kind = match scenario.variant().is_async() {
        true => "async",
        false => "sans-IO",
    };
    format!(
        "{world}{} {} ({kind}) with {} client(s), {} cycle(s), faults {}: {how}",
        scenario.recipe.name,
        scenario.raw.variant,
        explored.world.clients,
        explored.world.cycles,
        explored.bounds.faults
    )
}

fn print_summary(explored: &Explored, summary: &Summary, elapsed: Duration) {
    let scenario = &explored.scenario;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", headline(explored, "explored by re-execution"));
    let bound = match explored.bounds.max_delays {
        Some(max) => format!("{} (--max-delays {max})", summary.delay_bound),
        None => summary.delay_bound.to_string(),
    };
    let order = match summary.exhaustive {
        true => {
            format!("every order (the search deepened to {bound} delay(s) and no bound cut it)")
        }
        false => format!(
            "orders with at most {bound} delay(s) (choices other than the first request that came)"
        ),
    };
    let _ = write!(out, "{}", render(&dimensions(explored, &order, false)));
    let _ = writeln!(
        out,
        "executions: {} run, {} of them pruned at a visited state{}; delay bound reached: {bound}; {:.1} s",
        summary.executions,
        summary.pruned,
        estimate_text(summary),
        elapsed.as_secs_f64()
    );
    let seeds = explored.bounds.runtime_seeds;
    if !seeds.is_one() {
        let _ = writeln!(
            out,
            "runtime seeds searched: {} of {} ({seeds})",
            summary.seeds_searched, seeds.count
        );
    }
    if summary.vacuity.executions > 0 {
        let _ = writeln!(
            out,
            "{} of {} complete execution(s) vacuous (the workload achieved nothing; not passes)",
            summary.vacuity.executions,
            summary.complete()
        );
    }
    let how = match (summary.exhaustive, summary.stop) {
        (true, _) if explored.bounds.runtime_seeds.is_one() => "exhaustive: every enumerated and bounded choice above was explored (the fixed ones were not varied)".to_string(),
        (true, _) => "exhaustive: every enumerated and bounded choice above was explored under each runtime seed (the fixed ones were not varied, the sampled ones only sampled)".to_string(),
        (false, Some(Stop::Executions)) => {
            "not exhaustive: stopped by --max-executions".to_string()
        }
        (false, Some(Stop::Timeout)) => "not exhaustive: stopped by --timeout".to_string(),
        (false, None) => "not exhaustive: the delay bound cut the search".to_string(),
    };
    let _ = writeln!(out, "{how}");
    for property in &scenario.properties {
        let name = property.to_string();
        let verdict = match summary.found.iter().find(|f| f.property == name) {
            Some(found) => format!(
                "VIOLATED ({} choice points, {} delay(s))",
                found.points, found.delays
            ),
            None if summary.exhaustive => "holds".to_string(),
            None => "no violation found (not exhaustive)".to_string(),
        };
        let _ = writeln!(out, "  {name}: {verdict}");
    }
    let found: Vec<&Found> = summary.found.iter().collect();
    print_own_invariants(&mut out, scenario, &found);
}

/// Knuth's estimate of the whole tree's executions (no delay bound, no
/// memo), as a clause of the executions line; empty before any execution
/// ran to its end.
fn estimate_text(summary: &Summary) -> String {
    match summary.estimate.total() {
        Some(total) if total < 1e6 => {
            format!(", about {total:.0} in the whole tree (Knuth's estimate)")
        }
        Some(total) => format!(", about {total:.1e} in the whole tree (Knuth's estimate)"),
        None => String::new(),
    }
}

/// Writes each property's counterexample as a choice file and prints how
/// to replay it; Err if a file could not be written.
fn write_counterexamples(
    harness: &Harness,
    args: &CheckArgs,
    explored: &Explored,
    found: &[&Found],
) -> Result<(), ()> {
    let mut failed = false;
    for found in found {
        let file = ChoiceFile {
            runtime_seed: found.runtime_seed,
            ..explored.world.choice_file(
                explored.bounds.faults,
                Some(found.property.clone()),
                found.choices.clone(),
            )
        };
        let seed = match explored.bounds.runtime_seeds.is_one() {
            true => String::new(),
            false => format!(" under runtime seed {}", found.runtime_seed),
        };
        println!(
            "\ncounterexample for {}: choices {}{seed}",
            found.property,
            quote(&choice_string(&found.choices))
        );
        match write_file(&args.out, &file) {
            Ok(path) => {
                let path = quote(&path.display().to_string());
                println!("choices written: {path}");
                println!("replay it: {} replay {path}", harness.program);
            }
            Err(error) => {
                eprintln!("zkcheck check: cannot write the choice file: {error}");
                failed = true;
            }
        }
    }
    if failed {
        Err(())
    } else {
        Ok(())
    }
}

fn write_file(dir: &Path, file: &ChoiceFile) -> Result<PathBuf, super::check_output::WriteError> {
    super::check_output::create_out_dir(dir)?;
    let property = file.property.as_deref().unwrap_or("run");
    let stem = format!("{}-{}-{property}-choices", file.recipe, file.variant);
    let path = super::report::file_in(dir, &stem, "toml");
    std::fs::write(&path, file.to_toml()).map_err(|source| {
        super::check_output::WriteError::File {
            path: path.clone(),
            source,
        }
    })?;
    Ok(path)
}

/// `zkcheck replay FILE` of a choice file: the run it picks, traced.
/// Returns the report, or the exit status of bad input or an internal
/// error.
pub fn replay_report(harness: &Harness, path: &Path, text: &str) -> Result<RunReport, ExitCode> {
    let file = ChoiceFile::parse(path, text).map_err(bad_input)?;
    if file.scenario.is_none() && !is_async(harness, &file.recipe, &file.variant) {
        return Err(bad_input(format!(
            "{}: {} {} is not an async recipe of this binary: a choice file replays an async recipe's exploration",
            path.display(),
            file.recipe,
            file.variant
        )));
    }
    let (tape, report) = match replay(harness.registry.sim_recipes(), &file) {
        Ok(done) => done,
        Err(error) => {
            eprintln!("zkcheck replay: {}: {error}", path.display());
            return Err(ExitCode::from(EXIT_INTERNAL_ERROR));
        }
    };
    if let Some(index) = tape.misfit {
        let message = format!("choice {index} has no such alternative in this world (the file's recipe, variant, clients, cycles, faults, duration points or scenario differ from the check that wrote it)");
        return Err(bad_input(ScenarioError::at_key(
            path, text, "choices", message,
        )));
    }
    Ok(report)
}
