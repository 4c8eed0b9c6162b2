//! Model checker schedules given to `zkcheck replay` or `zkcheck sim`: a
//! file with `[[step]]` entries (written by `zkcheck check`) is replayed
//! step by step on the simulator's stepper and judged by the simulator's
//! oracles (`zk_models::replay`).
//!
//! Exit status as for a scenario: 1 when the simulator reports a
//! violation, 0 when it reports none, 2 on a bad file (an empty schedule
//! included). When the simulator DISAGREES with the model (the schedule's
//! violation does not show, or its example shows one), zkcheck's two
//! halves contradict each other: that is zkcheck's own inconsistency,
//! exit 3 (`EXIT_INTERNAL_ERROR`), unless a violation showed (exit 1
//! wins, as everywhere). The output says
//! whether the violation the model found is the one the simulator shows;
//! for a lasso (`cycle_start`), also whether its cycle, run twice, came
//! back to where it started with the waiting calls still pending.
//!
//! A schedule with an `[initial]` table (nodes and sequence counters the
//! check started from) replays from that state, and the output says so.
//!
//! Replaying exists only with `--cfg madsim` (with the commands that do
//! it); recognizing a schedule is `zk_models::schedule::is_schedule_text`.

#[cfg(madsim)]
use super::common::{EXIT_BAD_INPUT, EXIT_INTERNAL_ERROR, EXIT_VIOLATION};
#[cfg(madsim)]
use super::Harness;
#[cfg(madsim)]
use std::path::Path;
#[cfg(madsim)]
use std::process::ExitCode;
#[cfg(madsim)]
use zk_models::replay::{LassoReplay, ReplayReport};
#[cfg(madsim)]
use zk_models::schedule::{clip, Schedule, ScheduleError};
#[cfg(madsim)]
use zk_models::setup::InitialState;

/// Checks and replays the schedule `text` read from `path`; prints the
/// stepper's trace if `trace`. Exit 1 when the simulator reports a
/// violation, else 3 when it disagrees with the model (its expected
/// violation did not show), 0 when it agrees; 2 (`error: FILE:LINE: key
/// `KEY`: MESSAGE` on stderr) when the schedule is bad or a step cannot be
/// applied.
#[cfg(madsim)]
pub fn run_text(harness: &Harness, path: &Path, text: &str, trace: bool) -> ExitCode {
    match replay(harness, path, text) {
        Ok((report, initial)) => {
            print_report(path, &report, &initial, trace);
            if !report.violations.is_empty() {
                ExitCode::from(EXIT_VIOLATION)
            } else if disagrees(&report) {
                eprintln!(
                    "error: the simulator disagrees with the model checker on {}: an inconsistency inside zkcheck (exit {EXIT_INTERNAL_ERROR}); please report it with the schedule",
                    path.display()
                );
                ExitCode::from(EXIT_INTERNAL_ERROR)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// The simulator contradicts the schedule (a property without a simulator
/// oracle is not judged, so never disagrees).
#[cfg(madsim)]
fn disagrees(report: &ReplayReport) -> bool {
    let unjudged = report.expect == "violation" && report.oracle.is_none();
    !unjudged && !report.agrees()
}

/// The replay of the schedule `text`, with the initial state it records.
#[cfg(madsim)]
fn replay(
    harness: &Harness,
    path: &Path,
    text: &str,
) -> Result<(ReplayReport, InitialState), ScheduleError> {
    let schedule = Schedule::parse(path, text, &harness.registry)?;
    // `parse` validated the `[initial]` table.
    let initial = schedule.initial_state().unwrap_or_default();
    let model = harness
        .registry
        .model(&schedule.recipe, &schedule.variant)
        .map_err(|e| ScheduleError::at_key(path, text, "recipe", e.to_string()))?;
    let report = model
        .replay(&schedule)
        .map_err(|e| zk_models::schedule_check::replay_error(path, text, &e))?;
    Ok((report, initial))
}

/// What replaying a lasso's cycle showed, in one line.
#[cfg(madsim)]
fn lasso_line(lasso: &LassoReplay) -> String {
    let returned = if lasso.returned {
        "back in the state it started in after every round"
    } else {
        // A lasso found with `--ranks` comes back up to its zxids and
        // sequence numbers, which the stepper's comparison counts.
        "not back in the same concrete state (with --ranks: expected, zxids and sequence numbers grow)"
    };
    let waiting: Vec<String> = lasso.waiting.iter().map(|c| format!("c{c}")).collect();
    let pending = match (waiting.is_empty(), lasso.pending_stayed) {
        (true, _) => "no call was pending".to_string(),
        (false, true) => format!("the calls of {} stayed pending", waiting.join(", ")),
        (false, false) => format!("a call was ANSWERED (pending: {})", waiting.join(", ")),
    };
    format!(
        "lasso: {} step(s) to the cycle, then its {} step(s) run {} times: {returned}; {pending}",
        lasso.prefix, lasso.cycle, lasso.rounds
    )
}

#[cfg(madsim)]
fn print_report(path: &Path, report: &ReplayReport, initial: &InitialState, trace: bool) {
    if trace {
        print!("{}", report.trace);
    }
    println!(
        "replayed {} step(s) of {} on the simulator's stepper",
        report.steps,
        path.display()
    );
    if let Some(line) = initial.summary() {
        println!("started from the schedule's initial state: {line}");
    }
    if let Some(lasso) = &report.lasso {
        println!("{}", lasso_line(lasso));
    }
    for violation in &report.violations {
        print!("VIOLATION of {}:\n  {violation}", violation.property_name());
    }
    let verdict = match (report.expected_state, report.expect.as_str(), report.oracle) {
        (Some(state), _, _) if report.reached == state => format!(
            "agrees with the model: the steps lead to shared abstract state {state:016x}"
        ),
        (Some(state), _, _) => format!(
            "DISAGREES with the model: the steps lead to shared abstract state {:016x}, not {state:016x}",
            report.reached
        ),
        (None, "violation", None) => format!(
            "the model's property {} has no simulator oracle: not judged here",
            clip(&report.property)
        ),
        (None, "violation", Some(oracle)) if report.shows_expected_violation() => {
            format!(
                "agrees with the model: {} ({oracle}) violated",
                clip(&report.property)
            )
        }
        (None, "violation", Some(oracle)) => format!(
            "DISAGREES with the model: {} ({oracle}) not violated in the simulator",
            clip(&report.property)
        ),
        _ if report.violations.is_empty() => {
            format!(
                "agrees with the model: example of {}, no violation",
                clip(&report.property)
            )
        }
        _ => format!(
            "DISAGREES with the model: example of {} shows a violation",
            clip(&report.property)
        ),
    };
    println!("{verdict}");
}
