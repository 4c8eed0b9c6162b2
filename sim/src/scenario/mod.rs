//! Scenario files (TOML): recipe, variant, clients, workload, faults,
//! properties, duration, seeds — everything one simulated run needs but the
//! seed. [`Scenario::load`] reads and checks a file against the registered
//! recipes ([`SimRecipes`]; errors name the file, the line and the key);
//! [`Scenario::runner`] builds the simulation for its recipe and variant;
//! [`shrink`] cuts a failing seed's faults down to a smaller scenario file.

pub mod file;
use crate::input::error;
pub use crate::input::keyed_file;
pub mod limits;
mod live_support;
mod registry;
mod seeds;
#[cfg(madsim)]
pub mod shrink;
mod validate;

pub use crate::input::error::{clip, ScenarioError};
pub use file::{CatalogModel, CatalogSection, ScenarioFile};
pub use live_support::unsupported;
pub use registry::{
    ClientContext, RecipeKind, RecipeSpec, Runner, SimRecipes, SimVariant, WorkloadKind,
};
pub use seeds::{SeedRange, Shard};

use crate::faults::FaultPlan;
use crate::oracles::{OracleConfig, Property};
use crate::world::WorldConfig;
use std::collections::BTreeSet;
use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Request};

/// What a scenario expects of its runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expectation {
    /// Every seed passes.
    Pass,
    /// Some seed breaks a property (this one, if given).
    Violation(Option<Property>),
}

/// A checked scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The file it was read from (named in replay commands).
    pub file: PathBuf,
    pub name: String,
    /// The file as written (the shrinker edits and writes it back).
    pub raw: ScenarioFile,
    /// The variant the file names (`raw.variant` may be overridden).
    pub file_variant: String,
    /// The recipe the file names, as registered.
    pub recipe: Arc<RecipeSpec>,
    pub seeds: SeedRange,
    pub expect: Expectation,
    pub properties: BTreeSet<Property>,
    /// What the fixed variant must hold on this scenario (`fixed_properties`).
    pub fixed_properties: Option<BTreeSet<Property>>,
    /// The recipe's directory.
    pub path: Path,
    pub parents: Vec<Path>,
    pub fifo_dir: Option<Path>,
    /// The checked fault plan (`raw.faults` as the world takes it).
    pub faults: FaultPlan,
    /// The signature a failing seed must show to catch this scenario's bug.
    pub expect_signature: Option<String>,
    /// Keep running after the first violation (`--all-violations`): every
    /// property's first violation is reported, not only the first one.
    pub all_violations: bool,
}

impl Scenario {
    /// Reads and checks a scenario file (a regular file of bounded size);
    /// it must name one of `recipes`.
    pub fn load(file: &FsPath, recipes: &SimRecipes) -> Result<Scenario, ScenarioError> {
        let source = crate::input::read_input(file).map_err(|e| ScenarioError::unreadable(&e))?;
        Scenario::parse(file, &source, recipes)
    }

    /// Checks a scenario given as text; `file` names it in errors.
    pub fn parse(
        file: &FsPath,
        source: &str,
        recipes: &SimRecipes,
    ) -> Result<Scenario, ScenarioError> {
        let table: toml::Table =
            toml::from_str(source).map_err(|e| ScenarioError::from_toml(file, source, &e))?;
        let raw: ScenarioFile =
            toml::from_str(source).map_err(|e| ScenarioError::from_toml(file, source, &e))?;
        validate::Checker {
            file,
            source,
            table: &table,
            recipes,
        }
        .check(raw)
    }

    /// The world this scenario describes; `trace` records the run's trace.
    pub fn world_config(&self) -> WorldConfig {
        let raw = &self.raw;
        let mut setup: Vec<Request> = self
            .parents
            .iter()
            .map(|path| Request::Create {
                path: path.clone(),
                data: Vec::new(),
                mode: CreateMode::Persistent,
                acl: Acls::Open,
            })
            .collect();
        setup.dedup();
        let sequence_starts = raw
            .config
            .sequence_start
            .map(|next| vec![(self.path.clone(), next)])
            .unwrap_or_default();
        WorldConfig {
            clients: raw.clients,
            servers: raw.ensemble,
            apply_lag_ms: raw.timing.apply_lag_ms,
            session_timeout_ms: raw.timing.session_timeout_ms,
            latency: raw.timing.latency.clone(),
            reconnect_delay_ms: raw
                .timing
                .reconnect_delay_ms
                .unwrap_or(WorldConfig::default().reconnect_delay_ms),
            next_host_delay_ms: WorldConfig::default().next_host_delay_ms,
            reconnect_timing: match raw.timing.reconnect_delay_ms {
                Some(_) => crate::world::ReconnectTiming::Fixed,
                None => crate::world::ReconnectTiming::ClientLibrary,
            },
            new_session_delay_ms: raw.timing.new_session_delay_ms,
            reaper_interval_ms: raw.timing.reaper_interval_ms,
            tick_time_ms: raw.timing.tick_time_ms,
            sync_limit: raw.timing.sync_limit,
            election_ms: raw.timing.election_ms,
            revalidate_moves: raw.timing.revalidate_moves,
            setup,
            sequence_starts,
            extended_types: true,
            fault_phase_ms: raw.duration_ms,
            heal_ms: raw.heal_ms,
            settle_ms: raw.timing.settle_ms,
            faults: self.faults.clone(),
            oracles: OracleConfig {
                properties: self.properties.clone(),
                max_leases: raw.config.max_leases.unwrap_or(1),
                herd_bound: raw.properties.herd_bound,
                fifo_dir: self.fifo_dir.clone(),
                barrier_size: raw.config.barrier_size.unwrap_or(raw.clients),
            },
            trace: false,
            stop_on_violation: !self.all_violations,
            planned_goals: self.planned_goals(),
        }
    }

    /// The goal outcomes the workload sets out to reach (see
    /// `WorldConfig::planned_goals`): every client's cycles, every
    /// producer's items, every client's rounds.
    pub fn planned_goals(&self) -> u64 {
        let spec = &self.raw.workload;
        let clients = self.raw.clients as u64;
        match self.variant().workload {
            WorkloadKind::Hold => clients * u64::from(spec.cycles),
            WorkloadKind::Queue => spec.producers as u64 * u64::from(spec.items),
            WorkloadKind::Barrier => clients * u64::from(spec.rounds),
        }
    }

    /// The same scenario with every path it names (the recipe's directory,
    /// the parents it creates, the FIFO directory) moved under `root`, for
    /// a live run in a directory of its own. Fails on a path that becomes
    /// invalid (too long).
    pub fn under_root(&self, root: &Path) -> Result<Scenario, String> {
        let move_under = |path: &Path| {
            let joined = format!("{}{}", root.as_str().trim_end_matches('/'), path.as_str());
            Path::new(joined.trim_end_matches('/').to_string())
                .map_err(|error| format!("`{path}` under `{root}`: {error}"))
        };
        let mut rooted = self.clone();
        rooted.path = move_under(&self.path)?;
        rooted.parents = std::iter::once(Ok(root.clone()))
            .chain(self.parents.iter().map(move_under))
            .collect::<Result<_, _>>()?;
        rooted.fifo_dir = self.fifo_dir.as_ref().map(move_under).transpose()?;
        Ok(rooted)
    }

    /// The run of this scenario's recipe and variant against a real server.
    /// Refused before (`live_support::unsupported`) for an async recipe.
    pub fn live_runner(&self) -> Box<dyn crate::live::LiveRunner> {
        self.variant()
            .live_runner(self)
            .expect("scenario::unsupported refuses async recipes before a live run")
    }

    /// The simulation of this scenario's recipe and variant.
    #[cfg(madsim)]
    pub fn runner(&self) -> Box<dyn Runner> {
        self.variant().runner(self)
    }

    /// The variant this scenario runs (checked when it was loaded).
    pub fn variant(&self) -> &SimVariant {
        self.recipe
            .variant(&self.raw.variant)
            .expect("a checked scenario names a registered variant")
    }

    /// The variant that fixes this scenario's bug: its catalog entry's
    /// `fixed`, else `fixed`.
    pub fn fixed_variant(&self) -> &str {
        self.raw
            .catalog
            .as_ref()
            .map_or("fixed", |catalog| catalog.fixed_variant())
    }

    /// The same scenario with another variant of its recipe (to run a bug's
    /// scenario against the fixed variant, side by side). Switching to the
    /// fixed variant ([`Scenario::fixed_variant`]) checks `fixed_properties`
    /// when the file gives them (also when the file's own variant is that
    /// one, as for a bug no recipe can prevent), and expects every seed to
    /// pass.
    pub fn with_variant(&self, variant: &str) -> Result<Scenario, String> {
        let Some(spec) = self.recipe.variant(variant) else {
            return Err(self.recipe.unknown_variant(variant));
        };
        if spec.needs_existing_path && !self.parents.contains(&self.path) {
            return Err(format!(
                "`{}` {variant} expects its directory `{}` to exist before it runs: add it to `config.parents` in the scenario",
                self.recipe.name,
                clip(self.path.as_str())
            ));
        }
        let mut other = self.clone();
        other.raw.variant = variant.to_string();
        if variant == self.fixed_variant() {
            if let Some(fixed) = &self.fixed_properties {
                other.properties = fixed.clone();
            }
            other.expect = Expectation::Pass;
        }
        Ok(other)
    }

    /// The scenario as TOML (for the shrinker's output): a file that loads
    /// back as this scenario (the workload keeps only the keys its recipe's
    /// workload reads).
    pub fn to_toml(&self) -> String {
        let mut table = toml::Value::try_from(&self.raw).expect("a scenario serializes");
        if let Some(toml::Value::Table(workload)) = table.get_mut("workload") {
            let keys = self.variant().workload.keys();
            workload.retain(|key, _| keys.iter().any(|k| *key == **k));
        }
        leave_out_server_faults_client(&mut table, &self.faults);
        toml::to_string(&table).expect("a scenario serializes")
    }
}

/// A fault that strikes a server takes no `client`; the schedule's
/// entries serialize one anyway (0), which the validator refuses on a
/// server fault. Removes it from those entries of a scenario's TOML
/// `table`, whose `[[faults.schedule]]` is `plan.schedule` in order, so a
/// shrunk scenario (or any written back) loads again.
fn leave_out_server_faults_client(table: &mut toml::Value, plan: &FaultPlan) {
    let Some(entries) = table
        .get_mut("faults")
        .and_then(|faults| faults.get_mut("schedule"))
        .and_then(toml::Value::as_array_mut)
    else {
        return;
    };
    assert_eq!(
        entries.len(),
        plan.schedule.len(),
        "the file's schedule is the plan's"
    );
    for (entry, fault) in entries.iter_mut().zip(&plan.schedule) {
        if let (true, Some(entry)) = (fault.fault.is_ensemble(), entry.as_table_mut()) {
            entry.remove("client");
        }
    }
}
