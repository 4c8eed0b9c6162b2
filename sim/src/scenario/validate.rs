//! The one validation layer between a parsed scenario file and a run: every
//! number is checked against its declared range ([`super::limits`]), every
//! cross-field rule is checked, and every refusal names the file, the line
//! and the dotted key (with the array index: `faults.schedule[2].pause_ms`).
//! What passes here runs without a panic, an overflow or a hang, and can
//! fail: a property that does not apply to the recipe is refused.
//!
//! This file holds the checker's helpers and the order of the checks;
//! each section's rules are in a file of their own: `recipe` (directory,
//! parents, config, workload), `timing` (timing and ensemble), `faults`,
//! `heal` (what can outlast the heal) and `properties` (what is judged and
//! expected, and the catalog).

use super::error::{clip, ScenarioError};
use super::file::ScenarioFile;
use super::limits::{self as limit, MAX_MS};
use super::registry::SimRecipes;
use super::seeds::SeedRange;
use super::Scenario;
use crate::faults::MsRange;
use crate::oracles::Property;
use std::collections::BTreeSet;
use std::fmt::Display;
use std::ops::RangeInclusive;
use std::path::Path as FsPath;
use zk_recipes::zk::Path;

mod faults;
mod heal;
mod properties;
mod recipe;
mod timing;

/// Checks one parsed file; `table` is the same source as plain TOML, to
/// tell a key that was written from one that took its default.
pub(super) struct Checker<'a> {
    pub file: &'a FsPath,
    pub source: &'a str,
    pub table: &'a toml::Table,
    /// The recipes a scenario may name.
    pub recipes: &'a SimRecipes,
}

type Checked<T> = Result<T, ScenarioError>;

impl Checker<'_> {
    fn error(&self, key: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError::at_key(self.file, self.source, key, message)
    }

    fn within<T: PartialOrd + Display>(
        &self,
        key: &str,
        value: T,
        range: RangeInclusive<T>,
        unit: &str,
    ) -> Checked<()> {
        if range.contains(&value) {
            return Ok(());
        }
        Err(self.error(
            key,
            format!(
                "{value}{unit} is outside {}..={}{unit}",
                range.start(),
                range.end()
            ),
        ))
    }

    /// A `[min, max]` range of milliseconds: ordered, max at most a day.
    fn ms_range(&self, key: &str, range: MsRange) -> Checked<()> {
        if range.min > range.max {
            return Err(self.error(
                key,
                format!(
                    "[{}, {}] is reversed: write [min, max]",
                    range.min, range.max
                ),
            ));
        }
        self.within(key, range.max, 0..=MAX_MS, " ms")
    }

    fn real(&self, key: &str, value: f64, range: RangeInclusive<f64>) -> Checked<()> {
        if !value.is_finite() {
            return Err(self.error(key, format!("{value} is not a finite number")));
        }
        if range.contains(&value) {
            return Ok(());
        }
        // `{:e}` for the huge ones: 1e300 is not shown with 300 digits.
        let shown = if value.abs() >= 1e15 {
            format!("{value:e}")
        } else {
            value.to_string()
        };
        Err(self.error(
            key,
            format!("{shown} is outside {}..={}", range.start(), range.end()),
        ))
    }

    pub fn check(&self, raw: ScenarioFile) -> Checked<Scenario> {
        let recipe = self
            .recipes
            .find(&raw.recipe)
            .map_err(|e| self.error("recipe", e))?;
        let variant = recipe
            .variant(&raw.variant)
            .ok_or_else(|| self.error("variant", recipe.unknown_variant(&raw.variant)))?;
        let name = self.name(&raw)?;
        if raw.description.chars().count() > limit::MAX_DESCRIPTION_CHARS {
            return Err(self.error(
                "description",
                format!("longer than {} characters", limit::MAX_DESCRIPTION_CHARS),
            ));
        }
        self.within("clients", raw.clients as u64, limit::CLIENTS, "")?;
        let seeds = SeedRange::parse(&raw.seeds).map_err(|e| self.error("seeds", e))?;
        self.within("duration_ms", raw.duration_ms, limit::PHASE_MS, " ms")?;
        self.within("heal_ms", raw.heal_ms, limit::PHASE_MS, " ms")?;
        let path = self.recipe_path(&raw, &recipe)?;
        let parents = self.parents(&raw, &recipe, variant, &path)?;
        self.check_config(&raw, recipe.kind, variant, &path, &parents)?;
        self.check_workload(&raw, variant.workload)?;
        self.check_timing(&raw)?;
        let faults = self.faults(&raw)?;
        self.heal_feasible(&raw, variant.workload, &faults)?;
        let properties = match raw.properties.check.is_empty() {
            true => recipe.kind.default_properties().into_iter().collect(),
            false => self.property_names("properties.check", &raw.properties.check)?,
        };
        self.applicable("properties.check", &raw, &recipe, &properties)?;
        let fixed_properties = match &raw.fixed_properties {
            Some(names) if names.is_empty() => {
                return Err(self.error(
                    "fixed_properties",
                    "an empty list checks nothing, and the fixed variant would pass without a check: name its properties, or leave `fixed_properties` out to check `properties.check`",
                ))
            }
            Some(names) => {
                let set = self.property_names("fixed_properties", names)?;
                self.applicable("fixed_properties", &raw, &recipe, &set)?;
                Some(set)
            }
            None => None,
        };
        let expect = self.expectation(&raw, &properties)?;
        let expect_signature = self.expect_signature(&raw, &expect)?;
        self.catalog(&raw, &recipe)?;
        let judged: BTreeSet<Property> = properties
            .iter()
            .chain(fixed_properties.iter().flatten())
            .copied()
            .collect();
        self.herd_bound(&raw, &judged)?;
        let fifo_dir = self.fifo_dir(&raw, &judged, &path)?;
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
            fifo_dir: Some(fifo_dir),
            faults,
            expect_signature,
            all_violations: false,
        })
    }

    /// The scenario's name: as written (one short line), or the file's stem.
    fn name(&self, raw: &ScenarioFile) -> Checked<String> {
        let Some(name) = &raw.name else {
            let stem = self.file.file_stem().map(|s| s.to_string_lossy());
            return Ok(stem.map_or_else(|| "scenario".to_string(), |s| s.into_owned()));
        };
        let fault = if name.trim().is_empty() {
            Some("is empty")
        } else if name.chars().any(char::is_control) {
            Some("must be one line of printable text")
        } else if name.chars().count() > limit::MAX_NAME_CHARS {
            Some("is longer than 100 characters")
        } else {
            None
        };
        match fault {
            Some(fault) => Err(self.error("name", format!("the name {fault}"))),
            None => Ok(name.clone()),
        }
    }

    fn zk_path(&self, key: &str, text: &str) -> Checked<Path> {
        Path::new(text).map_err(|e| self.error(key, format!("`{}`: {e}", clip(text))))
    }

    /// Whether the file writes `table.key` (rather than taking its default).
    fn written(&self, table: &str, key: &str) -> bool {
        self.table
            .get(table)
            .and_then(toml::Value::as_table)
            .is_some_and(|t| t.contains_key(key))
    }
}
