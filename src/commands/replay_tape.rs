//! Tape files on the command line: `zkcheck replay SCENARIO --seed N
//! --write-tape FILE` writes a seed's run as every word its streams drew
//! ([`zk_sim::world::tape_file`]); `zkcheck replay FILE` runs a tape file
//! again, with the full trace, and says how the tape fitted the run (every
//! word used, or which streams left words over or drew past their words:
//! what a changed tape does).

use super::common::{bad_input, quote, EXIT_INTERNAL_ERROR};
use super::run_output::{default_filter, emit_trace, init_logging, print_verdict};
use super::sim::QuietStdout;
use super::Harness;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use zk_sim::scenario::Scenario;
use zk_sim::world::draws::{self, DrawRequest, DrawTape};
use zk_sim::world::tape_file::TapeFile;
use zk_sim::world::RunReport;

/// Writes the run just made of `scenario` (its source `text`) as a tape
/// file at `path`; the run must have recorded its draws.
pub fn write(
    program: &str,
    path: &Path,
    scenario: &Scenario,
    text: &str,
    report: &RunReport,
) -> Result<(), ExitCode> {
    let Some(tape) = draws::collect() else {
        eprintln!(
            "zkcheck replay: internal error: the run recorded no draws for {}",
            path.display()
        );
        return Err(ExitCode::from(EXIT_INTERNAL_ERROR));
    };
    let file = TapeFile {
        variant: scenario.raw.variant.clone(),
        all_violations: scenario.all_violations,
        property: report
            .violations
            .first()
            .map(|violation| violation.property_name().to_string()),
        scenario: text.to_string(),
        tape,
    };
    std::fs::write(path, file.to_toml())
        .map_err(|e| bad_input(format!("--write-tape: {}: {e}", path.display())))?;
    eprintln!(
        "tape: {} ({} words); run it again: {} replay {}",
        path.display(),
        file.tape.words(),
        program,
        quote(&path.display().to_string())
    );
    Ok(())
}

/// Runs the tape file `path` (its `text`) again (`replay` refused the
/// flags that pick another run).
pub fn run(harness: &Harness, path: &Path, text: &str) -> ExitCode {
    let (file, mut scenario) = match load(harness, path, text) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    scenario.all_violations = file.all_violations;
    init_logging(default_filter());
    draws::install(DrawRequest {
        script: Some(file.tape.clone()),
        record: true,
        stream_seed: None,
        coverage: false,
    });
    let seed = file.tape.seed;
    let report = match super::internal_error::catch(|| scenario.runner().run(seed, true)) {
        Ok(report) => report,
        Err(panic) => {
            let rerun = format!(
                "{} replay {}",
                harness.program,
                quote(&path.display().to_string())
            );
            let described = super::internal_error::describe(seed, &panic, &rerun);
            let _ = writeln!(QuietStdout, "{described}");
            return ExitCode::from(EXIT_INTERNAL_ERROR);
        }
    };
    emit_trace(&report);
    let drawn = draws::collect().unwrap_or_default();
    let _ = writeln!(QuietStdout, "tape: {}", fit(&file.tape, &drawn));
    print_verdict(
        &report,
        "the tape's run holds every property",
        &format!(" (tape, seed {seed})"),
        &format!(
            "{} replay {}",
            harness.program,
            quote(&path.display().to_string())
        ),
    )
}

/// The tape file and the scenario it ran; errors are exit 2.
fn load(harness: &Harness, path: &Path, text: &str) -> Result<(TapeFile, Scenario), ExitCode> {
    let file = TapeFile::parse(path, text).map_err(bad_input)?;
    let scenario = Scenario::parse(path, &file.scenario, harness.registry.sim_recipes())
        .map_err(|e| bad_input(format!("{e} (in the tape's `scenario`)")))?;
    let scenario = scenario
        .with_variant(&file.variant)
        .map_err(|e| bad_input(format!("{}: variant: {e}", path.display())))?;
    let clients = scenario.world_config().clients;
    let extra = file.tape.streams.keys().find(|name| {
        name.strip_prefix("workload_")
            .and_then(|index| index.parse::<usize>().ok())
            .is_some_and(|index| index >= clients)
    });
    if let Some(name) = extra {
        return Err(bad_input(zk_sim::scenario::ScenarioError::at_key(
            path,
            text,
            &format!("draws.{name}"),
            format!("the scenario has {clients} clients: no such client"),
        )));
    }
    Ok((file, scenario))
}

/// How the tape fitted the run: every word used, or which streams left
/// words over or drew past their words (from the seed).
fn fit(tape: &DrawTape, drawn: &DrawTape) -> String {
    let empty = Vec::new();
    let mut left_over = BTreeMap::new();
    let mut past = BTreeMap::new();
    let names = tape.streams.keys().chain(drawn.streams.keys());
    for name in names.collect::<std::collections::BTreeSet<_>>() {
        let given = tape.streams.get(name).unwrap_or(&empty).len();
        let used = drawn.streams.get(name).unwrap_or(&empty).len();
        if used < given {
            left_over.insert(name.clone(), given - used);
        } else if used > given {
            past.insert(name.clone(), used - given);
        }
    }
    if left_over.is_empty() && past.is_empty() {
        return format!(
            "every one of its {} words drawn, none past them",
            tape.words()
        );
    }
    let list = |counts: &BTreeMap<String, usize>| {
        let parts: Vec<String> = counts
            .iter()
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        parts.join(", ")
    };
    let mut parts = Vec::new();
    if !left_over.is_empty() {
        parts.push(format!("words left over ({})", list(&left_over)));
    }
    if !past.is_empty() {
        parts.push(format!(
            "drawn past the tape from seed {} ({})",
            tape.seed,
            list(&past)
        ));
    }
    format!(
        "the run did not follow the tape word for word: {}",
        parts.join("; ")
    )
}
