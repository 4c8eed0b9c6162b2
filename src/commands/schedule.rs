//! Model checker schedules given to `zkcheck replay` or `zkcheck sim`: a
//! file with `[[step]]` entries (written by `zkcheck check`) is replayed
//! step by step on the simulator's stepper and judged by the simulator's
//! oracles (`zk_models::replay`).
//!
//! Exit status as for a scenario: 1 when the simulator reports a
//! violation, 0 when it reports none, 2 on a bad file. The output says
//! whether the violation the model found is the one the simulator shows.

use super::sim::{EXIT_BAD_INPUT, EXIT_VIOLATION};
use std::path::Path;
use std::process::ExitCode;
use zk_models::catalog;
use zk_models::replay::ReplayReport;
use zk_models::schedule::Schedule;

/// The file holds a schedule (top-level `step` array) rather than a scenario.
pub fn is_schedule(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
        .is_some_and(|table| table.contains_key("step"))
}

/// Replays the schedule at `path`; prints the stepper's trace if `trace`.
pub fn run(path: &Path, trace: bool) -> ExitCode {
    match replay(path) {
        Ok(report) => {
            print_report(path, &report, trace);
            if report.violations.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(EXIT_VIOLATION)
            }
        }
        Err(message) => {
            eprintln!("error: {}: {message}", path.display());
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

fn replay(path: &Path) -> Result<ReplayReport, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let schedule = Schedule::from_toml(&text).map_err(|e| e.to_string())?;
    let entry = catalog::find(&schedule.recipe, &schedule.variant).map_err(|e| e.to_string())?;
    entry.replay(&schedule).map_err(|e| e.to_string())
}

fn print_report(path: &Path, report: &ReplayReport, trace: bool) {
    if trace {
        print!("{}", report.trace);
    }
    println!(
        "replayed {} step(s) of {} on the simulator's stepper",
        report.steps,
        path.display()
    );
    for violation in &report.violations {
        print!("VIOLATION of {}:\n  {violation}", violation.property);
    }
    let verdict = match (report.expect.as_str(), report.oracle) {
        ("violation", None) => format!(
            "the model's property {} has no simulator oracle: not judged here",
            report.property
        ),
        ("violation", Some(oracle)) if report.shows_expected_violation() => {
            format!(
                "agrees with the model: {} ({oracle}) violated",
                report.property
            )
        }
        ("violation", Some(oracle)) => format!(
            "DISAGREES with the model: {} ({oracle}) not violated in the simulator",
            report.property
        ),
        _ if report.violations.is_empty() => {
            format!(
                "agrees with the model: example of {}, no violation",
                report.property
            )
        }
        _ => format!(
            "DISAGREES with the model: example of {} shows a violation",
            report.property
        ),
    };
    println!("{verdict}");
}
