//! `zkcheck check ... --liveness cycles`: after the ordinary check, the
//! lasso search (`zk_models::lasso`) looks for a livelock, a reachable
//! cycle in which a call stays pending although every continuously enabled
//! step is taken (weak fairness). A lasso is printed as numbered steps (to
//! the cycle, then around it), written as a schedule with `cycle_start`,
//! and its replay command printed, like a counterexample.
//!
//! What it adds to the exit status (see `check`): a lasso is a violation
//! (1); a search stopped by any limit (its state limit, the timeout, a
//! memory budget) without a lasso is not exhaustive (4), never a pass.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;
use zk_models::lasso::{render_lasso, LassoOptions, LassoReport, LassoVerdict};
use zk_models::memory::MemoryBudget;
use zk_models::setup::InitialState;
use zk_models::{ModelVariant, Setup};

/// How liveness is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LivenessArg {
    /// `eventually` on terminal paths only (stateright's judgement).
    Terminal,
    /// Also search for livelocks: fair cycles keeping a call pending (lassos).
    Cycles,
}

/// What the lasso search contributes to `check`'s exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LassoOutcome {
    pub livelock: bool,
    /// No lasso, but the search was cut by one of its limits, whatever it
    /// was: not exhaustive.
    pub not_exhaustive: bool,
    /// The schedule could not be written.
    pub output_failed: bool,
}

/// The search's bounds from `check`'s flags.
pub fn options(
    max_states: usize,
    timeout: Option<Duration>,
    progress: Option<Duration>,
    memory_budget: Option<MemoryBudget>,
) -> LassoOptions {
    LassoOptions {
        max_states,
        timeout,
        progress_every: progress,
        memory_budget,
    }
}

/// Runs the search on `model`, prints its summary and any lasso (with its
/// schedule written to `out` and the replay command).
pub fn run(
    program: &str,
    model: &ModelVariant,
    setup: &Setup,
    options: &LassoOptions,
    out: &Path,
) -> LassoOutcome {
    let report = model.lasso(setup, options);
    let mut stdout = std::io::stdout().lock();
    // Output errors (a closed pipe) do not change the verdict.
    let _ = write!(stdout, "\n{}", report.summary());
    let mut outcome = LassoOutcome {
        livelock: report.verdict() == LassoVerdict::Livelock,
        not_exhaustive: matches!(report.verdict(), LassoVerdict::Inconclusive(_)),
        output_failed: false,
    };
    let Some(lasso) = &report.lasso else {
        return outcome;
    };
    let _ = writeln!(
        stdout,
        "\nlivelock (lasso): {} steps to the cycle, {} steps around it",
        lasso.prefix.len(),
        lasso.cycle.len()
    );
    let _ = write!(stdout, "{}", render_lasso(lasso));
    match write_schedule(out, &report, &setup.initial) {
        Ok(path) => {
            let path = super::common::quote(&path.display().to_string());
            let _ = writeln!(stdout, "schedule written: {path}");
            let _ = writeln!(
                stdout,
                "replay it on the simulator: {program} replay {path}"
            );
        }
        Err(error) => {
            eprintln!("zkcheck check: cannot write the schedule: {error}");
            outcome.output_failed = true;
        }
    }
    outcome
}

/// Writes the lasso's schedule, with the state the search started from.
fn write_schedule(
    dir: &Path,
    report: &LassoReport,
    initial: &InitialState,
) -> Result<PathBuf, super::check_output::WriteError> {
    let schedule = report.schedule().expect("a lasso has a schedule");
    let schedule = schedule.with_initial_state(initial);
    super::check_output::write_schedule_file(dir, &schedule, "")
}
