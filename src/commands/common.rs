//! What the subcommands share: the exit statuses and how a verdict and its
//! outputs make one, reporting bad input (exit 2), loading a scenario file
//! (or recognizing a model checker schedule), quoting a word for a shell,
//! and writing JSON. Compiled in every build: with `--cfg madsim` for the
//! simulator's commands, and without it for `live`, `check`, `explore`,
//! `recipes` and `report`.

use serde::Serialize;
use std::path::Path;
use std::process::ExitCode;
use zk_sim::scenario::Scenario;

use super::Harness;

/// Exit statuses, in order of precedence when several apply: a violation
/// (1) wins over an internal error of zkcheck (3), which wins over bad input
/// or an unwritable output (2), which wins over a bounded search that found
/// nothing (4); 0 only when every property holds and the verdict is complete.
pub const EXIT_VIOLATION: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;
/// zkcheck itself failed (a panic inside a run): never the recipe's fault.
pub const EXIT_INTERNAL_ERROR: u8 = 3;
/// A bounded search (`check` stopped by `--timeout`, `--depth`, a memory
/// budget, or a `--clients` range whose larger counts did not finish) found
/// no violation: not an exhaustive pass.
pub const EXIT_NOT_EXHAUSTIVE: u8 = 4;

/// Prints a bad-input error for exit 2 (control characters the message
/// echoes from the input escaped, see [`zk_sim::echo`]).
pub fn bad_input(message: impl std::fmt::Display) -> ExitCode {
    let message = zk_sim::echo::escape_controls_in_lines(&message.to_string());
    eprintln!("error: {message}");
    ExitCode::from(EXIT_BAD_INPUT)
}

/// Loads a scenario (a regular file of bounded size), with another
/// variant if asked; a schedule file is bad input for `command`. On error
/// prints it (file, line, key) for exit 2.
pub fn load_scenario(
    harness: &Harness,
    path: &Path,
    variant: Option<&str>,
    command: &str,
) -> Result<Scenario, ExitCode> {
    load_scenario_with_text(harness, path, variant, command).map(|(scenario, _)| scenario)
}

/// [`load_scenario`], with the file's text as it was read (what a tape
/// file written of a run carries).
pub fn load_scenario_with_text(
    harness: &Harness,
    path: &Path,
    variant: Option<&str>,
    command: &str,
) -> Result<(Scenario, String), ExitCode> {
    let text = read_input(path)?;
    if zk_models::schedule::is_schedule_text(&text) {
        return Err(bad_input(format!(
            "{}: a model checker schedule, not a scenario: `{command}` runs scenarios; replay a schedule with `{} replay {}`",
            path.display(),
            harness.program,
            quote(&path.display().to_string())
        )));
    }
    let scenario = parse_scenario(harness, path, &text, variant)?;
    Ok((scenario, text))
}

/// Reads an input file once (a regular file of bounded size); on error
/// prints it for exit 2.
pub fn read_input(path: &Path) -> Result<String, ExitCode> {
    zk_sim::input::read_input(path).map_err(bad_input)
}

/// Checks `text`, read from `path`, as a scenario, with another variant if
/// asked; on error prints it (file, line, key) for exit 2.
pub fn parse_scenario(
    harness: &Harness,
    path: &Path,
    text: &str,
    variant: Option<&str>,
) -> Result<Scenario, ExitCode> {
    let scenario =
        Scenario::parse(path, text, harness.registry.sim_recipes()).map_err(bad_input)?;
    match variant {
        Some(variant) => scenario
            .with_variant(variant)
            .map_err(|e| bad_input(format!("--variant: {e}"))),
        None => Ok(scenario),
    }
}

/// Says that a seed's verdict could not have failed, or nearly: no or too
/// little progress (exit 2 follows).
pub fn print_no_progress(seed: u64, why: &str) {
    eprintln!(
        "error: seed {seed} could not have failed (or nearly): {why}; check the scenario's [config], [workload] and fault rates"
    );
}

/// A word as a shell reads it back: quoted when it holds anything but
/// plain path characters.
pub fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Writes a value as pretty JSON; says why on stderr if it cannot.
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<(), ()> {
    let text = serde_json::to_string_pretty(value).expect("reports serialize");
    std::fs::write(path, text + "\n").map_err(|error| {
        eprintln!("error: cannot write {}: {error}", path.display());
    })
}

/// The exit status of a run's verdict and its output: a found violation
/// (1) wins over an output error (2), which wins over a pass (0).
pub fn exit_status(violation: bool, output_failed: bool) -> ExitCode {
    match (violation, output_failed) {
        (true, _) => ExitCode::from(EXIT_VIOLATION),
        (false, true) => ExitCode::from(EXIT_BAD_INPUT),
        (false, false) => ExitCode::SUCCESS,
    }
}

/// The exit status of a verdict that may hold internal errors: a found
/// violation (1) wins over an internal error of zkcheck (3), which wins
/// over an output error or bad input (2), which wins over a pass (0).
/// (Only the simulator's commands catch a run's panic.)
#[cfg(madsim)]
pub fn exit_status_with_internal(
    violation: bool,
    internal_error: bool,
    output_failed: bool,
) -> ExitCode {
    if internal_error && !violation {
        return ExitCode::from(EXIT_INTERNAL_ERROR);
    }
    exit_status(violation, output_failed)
}
