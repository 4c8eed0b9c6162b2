//! `zkcheck check RECIPE --variant V --clients N --faults KIND=BUDGET,...`:
//! model-checks a recipe with stateright (BFS by default, so every
//! counterexample is a shortest one), prints the counts, the speed and a
//! verdict per property, each counterexample as numbered steps, and writes
//! each as a schedule file (see `zk_models::schedule`).
//!
//! With `--liveness cycles` a lasso search follows (`super::lasso`): a
//! livelock is reported as a lasso, like a counterexample.
//!
//! `--node`, `--container` and `--sequence-start` give the server state
//! the clients start from, beyond the recipe's own setup
//! (`zk_models::setup::InitialState`): nodes are created in path order
//! (parents first; a parent is never created implicitly, so it must be
//! the recipe's or given too), then the counters set. The schedules the
//! check writes record that state, and their replays start from it.
//!
//! Exit status (precedence 1 > 3 > 2 > 4 > 0, as in the README's table):
//! 1 on a violation (or a lasso); 3 when zkcheck itself failed (an internal
//! error, never the recipe's); 2 on bad input, an unwritable output or an
//! exhaustive search that could not have failed (a `sometimes` property,
//! such as a lock ever acquired, without an example: the clients never got
//! that far, e.g. from a sequence counter at its end); 4 when the search was
//! bounded and found nothing: stopped by `--depth`, `--timeout`, a memory
//! budget, `--strategy simulation`, or a lasso search stopped by its state
//! limit, its timeout or its memory budget (not exhaustive: no pass); 0 only
//! when an exhaustive search found every property to hold.

use super::check_args::{CheckArgs, Clients};
use super::check_output::{
    verdict_status, violated_schedule, write_schedule_file, WriteError, NOT_EXHAUSTIVE_NOTE,
};
use super::Harness;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use zk_models::run::{render_trace, CheckReport, Verdict};
use zk_models::setup::InitialState;
use zk_models::ModelVariant;

pub fn run(harness: &Harness, args: CheckArgs) -> ExitCode {
    #[cfg(madsim)]
    if super::check_async::is_scenario_file(&args.model.recipe)
        || super::check_async::is_async(harness, &args.model.recipe, args.model.variant())
    {
        return super::check_async::run(harness, &args);
    }
    #[cfg(not(madsim))]
    if args.model.recipe.ends_with(".toml") {
        return super::common::bad_input(format!(
            "{}: `check` explores a scenario file's world in the simulating build (cargo's --cfg madsim, .cargo/config.toml)",
            args.model.recipe
        ));
    }
    let async_only = [
        ("--max-delays", args.max_delays.is_some()),
        ("--max-executions", args.max_executions.is_some()),
        ("--runs", args.runs.is_some()),
        ("--duration-points", args.duration_points.is_some()),
        ("--runtime-seeds", args.runtime_seeds.is_some()),
    ];
    if let Some((flag, _)) = async_only.iter().find(|(_, given)| *given) {
        return super::common::bad_input(format!(
            "{flag}: bounds the exploration of an async recipe (in the simulating build); {} {} is explored as states",
            args.model.recipe,
            args.model.variant()
        ));
    }
    if let Clients::Range { first, last } = args.model.clients() {
        return super::cutoff::run(harness, args, first, last);
    }
    let resolved = args
        .resolve(harness)
        .and_then(|(model, setup)| Ok((model, setup, args.options()?, args.lasso_options()?)));
    let (model, setup, options, lasso_options) = match resolved {
        Ok(resolved) => resolved,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    if let Err(code) = super::outputs::probe(None, args.report.as_deref()) {
        return code;
    }
    let report = model.check(&setup, &options);
    let mut stdout = std::io::stdout().lock();
    // Output errors (a closed pipe) do not change the verdict.
    let _ = write!(stdout, "{}", report.summary());
    if let Some(line) = setup.initial.summary() {
        let _ = writeln!(stdout, "initial state: {line}");
    }
    let mut written = Vec::new();
    let mut schedule_failed = false;
    for property in &report.properties {
        let show = property.verdict == Verdict::Violated
            || (args.examples && property.verdict == Verdict::Found);
        let Some(trace) = property.trace.as_ref().filter(|_| show) else {
            continue;
        };
        let kind = if property.verdict == Verdict::Violated {
            "counterexample"
        } else {
            "example"
        };
        let _ = writeln!(
            stdout,
            "\n{kind} for {} ({} steps):",
            property.name,
            trace.len()
        );
        let _ = write!(stdout, "{}", render_trace(trace));
        if property.verdict == Verdict::Violated {
            match write_schedule(&args.out, &report, property.name, &setup.initial) {
                Ok(path) => written.push((property.name, path)),
                Err(error) => {
                    eprintln!("zkcheck check: cannot write the schedule: {error}");
                    schedule_failed = true;
                }
            }
        }
    }
    for (_, path) in &written {
        let path = super::common::quote(&path.display().to_string());
        let _ = writeln!(stdout, "schedule written: {path}");
        let _ = writeln!(
            stdout,
            "replay it on the simulator: {} replay {path}",
            harness.program
        );
    }
    let output_failed = match &args.report {
        Some(dir) => {
            let run = CheckRun {
                model: &model,
                report: &report,
                initial: &setup.initial,
            };
            write_report(harness, &args, &run, &written, dir).is_err()
        }
        None => false,
    };
    drop(stdout);
    let lasso = lasso_options
        .map(|options| super::lasso::run(&harness.program, &model, &setup, &options, &args.out));
    let livelock = lasso.is_some_and(|l| l.livelock);
    let lasso_error = lasso.is_some_and(|l| l.output_failed);
    let bounded = !report.exhaustive || lasso.is_some_and(|l| l.not_exhaustive);
    let violation = !report.violations().is_empty() || livelock;
    if bounded && !violation {
        println!(
            "
{NOT_EXHAUSTIVE_NOTE}"
        );
    }
    // A missing example is no violation of the recipe: the search never
    // reached what the properties judge, so it could not have failed.
    let vacuous = report.vacuous();
    if let (Some(why), false) = (&vacuous, violation) {
        eprintln!("error: {why}");
    }
    verdict_status(
        violation,
        output_failed || schedule_failed || lasso_error || vacuous.is_some(),
        bounded,
    )
}

/// A finished check: the model, its report and the state it started from.
struct CheckRun<'a> {
    model: &'a ModelVariant,
    report: &'a CheckReport,
    initial: &'a InitialState,
}

/// `--report DIR`: the verdicts and each counterexample as a run.
fn write_report(
    harness: &Harness,
    args: &CheckArgs,
    run: &CheckRun,
    written: &[(&str, PathBuf)],
    dir: &Path,
) -> Result<(), ()> {
    let (model, report) = (run.model, run.report);
    use super::check_report::{check_record, counterexample_run};
    let strategy = format!("{:?}", args.strategy).to_lowercase();
    let mut document = super::report::document(
        zk_reports::schema::ReportKind::Check,
        format!("{} with {} client(s)", report.model, report.clients),
        super::report::this_command(),
    );
    let mut check = check_record(report, &args.model.faults, &strategy);
    for (property, path) in written {
        let file = path.display().to_string();
        let replay = format!("{} replay {}", harness.program, super::common::quote(&file));
        if let Some(verdict) = check.properties.iter_mut().find(|p| p.name == *property) {
            verdict.schedule = Some(file.clone());
        }
        let found = counterexample_run(model, report, run.initial, property, &file, replay);
        if let Some(run) = found {
            document.runs.push(run);
        }
    }
    document.check = Some(check);
    let name = report.model.replace('/', "-");
    super::report::write_dir(dir, &name, &document)
}

/// Writes the schedule of `property`'s counterexample, which starts from
/// `initial`.
fn write_schedule(
    dir: &Path,
    report: &CheckReport,
    property: &str,
    initial: &InitialState,
) -> Result<PathBuf, WriteError> {
    let schedule = violated_schedule(report, property).with_initial_state(initial);
    write_schedule_file(dir, &schedule, "")
}
