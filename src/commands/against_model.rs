//! `sweep --coverage --against-model FAULTS`: a sweep's coverage measured
//! against what the stateful checker proves reachable. Both sides project
//! their states onto the shared abstraction (`zk_sim::abstraction`: the
//! tree by ranks with owners by client, each client's connection, session
//! and requests); the model is the scenario's recipe, variant, clients and
//! cycles with the fault budget given, searched whole (`zk_models::coverage`).
//!
//! It reports the fraction of the model's shared states some seed reached,
//! the sweep's states the model does not have (runs beyond its budget, the
//! world's own moments such as a client not yet connected, or a
//! disagreement), and for the states no seed reached, the shortest path to
//! each as a schedule (`--never-reached DIR`) that `zkcheck replay` runs
//! on the stepper into that very state.

use super::common::quote;
use super::Harness;
use serde::{Deserialize, Serialize};
use std::path::Path;
use zk_models::faults::FaultBudget;
use zk_models::registry::{ModelVariant, ReachAsk};
use zk_models::schedule::{FoundOn, REACH};
use zk_models::setup::{Setup, MAX_CYCLES};
use zk_sim::scenario::{RecipeKind, Scenario};

/// Most model states the comparison holds (each is kept, with its path).
const MODEL_STATES_MAX: usize = 2_000_000;

/// Never-reached states listed in the summary and the JSON, and written
/// as schedules.
pub const NEVER_REACHED_SHOWN: usize = 10;

/// The model a sweep is compared against.
pub struct AgainstModel {
    model: ModelVariant,
    setup: Setup,
    /// `recipe/variant`.
    name: String,
    faults: FaultBudget,
}

/// A sweep's shared states against the model's, as the summary and the
/// JSON give them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comparison {
    /// The model: recipe/variant, clients, cycles, fault budget.
    pub model: String,
    /// Distinct model states searched.
    pub model_states: u64,
    /// The model's shared states.
    pub reachable: u64,
    /// Of them, reached by some seed.
    pub covered: u64,
    /// The sweep's shared states the model does not reach.
    pub beyond_model: u64,
    /// The first of them by lowest seed: (state, 16 hex digits; the
    /// lowest seed that reached it, or for a campaign the lowest run).
    pub beyond_model_first: Vec<(String, u64)>,
    /// The model's shared states no seed reached.
    pub never_reached: u64,
    /// The shortest of those, shortest first.
    pub shortest_never_reached: Vec<NeverReached>,
}

/// A model state no seed reached, with the length of its shortest path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NeverReached {
    /// The shared state, 16 hex digits.
    pub state: String,
    pub steps: u64,
    /// Where `--never-reached` wrote its schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
}

impl AgainstModel {
    /// The model of `scenario` with `faults` (`KIND=BUDGET,...`); why
    /// there is none to compare with.
    pub fn prepare(
        harness: &Harness,
        scenario: &Scenario,
        faults: &str,
    ) -> Result<AgainstModel, String> {
        let raw = &scenario.raw;
        let model = harness
            .registry
            .model(&scenario.recipe.name, &raw.variant)
            .map_err(|e| e.to_string())?;
        let faults: FaultBudget = faults.parse().map_err(|e| format!("`{faults}`: {e}"))?;
        if raw.ensemble > 1 {
            return Err(format!(
                "the scenario runs an ensemble of {}; the comparison is with one server",
                raw.ensemble
            ));
        }
        if scenario.path != scenario.recipe.default_path {
            return Err(format!(
                "the scenario's config.path {} is not the recipe's {} (the model's)",
                scenario.path, scenario.recipe.default_path
            ));
        }
        let cycles = match scenario.recipe.kind {
            RecipeKind::Queue | RecipeKind::Barrier => 1,
            _ => usize::try_from(raw.workload.cycles).unwrap_or(usize::MAX),
        };
        if !(1..=MAX_CYCLES).contains(&cycles) {
            return Err(format!(
                "the scenario's workload.cycles is {cycles}; a model makes 1..={MAX_CYCLES}"
            ));
        }
        let setup = Setup::new(raw.clients)
            .with_faults(faults)
            .with_cycles(cycles);
        Ok(AgainstModel {
            model,
            setup,
            name: format!("{}/{}", scenario.recipe.name, raw.variant),
            faults,
        })
    }

    /// Compares the sweep's shared states (each with its lowest seed)
    /// with the model's; writes the never-reached states' schedules into
    /// `dir` if given.
    pub fn compare(
        &self,
        reached: &zk_sim::guided::tally::FirstReached,
        dir: Option<&Path>,
    ) -> Result<Comparison, String> {
        let wanted = |state: u64| !reached.contains_key(&state);
        let ask = ReachAsk {
            limit: MODEL_STATES_MAX,
            wanted: &wanted,
            paths: NEVER_REACHED_SHOWN,
        };
        let reach = self
            .model
            .reach(&self.setup, &ask)
            .map_err(|e| e.to_string())?;
        let covered = reach
            .shared
            .keys()
            .filter(|s| reached.contains_key(s))
            .count();
        let mut beyond: Vec<(u64, u64)> = reached
            .iter()
            .filter(|(s, _)| !reach.shared.contains_key(s))
            .map(|(&state, &seed)| (seed, state))
            .collect();
        beyond.sort_unstable();
        let mut shortest = Vec::new();
        for (index, (state, steps)) in reach.paths.into_iter().enumerate() {
            let hex = format!("{state:016x}");
            let schedule = match dir {
                Some(dir) if !steps.is_empty() => {
                    Some(self.write_schedule(dir, index + 1, &hex, steps.clone())?)
                }
                _ => None,
            };
            shortest.push(NeverReached {
                state: hex,
                steps: steps.len() as u64,
                schedule,
            });
        }
        Ok(Comparison {
            model: format!(
                "{}, {} client(s), {} cycle(s), faults {}",
                self.name, self.setup.clients, self.setup.cycles, self.faults
            ),
            model_states: reach.model_states as u64,
            reachable: reach.shared.len() as u64,
            covered: covered as u64,
            beyond_model: beyond.len() as u64,
            beyond_model_first: beyond
                .iter()
                .take(NEVER_REACHED_SHOWN)
                .map(|&(seed, state)| (format!("{state:016x}"), seed))
                .collect(),
            never_reached: (reach.shared.len() - covered) as u64,
            shortest_never_reached: shortest,
        })
    }

    /// Writes the schedule that leads to `state` as `never-reached-N.toml`.
    fn write_schedule(
        &self,
        dir: &Path,
        number: usize,
        state: &str,
        steps: Vec<zk_models::schedule::ScheduleStep>,
    ) -> Result<String, String> {
        let found_on = FoundOn {
            model: &self.name,
            clients: self.setup.clients,
            cycles: self.setup.cycles,
            servers: 1,
            revalidate: true,
            faults: &self.faults,
        };
        let mut schedule = found_on.schedule(REACH, "example", None, steps);
        schedule.state = Some(state.to_string());
        let path = dir.join(format!("never-reached-{number}.toml"));
        std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(&path, schedule.to_toml()))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(path.display().to_string())
    }
}

impl Comparison {
    /// The summary's lines; `program` starts a printed replay command;
    /// `unit` names what the tally counts ("seed" for a sweep, "run" for
    /// a campaign, whose runs are numbered from 1).
    pub fn summary_lines(&self, program: &str, unit: &str) -> Vec<String> {
        let percent = |part: u64| match self.reachable {
            0 => 0.0,
            all => 100.0 * part as f64 / all as f64,
        };
        let mut lines = vec![
            format!(
                "against the model ({}): {} of its {} shared abstract states reached ({:.1}%), {} model states searched",
                self.model, self.covered, self.reachable, percent(self.covered), self.model_states
            ),
            format!(
                "  reached by the runs, not by the model: {} (runs beyond its fault budget, or a disagreement between the world and the model)",
                self.beyond_model
            ),
        ];
        if !self.beyond_model_first.is_empty() {
            let seeds: Vec<String> = self
                .beyond_model_first
                .iter()
                .map(|(state, seed)| format!("{state} at {unit} {seed}"))
                .collect();
            lines.push(format!("    first: {}", seeds.join(", ")));
        }
        lines.push(format!("  never reached: {}", self.never_reached));
        for never in &self.shortest_never_reached {
            let replay = match &never.schedule {
                Some(path) => format!(": {program} replay {}", quote(path)),
                None => String::new(),
            };
            lines.push(format!(
                "    {} ({} steps from the start){replay}",
                never.state, never.steps
            ));
        }
        lines
    }
}
