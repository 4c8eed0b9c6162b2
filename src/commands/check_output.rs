//! What every `check` driver ends with: its exit status by the README's
//! precedence, the note of a bounded search, and a counterexample written
//! as a schedule file (or why it could not be).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use zk_models::run::CheckReport;
use zk_models::schedule::Schedule;

/// What a bounded search that found nothing prints last.
pub(super) const NOT_EXHAUSTIVE_NOTE: &str = "not exhaustive: the search stopped at a bound (depth, time, memory, states, or random walks) before it saw every state; no violation within it, which is not a pass (exit 4)";

/// A check's exit status, by the precedence 1 > 2 > 4 > 0 (see the
/// README's table): a violation, else bad input or an unwritable output,
/// else a search cut by any bound (`--depth`, `--timeout`, a memory budget,
/// `--strategy simulation`, the lasso search's limits) that found nothing,
/// else an exhaustive pass.
pub(super) fn verdict_status(violation: bool, bad_output: bool, not_exhaustive: bool) -> ExitCode {
    use super::common::{EXIT_BAD_INPUT, EXIT_NOT_EXHAUSTIVE, EXIT_VIOLATION};
    match (violation, bad_output, not_exhaustive) {
        (true, _, _) => ExitCode::from(EXIT_VIOLATION),
        (false, true, _) => ExitCode::from(EXIT_BAD_INPUT),
        (false, false, true) => ExitCode::from(EXIT_NOT_EXHAUSTIVE),
        (false, false, false) => ExitCode::SUCCESS,
    }
}

/// The schedule of `property`'s counterexample in `report`.
pub(super) fn violated_schedule(report: &CheckReport, property: &str) -> Schedule {
    let result = report.property(property).expect("a property of the report");
    report
        .schedule(result)
        .expect("a violated property has a trace")
}

/// Why a schedule (or choice) file could not be written: each names the
/// path, so a check run in a directory it cannot write says where.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("cannot create the directory {} (--out): {source}", dir.display())]
    Directory {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Creates `dir` (and its parents) for `--out`.
pub(super) fn create_out_dir(dir: &Path) -> Result<(), WriteError> {
    std::fs::create_dir_all(dir).map_err(|source| WriteError::Directory {
        dir: dir.to_path_buf(),
        source,
    })
}

/// Writes `schedule` into `dir` as `RECIPE-VARIANT-PROPERTY{suffix}.toml`.
pub(super) fn write_schedule_file(
    dir: &Path,
    schedule: &Schedule,
    suffix: &str,
) -> Result<PathBuf, WriteError> {
    create_out_dir(dir)?;
    let stem = format!(
        "{}-{}-{}{suffix}",
        schedule.recipe, schedule.variant, schedule.property
    );
    let path = super::report::file_in(dir, &stem, "toml");
    std::fs::write(&path, schedule.to_toml()).map_err(|source| WriteError::File {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}
