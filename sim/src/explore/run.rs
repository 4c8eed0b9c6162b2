//! The explored world and its executions: the scenario an exploration
//! runs, one execution following a tape, a whole search, and the replay
//! of a choice file. A run is a function of its choice string and its
//! runtime seed (the madsim seed: [`super::runtime_seeds`]); a search runs
//! once per runtime seed it is given (seed 0 alone by default). The world
//! drives sans-IO recipes the same way, so they can be explored too
//! (cross-validation).
//!
//! Two worlds ([`WorldSource`]):
//! - a recipe's defaults (`check RECIPE`): the client count and cycles
//!   asked for, an async recipe's directory and its ancestors created
//!   before the run (a sans-IO recipe's only when it declares that it
//!   needs them, as its model and a scenario without `parents` do), a
//!   fixed latency of 1 ms each way, hold times of 1 ms, no think time;
//! - a scenario file's own world (`check SCENARIO.toml`), narrowed only
//!   where the explorer enumerates instead of drawing (`narrowed`): the
//!   client count and cycles asked for, a fixed latency of 1 ms each way
//!   (the server's order of requests is enumerated instead), and no drawn
//!   faults (the tape strikes them within the fault budget; the ensemble's
//!   scheduled faults stay). Its servers stay the scenario's: on an
//!   ensemble the tape also picks the server of each connection attempt,
//!   each follower's apply lag for the run, and the ensemble faults the
//!   budget allows. Its durations stay the scenario's ranges; the tape
//!   picks among their points ([`DurationPoints`]).

use super::file::ChoiceFile;
use super::search::{search, Bounds, Execution, SearchError, Summary};
use super::tape::{self, DurationPoints, Tape};
use crate::scenario::{Runner, Scenario, SimRecipes, WorkloadKind};
use crate::world::RunReport;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Where an explored world comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorldSource {
    /// The recipe's defaults, with fixed timings.
    Recipe,
    /// A scenario file's text (its own world, narrowed), and what names
    /// it in errors (its path, or the choice file that carries it).
    Scenario { name: PathBuf, text: String },
}

/// What world an exploration runs: a recipe's variant at a client count
/// and a number of cycles (hold workloads), from its defaults or a
/// scenario, and the points of each duration's range its tapes try.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct World {
    pub recipe: String,
    pub variant: String,
    pub clients: usize,
    pub cycles: u32,
    pub source: WorldSource,
    pub durations: DurationPoints,
}

impl World {
    /// A recipe's defaults at `clients` and `cycles`, durations at both
    /// ends of their ranges.
    pub fn new(recipe: &str, variant: &str, clients: usize, cycles: u32) -> World {
        World {
            recipe: recipe.to_string(),
            variant: variant.to_string(),
            clients,
            cycles,
            source: WorldSource::Recipe,
            durations: DurationPoints::default(),
        }
    }

    /// The world a choice file names.
    pub fn of(file: &ChoiceFile) -> World {
        World {
            recipe: file.recipe.clone(),
            variant: file.variant.clone(),
            clients: file.clients,
            cycles: file.cycles,
            source: match &file.scenario {
                Some(text) => WorldSource::Scenario {
                    name: PathBuf::from("(the choice file's scenario)"),
                    text: text.clone(),
                },
                None => WorldSource::Recipe,
            },
            durations: file.durations,
        }
    }

    /// A choice file of one run of this world: `choices` under `faults`.
    pub fn choice_file(
        &self,
        faults: super::FaultAllowance,
        property: Option<String>,
        choices: Vec<u32>,
    ) -> ChoiceFile {
        ChoiceFile {
            recipe: self.recipe.clone(),
            variant: self.variant.clone(),
            clients: self.clients,
            cycles: self.cycles,
            faults,
            durations: self.durations,
            property,
            choices,
            runtime_seed: 0,
            scenario: match &self.source {
                WorldSource::Scenario { text, .. } => Some(text.clone()),
                WorldSource::Recipe => None,
            },
        }
    }

    /// The world's scenario, checked against `recipes`.
    pub fn scenario(&self, recipes: &SimRecipes) -> Result<Scenario, String> {
        match &self.source {
            WorldSource::Recipe => self.recipe_defaults(recipes),
            WorldSource::Scenario { name, text } => {
                let scenario = Scenario::parse(name, text, recipes).map_err(|e| e.to_string())?;
                narrowed(&scenario, text, self, recipes)
            }
        }
    }

    /// The recipe's defaults. An async recipe's directory exists before
    /// the run; a sans-IO recipe starts from what it declares
    /// (`needs_existing_path`), as its model does: a recipe that creates
    /// its own persistent parents can leak them.
    fn recipe_defaults(&self, recipes: &SimRecipes) -> Result<Scenario, String> {
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
        text +=
            &format!("[timing]\nlatency = {{ min_us = {LATENCY_US}, max_us = {LATENCY_US} }}\n");
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

/// The latency of every message of an explored world, each way.
pub const LATENCY_US: u64 = 1000;

/// A scenario's world as the explorer runs it: `world`'s variant, clients
/// and cycles (a hold workload's), a fixed latency, no drawn faults (the
/// client-side expiry policy and the scheduled ensemble faults kept);
/// everything else as the scenario says, its servers and their timings
/// included (`text` is its file, checked again after the edit).
fn narrowed(
    scenario: &Scenario,
    text: &str,
    world: &World,
    recipes: &SimRecipes,
) -> Result<Scenario, String> {
    let mut table: toml::Table = text.parse().map_err(|e| format!("{e}"))?;
    let integer = |n: u64| toml::Value::Integer(i64::try_from(n).unwrap_or(i64::MAX));
    table.insert("variant".into(), toml::Value::String(world.variant.clone()));
    table.insert("clients".into(), integer(world.clients as u64));
    // Faults are the tape's; the client-side expiry policy is no fault
    // drawn but how the clients behave, and stays, as do the ensemble's
    // scheduled faults (a fixed part of the scenario's world).
    let client_expiry = scenario.faults.rates.client_expiry;
    let kept = ensemble_schedule(table.remove("faults"));
    let mut faults = toml::Table::new();
    if client_expiry {
        let mut rates = toml::Table::new();
        rates.insert("client_expiry".into(), toml::Value::Boolean(true));
        faults.insert("rates".into(), toml::Value::Table(rates));
    }
    if !kept.is_empty() {
        faults.insert("schedule".into(), toml::Value::Array(kept));
    }
    if !faults.is_empty() {
        table.insert("faults".into(), toml::Value::Table(faults));
    }
    let timing = table
        .entry("timing")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if let Some(timing) = timing.as_table_mut() {
        let mut latency = toml::Table::new();
        latency.insert("min_us".into(), integer(LATENCY_US));
        latency.insert("max_us".into(), integer(LATENCY_US));
        timing.insert("latency".into(), toml::Value::Table(latency));
    }
    if scenario.variant().workload == WorkloadKind::Hold {
        let workload = table
            .entry("workload")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if let Some(workload) = workload.as_table_mut() {
            workload.insert("cycles".into(), integer(u64::from(world.cycles)));
        }
    }
    let edited = toml::to_string(&table).map_err(|e| format!("{e}"))?;
    let mut explored = Scenario::parse(&scenario.file, &edited, recipes).map_err(|error| {
        format!(
            "the explored world of {}: {}",
            scenario.file.display(),
            error.message
        )
    })?;
    explored.file = scenario.file.clone();
    Ok(explored)
}

/// The entries of a `[faults]` table's schedule that strike the ensemble.
fn ensemble_schedule(faults: Option<toml::Value>) -> Vec<toml::Value> {
    let Some(toml::Value::Table(mut faults)) = faults else {
        return Vec::new();
    };
    let Some(toml::Value::Array(schedule)) = faults.remove("schedule") else {
        return Vec::new();
    };
    let strikes_the_ensemble = |entry: &toml::Value| {
        let fault = entry.get("fault").and_then(toml::Value::as_str);
        fault.is_some_and(|fault| crate::faults::entry::ENSEMBLE_FAULT_NAMES.contains(&fault))
    };
    schedule.into_iter().filter(strikes_the_ensemble).collect()
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

/// One execution of `runner`'s world under runtime seed `seed` following
/// `tape` (with its trace if asked): the tape back, and the run's report.
pub fn execute(
    runner: &dyn Runner,
    seed: u64,
    tape: Tape,
    trace: bool,
) -> Result<(Tape, RunReport), String> {
    tape::install(tape);
    let report = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runner.run(seed, trace)));
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

/// Explores `scenario`'s world within `bounds`, a whole search per
/// runtime seed of `bounds.runtime_seeds`, in order, until one finds a
/// violation or a bound stops it (the execution and time bounds are the
/// whole exploration's); each execution's violations are the oracles'
/// (none counted for a pruned one).
pub fn explore(scenario: &Scenario, bounds: &Bounds) -> Result<Summary, SearchError> {
    let runner = scenario.runner();
    let started = Instant::now();
    let mut whole = Summary::default();
    for seed in bounds.runtime_seeds.range() {
        let left = Bounds {
            max_executions: bounds
                .max_executions
                .map(|max| max.saturating_sub(whole.executions)),
            timeout: bounds
                .timeout
                .map(|timeout| timeout.saturating_sub(started.elapsed())),
            ..bounds.clone()
        };
        let part = search(&left, |tape| {
            let (tape, report) =
                execute(runner.as_ref(), seed, tape, false).map_err(SearchError::Run)?;
            let (violated, vacuous) = match tape.pruned {
                true => (Vec::new(), None),
                false => (violated(&report), vacuity(&report)),
            };
            Ok(Execution {
                tape,
                violated,
                vacuous,
            })
        })?;
        whole.absorb(part, seed);
        if !whole.found.is_empty() || whole.stop.is_some() {
            break;
        }
    }
    whole.exhaustive &= whole.seeds_searched == bounds.runtime_seeds.count;
    Ok(whole)
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
    let tape = Tape::new(file.choices.clone(), file.faults).with_durations(file.durations);
    execute(scenario.runner().as_ref(), file.runtime_seed, tape, true)
}
