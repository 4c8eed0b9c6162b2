//! `zkcheck check` on an async recipe (simulating build only): depth-first
//! search by re-execution over the simulated world's choices (which
//! client's request the server applies next, which fault strikes a
//! request), see `zk_sim::explore`. Prints the executions run and pruned
//! and an estimate of the whole tree's (Knuth's),
//! whether the search was exhaustive under its bounds and every property's
//! verdict; writes each property's shortest counterexample found as a
//! choice file that `zkcheck replay` runs, and prints the command.
//!
//! The explored world is `zk_sim::explore::run::World`'s: a run is a
//! function of its choice string.
//!
//! Exit status as `check`: 1 on a violation, 2 on bad input, 3 when the
//! world is not a function of its choices, 4 when a bound cut the search
//! and it found nothing, 0 when an exhaustive search found every property
//! to hold.

use super::check::CheckArgs;
use super::common::{bad_input, quote, EXIT_INTERNAL_ERROR};
use super::cutoff::Clients;
use super::Harness;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use zk_sim::explore::file::{choice_string, ChoiceFile};
use zk_sim::explore::run::{explore, replay, World};
use zk_sim::explore::search::{Bounds, Stop, Summary};
use zk_sim::explore::FaultAllowance;
use zk_sim::scenario::{Scenario, ScenarioError};
use zk_sim::world::RunReport;

/// Most clients an exploration takes.
const MAX_CLIENTS: usize = 4;

/// True if `recipe`/`variant` names an async recipe of the registry.
pub fn is_async(harness: &Harness, recipe: &str, variant: &str) -> bool {
    matches!(
        harness.registry.model(recipe, variant),
        Err(zk_models::RegistryError::AsyncRecipe { .. })
    )
}

/// What `check` on an async recipe runs with.
struct Explored {
    scenario: Scenario,
    clients: usize,
    cycles: u32,
    bounds: Bounds,
}

/// The flags, checked: the explored world and the search's bounds.
fn resolve(harness: &Harness, args: &CheckArgs) -> Result<Explored, String> {
    let model = &args.model;
    let refused = [
        ("--symmetry", model.symmetry),
        ("--ranks", model.ranks),
        ("--all-orders", model.all_orders),
        ("--no-reduction", model.no_reduction),
        ("--servers", model.servers != 1),
        ("--lag", model.lag.is_some()),
        ("--depth", args.depth.is_some()),
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
        return Err(format!(
            "{flag}: not available on an async recipe, which `check` explores by re-execution (docs/async-recipe.md)"
        ));
    }
    if args.strategy != super::check::StrategyArg::Bfs
        || args.liveness != super::lasso::LivenessArg::Terminal
    {
        return Err("--strategy/--liveness: an async recipe is explored depth first by re-execution; these flags do not apply".into());
    }
    let clients = match model.clients {
        Clients::One(n) if (1..=MAX_CLIENTS).contains(&n) => n,
        _ => {
            return Err(format!(
                "--clients: an async recipe is explored at one client count in 1..={MAX_CLIENTS}"
            ))
        }
    };
    let cycles = u32::try_from(model.cycles)
        .ok()
        .filter(|c| (1..=3).contains(c))
        .ok_or("--cycles: an async recipe is explored with 1..=3 cycles")?;
    let faults = FaultAllowance::parse(&model.faults).map_err(|e| format!("--faults: {e}"))?;
    if args.timeout == Some(0) {
        return Err("--timeout: must be at least 1 second".into());
    }
    let world = World {
        recipe: model.recipe.clone(),
        variant: model.variant.clone(),
        clients,
        cycles,
    };
    let scenario = world.scenario(harness.registry.sim_recipes())?;
    let bounds = Bounds {
        faults,
        max_delays: args.max_delays.map(u32::from),
        max_executions: args.max_executions.map(|n| u64::from(n.get())),
        timeout: args.timeout.map(Duration::from_secs),
        no_memo: false,
    };
    Ok(Explored {
        scenario,
        clients,
        cycles,
        bounds,
    })
}

/// `zkcheck check` on an async recipe.
pub fn run(harness: &Harness, args: &CheckArgs) -> ExitCode {
    let explored = match resolve(harness, args) {
        Ok(explored) => explored,
        Err(message) => return bad_input(message),
    };
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
    let written = write_counterexamples(harness, args, &explored, &summary);
    let violation = !summary.found.is_empty();
    if !summary.exhaustive && !violation {
        println!("\n{}", super::check::NOT_EXHAUSTIVE_NOTE);
    }
    super::check::verdict_status(violation, written.is_err(), !summary.exhaustive)
}

fn print_summary(explored: &Explored, summary: &Summary, elapsed: Duration) {
    let scenario = &explored.scenario;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{} {} (async) with {} client(s), {} cycle(s), faults {}: explored by re-execution",
        scenario.recipe.name,
        scenario.raw.variant,
        explored.clients,
        explored.cycles,
        explored.bounds.faults
    );
    let bound = match explored.bounds.max_delays {
        Some(max) => format!("{} (--max-delays {max})", summary.delay_bound),
        None => summary.delay_bound.to_string(),
    };
    let _ = writeln!(
        out,
        "executions: {} run, {} of them pruned at a visited state{}; delay bound reached: {bound}; {:.1} s",
        summary.executions,
        summary.pruned,
        estimate_text(summary),
        elapsed.as_secs_f64()
    );
    let how = match (summary.exhaustive, summary.stop) {
        (true, _) => "exhaustive: every choice within the fault budget was explored".to_string(),
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
    summary: &Summary,
) -> Result<(), ()> {
    let mut failed = false;
    for found in &summary.found {
        let file = ChoiceFile {
            recipe: args.model.recipe.clone(),
            variant: args.model.variant.clone(),
            clients: explored.clients,
            cycles: explored.cycles,
            faults: explored.bounds.faults,
            property: Some(found.property.clone()),
            choices: found.choices.clone(),
        };
        println!(
            "\ncounterexample for {}: choices {}",
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

fn write_file(dir: &Path, file: &ChoiceFile) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let property = file.property.as_deref().unwrap_or("run");
    let stem = format!("{}-{}-{property}-choices", file.recipe, file.variant);
    let path = super::report::file_in(dir, &stem, "toml");
    std::fs::write(&path, file.to_toml())?;
    Ok(path)
}

/// `zkcheck replay FILE` of a choice file: the run it picks, traced.
/// Returns the report, or the exit status of bad input or an internal
/// error.
pub fn replay_report(harness: &Harness, path: &Path, text: &str) -> Result<RunReport, ExitCode> {
    let file = ChoiceFile::parse(path, text).map_err(bad_input)?;
    if !is_async(harness, &file.recipe, &file.variant) {
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
        let message = format!("choice {index} has no such alternative in this world (the file's recipe, variant, clients, cycles or faults differ from the check that wrote it)");
        return Err(bad_input(ScenarioError::at_key(
            path, text, "choices", message,
        )));
    }
    Ok(report)
}
