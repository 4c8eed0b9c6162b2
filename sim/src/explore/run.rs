//! The explored world of an async recipe and its executions: the scenario
//! an exploration runs (the recipe's defaults with the client count and
//! cycles asked for; an async recipe's directory and its ancestors created
//! before the run, a sans-IO recipe's only when it declares that it needs
//! them, as its model and a scenario without `parents` do; a fixed latency
//! of 1 ms each way, hold times of 1 ms, no think time), one execution
//! following a tape, a whole search, and the replay of a choice file. The
//! madsim seed is fixed ([`SEED`]): a run is a function of its choice
//! string. The world drives sans-IO recipes the same way, so they can be
//! explored too (cross-validation).

use super::file::ChoiceFile;
use super::search::{search, Bounds, Execution, SearchError, Summary};
use super::tape::{self, Tape};
use crate::scenario::{Runner, Scenario, SimRecipes, WorkloadKind};
use crate::world::RunReport;
use std::path::Path;

/// The madsim seed of every explored run.
pub const SEED: u64 = 0;

/// What world an exploration runs: a recipe's variant at a client count
/// and a number of cycles (hold workloads).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct World {
    pub recipe: String,
    pub variant: String,
    pub clients: usize,
    pub cycles: u32,
}

impl World {
    /// The world a choice file names.
    pub fn of(file: &ChoiceFile) -> World {
        World {
            recipe: file.recipe.clone(),
            variant: file.variant.clone(),
            clients: file.clients,
            cycles: file.cycles,
        }
    }

    /// The world's scenario, checked against `recipes`. An async recipe's
    /// directory exists before the run; a sans-IO recipe starts from what
    /// it declares (`needs_existing_path`), as its model does: a recipe
    /// that creates its own persistent parents can leak them.
    pub fn scenario(&self, recipes: &SimRecipes) -> Result<Scenario, String> {
        let spec = recipes.find(&self.recipe)?;
        let variant = spec
            .variant(&self.variant)
            .ok_or_else(|| spec.unknown_variant(&self.variant))?;
        let kind = variant.workload;
        let quoted = |text: &str| toml::Value::String(text.to_string()).to_string();
        let mut text = format!(
            "name = \"check\"\nrecipe = {}\nvariant = {}\nclients = {}\nduration_ms = 10000\nheal_ms = 10000\n",
            quoted(&self.recipe),
            quoted(&self.variant),
            self.clients
        );
        if variant.is_async() {
            let parents: Vec<String> = ancestors(spec.default_path.as_str())
                .iter()
                .map(|path| quoted(path))
                .collect();
            text += &format!("[config]\nparents = [{}]\n", parents.join(", "));
        }
        text += "[timing]\nlatency = { min_us = 1000, max_us = 1000 }\n";
        if kind == WorkloadKind::Hold {
            text += &format!(
                "[workload]\ncycles = {}\nhold_ms = [1, 1]\nthink_ms = [0, 0]\n",
                self.cycles
            );
        }
        Scenario::parse(Path::new("(explored world)"), &text, recipes)
            .map_err(|error| error.message)
    }
}

/// `path` and its ancestors below the root, top-down (`/a/b`: `/a`, `/a/b`).
fn ancestors(path: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut prefix = String::new();
    for part in path.split('/').filter(|part| !part.is_empty()) {
        prefix = format!("{prefix}/{part}");
        paths.push(prefix.clone());
    }
    paths
}

/// One execution of `runner`'s world following `tape` (with its trace if
/// asked): the tape back, and the run's report.
pub fn execute(runner: &dyn Runner, tape: Tape, trace: bool) -> Result<(Tape, RunReport), String> {
    tape::install(tape);
    let report = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runner.run(SEED, trace)));
    let tape = tape::collect();
    let report = report.map_err(|panic| format!("the run panicked: {}", panic_text(&*panic)))?;
    let tape = tape.ok_or("the run lost its choice tape")?;
    Ok((tape, report))
}

/// A panic's message, if it has one.
fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(no message)".to_string())
}

/// Explores `scenario`'s world within `bounds`; each execution's
/// violations are the oracles' (none counted for a pruned one).
pub fn explore(scenario: &Scenario, bounds: &Bounds) -> Result<Summary, SearchError> {
    let runner = scenario.runner();
    search(bounds, |tape| {
        let (tape, report) = execute(runner.as_ref(), tape, false).map_err(SearchError::Run)?;
        let (violated, vacuous) = match tape.pruned {
            true => (Vec::new(), None),
            false => (violated(&report), vacuity(&report)),
        };
        Ok(Execution {
            tape,
            violated,
            vacuous,
        })
    })
}

/// The properties a run violated.
pub fn violated(report: &RunReport) -> Vec<String> {
    report
        .violations
        .iter()
        .map(|v| v.property_name().to_string())
        .collect()
}

/// Why a run's pass says nothing, if it passed and the workload achieved
/// nothing (`RunReport::vacuous`, as sweeps judge a seed).
pub fn vacuity(report: &RunReport) -> Option<String> {
    report.passed().then(|| report.vacuous()).flatten()
}

/// The run a choice file picks, traced: its tape (a `misfit` says the
/// choices do not fit this world) and its report.
pub fn replay(recipes: &SimRecipes, file: &ChoiceFile) -> Result<(Tape, RunReport), String> {
    let scenario = World::of(file).scenario(recipes)?;
    let tape = Tape::new(file.choices.clone(), file.faults);
    execute(scenario.runner().as_ref(), tape, true)
}
