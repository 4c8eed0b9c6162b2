//! Scenario files (TOML): recipe, variant, clients, workload, faults,
//! properties, duration, seeds — everything one simulated run needs but the
//! seed. [`Scenario::load`] reads and checks a file (errors name the file,
//! the line and the key); [`Scenario::runner`] builds the simulation for its
//! recipe and variant; [`shrink`] cuts a failing seed's faults down to a
//! smaller scenario file.

mod error;
pub mod file;
mod registry;
pub mod shrink;

pub use error::ScenarioError;
pub use file::ScenarioFile;
pub use registry::{RecipeKind, Runner};

use crate::faults::Trigger;
use crate::oracles::{OracleConfig, Property};
use crate::world::WorldConfig;
use std::collections::BTreeSet;
use std::ops::Range;
use std::path::{Path as FsPath, PathBuf};
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
    pub recipe: RecipeKind,
    pub seeds: Range<u64>,
    pub expect: Expectation,
    pub properties: BTreeSet<Property>,
    /// What the fixed variant must hold on this scenario (`fixed_properties`).
    pub fixed_properties: Option<BTreeSet<Property>>,
    /// The recipe's directory.
    pub path: Path,
    pub parents: Vec<Path>,
    pub fifo_dir: Option<Path>,
}

impl Scenario {
    /// Reads and checks a scenario file.
    pub fn load(file: &FsPath) -> Result<Scenario, ScenarioError> {
        let source =
            std::fs::read_to_string(file).map_err(|e| ScenarioError::unreadable(file, &e))?;
        Scenario::parse(file, &source)
    }

    /// Checks a scenario given as text; `file` names it in errors.
    pub fn parse(file: &FsPath, source: &str) -> Result<Scenario, ScenarioError> {
        let raw: ScenarioFile =
            toml::from_str(source).map_err(|e| ScenarioError::from_toml(file, source, &e))?;
        Checker { file, source }.check(raw)
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
            session_timeout_ms: raw.timing.session_timeout_ms,
            latency: raw.timing.latency.clone(),
            reconnect_delay_ms: raw.timing.reconnect_delay_ms,
            new_session_delay_ms: raw.timing.new_session_delay_ms,
            expiry_tick_ms: raw.timing.expiry_tick_ms.max(1),
            reaper_interval_ms: raw.timing.reaper_interval_ms,
            setup,
            sequence_starts,
            extended_types: true,
            fault_phase_ms: raw.duration_ms,
            heal_ms: raw.heal_ms,
            settle_ms: raw.timing.settle_ms,
            faults: raw.faults.clone(),
            oracles: OracleConfig {
                properties: self.properties.clone(),
                max_leases: raw.config.max_leases.unwrap_or(1),
                herd_bound: raw.properties.herd_bound,
                fifo_dir: self.fifo_dir.clone(),
                barrier_size: raw.config.barrier_size.unwrap_or(raw.clients),
            },
            trace: false,
            stop_on_violation: true,
        }
    }

    /// The simulation of this scenario's recipe and variant.
    pub fn runner(&self) -> Box<dyn Runner> {
        registry::runner(self)
    }

    /// The same scenario with another variant of its recipe (to run a bug's
    /// scenario against the fixed variant, side by side). Switching to
    /// `fixed` checks `fixed_properties` when the file gives them, and
    /// expects every seed to pass.
    pub fn with_variant(&self, variant: &str) -> Result<Scenario, String> {
        if !self.recipe.variants().contains(&variant) {
            return Err(format!(
                "`{}` has no variant `{variant}` (expected one of: {})",
                self.recipe.name(),
                self.recipe.variants().join(", ")
            ));
        }
        let mut other = self.clone();
        other.raw.variant = variant.to_string();
        if variant == "fixed" && self.raw.variant != "fixed" {
            if let Some(fixed) = &self.fixed_properties {
                other.properties = fixed.clone();
            }
            other.expect = Expectation::Pass;
        }
        Ok(other)
    }

    /// The scenario as TOML (for the shrinker's output).
    pub fn to_toml(&self) -> String {
        toml::to_string(&self.raw).expect("a scenario serializes")
    }
}

/// Semantic checks with located errors.
struct Checker<'a> {
    file: &'a FsPath,
    source: &'a str,
}

impl Checker<'_> {
    fn error(&self, key: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError::at_key(self.file, self.source, key, message)
    }

    fn check(&self, raw: ScenarioFile) -> Result<Scenario, ScenarioError> {
        let recipe: RecipeKind = raw
            .recipe
            .parse()
            .map_err(|e: String| self.error("recipe", e))?;
        if !recipe.variants().contains(&raw.variant.as_str()) {
            return Err(self.error(
                "variant",
                format!(
                    "`{}` has no variant `{}` (expected one of: {})",
                    raw.recipe,
                    raw.variant,
                    recipe.variants().join(", ")
                ),
            ));
        }
        if raw.clients == 0 {
            return Err(self.error("clients", "a scenario needs at least one client"));
        }
        let seeds = self.seeds(&raw.seeds)?;
        let properties = self.properties(&raw, recipe)?;
        let fixed_properties = match &raw.fixed_properties {
            Some(names) => Some(self.property_names("fixed_properties", names)?),
            None => None,
        };
        let expect = self.expectation(&raw)?;
        let path_text = raw
            .config
            .path
            .clone()
            .unwrap_or_else(|| recipe.default_path().to_string());
        let path = self.zk_path("config.path", &path_text)?;
        let parents = match &raw.config.parents {
            Some(parents) => parents
                .iter()
                .map(|p| self.zk_path("config.parents", p))
                .collect::<Result<_, _>>()?,
            None => recipe
                .default_parents(&raw.variant)
                .iter()
                .map(|p| Path::new(*p).expect("valid default"))
                .collect(),
        };
        let fifo_dir = match &raw.properties.fifo_dir {
            Some(dir) => Some(self.zk_path("properties.fifo_dir", dir)?),
            None => Some(path.clone()),
        };
        self.check_faults(&raw)?;
        self.check_config(&raw, recipe)?;
        let name = raw.name.clone().unwrap_or_else(|| {
            self.file.file_stem().map_or_else(
                || "scenario".to_string(),
                |s| s.to_string_lossy().into_owned(),
            )
        });
        Ok(Scenario {
            file: self.file.to_path_buf(),
            name,
            file_variant: raw.variant.clone(),
            raw,
            recipe,
            seeds,
            expect,
            properties,
            fixed_properties,
            path,
            parents,
            fifo_dir,
        })
    }

    fn seeds(&self, text: &str) -> Result<Range<u64>, ScenarioError> {
        parse_seed_range(text).map_err(|e| self.error("seeds", e))
    }

    fn properties(
        &self,
        raw: &ScenarioFile,
        recipe: RecipeKind,
    ) -> Result<BTreeSet<Property>, ScenarioError> {
        if raw.properties.check.is_empty() {
            return Ok(recipe.default_properties().into_iter().collect());
        }
        self.property_names("properties.check", &raw.properties.check)
    }

    fn property_names(
        &self,
        key: &str,
        names: &[String],
    ) -> Result<BTreeSet<Property>, ScenarioError> {
        names
            .iter()
            .map(|name| {
                name.parse::<Property>()
                    .map_err(|e| self.error(key, e.to_string()))
            })
            .collect()
    }

    fn expectation(&self, raw: &ScenarioFile) -> Result<Expectation, ScenarioError> {
        let property = match &raw.expect_property {
            Some(name) => Some(
                name.parse::<Property>()
                    .map_err(|e| self.error("expect_property", e.to_string()))?,
            ),
            None => None,
        };
        match (raw.expect.as_str(), property) {
            ("pass", None) => Ok(Expectation::Pass),
            ("pass", Some(_)) => Err(self.error(
                "expect_property",
                "only a scenario expecting a violation names one",
            )),
            ("violation", property) => Ok(Expectation::Violation(property)),
            (other, _) => Err(self.error(
                "expect",
                format!("expected `pass` or `violation`, not `{other}`"),
            )),
        }
    }

    fn zk_path(&self, key: &str, text: &str) -> Result<Path, ScenarioError> {
        Path::new(text).map_err(|e| self.error(key, e.to_string()))
    }

    fn check_faults(&self, raw: &ScenarioFile) -> Result<(), ScenarioError> {
        for (index, fault) in raw.faults.schedule.iter().enumerate() {
            if fault.client >= raw.clients {
                return Err(self.error(
                    &format!("faults.schedule[{index}].client"),
                    format!(
                        "client {} does not exist (the scenario has {} clients)",
                        fault.client, raw.clients
                    ),
                ));
            }
            if let Trigger::AtMs(at) = fault.trigger {
                if at > raw.duration_ms as f64 {
                    return Err(self.error(
                        &format!("faults.schedule[{index}].at_ms"),
                        format!(
                            "{at} ms is after the fault phase ends (duration_ms = {})",
                            raw.duration_ms
                        ),
                    ));
                }
            }
        }
        let rates = &raw.faults.rates;
        for (key, probability) in [
            ("loss_before_apply", rates.loss_before_apply),
            ("loss_after_apply", rates.loss_after_apply),
        ] {
            if !(0.0..=1.0).contains(&probability) {
                return Err(self.error(
                    &format!("faults.rates.{key}"),
                    "a probability must be within 0..=1",
                ));
            }
        }
        Ok(())
    }

    fn check_config(&self, raw: &ScenarioFile, recipe: RecipeKind) -> Result<(), ScenarioError> {
        if let Some(hosts) = &raw.config.hosts {
            if recipe != RecipeKind::Barrier || !["shared", "unique"].contains(&hosts.as_str()) {
                return Err(self.error(
                    "config.hosts",
                    "`hosts` is `shared` or `unique`, for barriers only",
                ));
            }
        }
        if let Some(mode) = &raw.config.node_mode {
            if recipe != RecipeKind::Barrier
                || !["ephemeral", "ephemeral_sequential"].contains(&mode.as_str())
            {
                return Err(self.error(
                    "config.node_mode",
                    "`node_mode` is `ephemeral` or `ephemeral_sequential`, for barriers only",
                ));
            }
        }
        if raw.config.max_leases == Some(0) {
            return Err(self.error("config.max_leases", "a semaphore needs at least one lease"));
        }
        if raw.timing.session_timeout_ms == 0 {
            return Err(self.error(
                "timing.session_timeout_ms",
                "the session timeout must be positive",
            ));
        }
        Ok(())
    }
}

/// `"A..B"` (B excluded) or a single seed `"A"`.
pub fn parse_seed_range(text: &str) -> Result<Range<u64>, String> {
    let bad = || format!("`{text}` is not a seed range like `0..1000`");
    match text.split_once("..") {
        Some((a, b)) => {
            let start: u64 = a.trim().parse().map_err(|_| bad())?;
            let end: u64 = b.trim().parse().map_err(|_| bad())?;
            if end <= start {
                return Err(format!("`{text}` is empty"));
            }
            Ok(start..end)
        }
        None => {
            let seed: u64 = text.trim().parse().map_err(|_| bad())?;
            Ok(seed..seed + 1)
        }
    }
}
