//! Output paths checked before a run: a `--json FILE` or `--report DIR`
//! that cannot be written is bad input (exit 2, naming the path) found
//! before the first seed runs, not after the whole run. A probe leaves
//! nothing behind but the report directory, which `--report` creates.

use super::common::bad_input;
use std::fs::OpenOptions;
use std::path::Path;
use std::process::ExitCode;

/// Checks that `--FLAG FILE` can be written: its directory exists and the
/// file can be created (or, if it exists, opened for writing; it is not
/// truncated here). A file the probe created is removed again.
pub fn probe_file(flag: &str, path: &Path) -> Result<(), ExitCode> {
    if path.is_dir() {
        return Err(bad_input(format!(
            "{flag}: {} is a directory, not a file",
            path.display()
        )));
    }
    let existed = path.exists();
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|error| bad_input(format!("{flag}: cannot write {}: {error}", path.display())))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// Creates `--FLAG DIR` (and its parents) and checks a file can be
/// written in it.
pub fn probe_dir(flag: &str, dir: &Path) -> Result<(), ExitCode> {
    std::fs::create_dir_all(dir)
        .map_err(|error| bad_input(format!("{flag}: cannot create {}: {error}", dir.display())))?;
    let probe = dir.join(format!(".zkcheck-probe-{}", std::process::id()));
    probe_file(flag, &probe)
}

/// [`probe_file`] on `--json` and [`probe_dir`] on `--report`, if given.
pub fn probe(json: Option<&Path>, report: Option<&Path>) -> Result<(), ExitCode> {
    if let Some(path) = json {
        probe_file("--json", path)?;
    }
    if let Some(dir) = report {
        probe_dir("--report", dir)?;
    }
    Ok(())
}
