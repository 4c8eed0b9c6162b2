//! What a scenario judges and expects: the properties it checks (each one
//! applies to the recipe and can fail with this configuration), the
//! settings a property reads (`herd_bound`, `fifo_dir`), the expected
//! outcome and signature, and a `[catalog]` entry.

use super::{Checked, Checker};
use crate::oracles::Property;
use crate::scenario::clip;
use crate::scenario::file::ScenarioFile;
use crate::scenario::limits as limit;
use crate::scenario::registry::{RecipeKind, RecipeSpec};
use crate::scenario::Expectation;
use std::collections::BTreeSet;
use zk_recipes::zk::Path;

impl Checker<'_> {
    /// `properties.herd_bound`: in range, read by a checked `herd`, and
    /// below the number of other clients one release could wake (a bound
    /// no release can exceed hides every herd).
    pub(super) fn herd_bound(
        &self,
        raw: &ScenarioFile,
        judged: &BTreeSet<Property>,
    ) -> Checked<()> {
        let key = "properties.herd_bound";
        let bound = u64::from(raw.properties.herd_bound);
        self.within(key, bound, limit::HERD_BOUND, "")?;
        if !judged.contains(&Property::Herd) {
            if self.written("properties", "herd_bound") {
                return Err(self.error(
                    key,
                    "only the `herd` property reads the bound, and this scenario does not check it (`properties.check`, `fixed_properties`)",
                ));
            }
            return Ok(());
        }
        let others = (raw.clients as u64).saturating_sub(1);
        if bound >= others {
            return Err(self.error(
                key,
                format!(
                    "a release can wake at most the {others} other client(s), so a bound of {bound} can never be exceeded and `herd` could not fail: use a bound below {others}, or more clients"
                ),
            ));
        }
        Ok(())
    }

    /// `properties.fifo_dir`: FIFO orders the children of one directory,
    /// so it must be the one the recipe's nodes live in (its `config.path`
    /// or default directory), read by a checked `fifo`. Any other directory
    /// holds none of the contenders' nodes and FIFO could not fail.
    pub(super) fn fifo_dir(
        &self,
        raw: &ScenarioFile,
        judged: &BTreeSet<Property>,
        path: &Path,
    ) -> Checked<Path> {
        let key = "properties.fifo_dir";
        let Some(text) = &raw.properties.fifo_dir else {
            return Ok(path.clone());
        };
        let dir = self.zk_path(key, text)?;
        if !judged.contains(&Property::Fifo) {
            return Err(self.error(
                key,
                "only the `fifo` property reads the directory, and this scenario does not check it (`properties.check`, `fixed_properties`)",
            ));
        }
        if dir != *path {
            return Err(self.error(
                key,
                format!(
                    "`{}` is not the directory the recipe's nodes live in (`{}`: `config.path`, or the recipe's default), so FIFO would judge no acquisition and could not fail: leave `fifo_dir` out",
                    clip(dir.as_str()),
                    clip(path.as_str())
                ),
            ));
        }
        Ok(dir)
    }

    pub(super) fn property_names(
        &self,
        key: &str,
        names: &[String],
    ) -> Checked<BTreeSet<Property>> {
        names
            .iter()
            .map(|name| match name.parse::<Property>() {
                Ok(Property::Invariant) => Err(self.error(
                    key,
                    "`invariant` is not selected: a recipe's own invariants (`ctx.violation`, `Observation::Violated`) are always judged",
                )),
                Ok(property) => Ok(property),
                Err(e) => Err(self.error(key, e.to_string())),
            })
            .collect()
    }

    /// Every property applies to the recipe, and could fail with this many
    /// clients.
    pub(super) fn applicable(
        &self,
        key: &str,
        raw: &ScenarioFile,
        recipe: &RecipeSpec,
        properties: &BTreeSet<Property>,
    ) -> Checked<()> {
        let kind = recipe.kind;
        for property in properties {
            if !kind.applicable_properties().contains(property) {
                let names: Vec<&str> = kind
                    .applicable_properties()
                    .iter()
                    .map(|p| p.name())
                    .collect();
                return Err(self.error(
                    key,
                    format!(
                        "`{property}` does not apply to `{}` (kind: {}; it would pass without checking anything); the properties of its kind: {}",
                        recipe.name,
                        kind.name(),
                        names.join(", ")
                    ),
                ));
            }
            if let Some(why) = self.unfalsifiable(raw, kind, *property) {
                return Err(self.error(key, format!("`{property}` cannot fail here: {why}")));
            }
        }
        Ok(())
    }

    /// Why a property cannot be violated with this configuration, if so.
    fn unfalsifiable(
        &self,
        raw: &ScenarioFile,
        recipe: RecipeKind,
        property: Property,
    ) -> Option<String> {
        let clients = raw.clients as u64;
        let contended = matches!(
            property,
            Property::MutualExclusion
                | Property::FencedMutualExclusion
                | Property::OneLeader
                | Property::Fifo
                | Property::Herd
        );
        let holders = match recipe {
            RecipeKind::Semaphore => u64::from(raw.config.max_leases.unwrap_or(1)),
            _ => 1,
        };
        if contended && clients <= holders {
            return Some(format!(
                "{clients} client(s) never contend for {holders} holder slot(s); use more clients"
            ));
        }
        if property == Property::Fifo && recipe == RecipeKind::Semaphore {
            return Some(
                "a semaphore grants leases, and FIFO judges exclusive acquisitions only"
                    .to_string(),
            );
        }
        let size = raw.config.barrier_size.unwrap_or(raw.clients) as u64;
        if property == Property::Barrier && size < 2 {
            return Some("a barrier of one member never holds anyone back".to_string());
        }
        None
    }

    /// `[catalog]`: a short bug name, a fixed variant of the recipe, a
    /// model of a few clients, and a signature to count seeds by. (The
    /// model's property and fault budget are checked by `zkcheck bugs`,
    /// which knows the models.)
    pub(super) fn catalog(&self, raw: &ScenarioFile, recipe: &RecipeSpec) -> Checked<()> {
        let Some(catalog) = &raw.catalog else {
            return Ok(());
        };
        let short = |c: char| c.is_ascii_alphanumeric();
        if catalog.bug.is_empty() || catalog.bug.len() > 8 || !catalog.bug.chars().all(short) {
            return Err(self.error(
                "catalog.bug",
                format!(
                    "`{}` is not a bug number like `9` or `5a`, nor a short name like `crate1` (letters and digits, at most 8)",
                    clip(&catalog.bug)
                ),
            ));
        }
        let fixed = catalog.fixed_variant();
        if recipe.variant(fixed).is_none() {
            return Err(self.error(
                "catalog.fixed",
                format!(
                    "the variant that must hold: {}",
                    recipe.unknown_variant(fixed)
                ),
            ));
        }
        if raw.expect_signature.is_none() {
            return Err(self.error(
                "catalog",
                "a catalog entry names the signature its seeds must show (`expect_signature`)",
            ));
        }
        if let Some(model) = &catalog.model {
            self.within(
                "catalog.model.clients",
                model.clients,
                1..=limit::MAX_MODEL_CLIENTS,
                "",
            )?;
            let written = |key: &str| {
                self.table
                    .get("catalog")
                    .and_then(|catalog| catalog.get("model"))
                    .and_then(toml::Value::as_table)
                    .is_some_and(|model| model.contains_key(key))
            };
            if model.servers == 1 && written("lag") {
                return Err(self.error(
                    "catalog.model.lag",
                    "bounds the follower's lag, and a model of one server has no follower: set `servers = 2`, or leave `lag` out",
                ));
            }
            if model.servers == 1 && written("revalidate") {
                return Err(self.error(
                    "catalog.model.revalidate",
                    "is about reconnects to a follower, and a model of one server has none: set `servers = 2`, or leave `revalidate` out",
                ));
            }
        }
        Ok(())
    }

    /// `expect_signature`: `property/mechanism`, a known mechanism, the
    /// expected property's.
    pub(super) fn expect_signature(
        &self,
        raw: &ScenarioFile,
        expect: &Expectation,
    ) -> Checked<Option<String>> {
        let Some(signature) = &raw.expect_signature else {
            return Ok(None);
        };
        let key = "expect_signature";
        let Expectation::Violation(Some(property)) = expect else {
            return Err(self.error(
                key,
                "only a scenario expecting a violation of a named property (`expect_property`) names a signature",
            ));
        };
        let (named, mechanism) = signature.split_once('/').ok_or_else(|| {
            self.error(
                key,
                format!("`{}` is not `property/mechanism`", clip(signature)),
            )
        })?;
        if named != property.name() {
            return Err(self.error(
                key,
                format!(
                    "the signature's property `{}` is not `expect_property` (`{property}`)",
                    clip(named)
                ),
            ));
        }
        if !crate::finding::MECHANISMS.contains(&mechanism) {
            return Err(self.error(
                key,
                format!(
                    "unknown mechanism `{}` (expected one of: {})",
                    clip(mechanism),
                    crate::finding::MECHANISMS.join(", ")
                ),
            ));
        }
        Ok(Some(signature.clone()))
    }

    pub(super) fn expectation(
        &self,
        raw: &ScenarioFile,
        checked: &BTreeSet<Property>,
    ) -> Checked<Expectation> {
        let property = match &raw.expect_property {
            Some(name) => {
                let property = name
                    .parse::<Property>()
                    .map_err(|e| self.error("expect_property", e.to_string()))?;
                if !checked.contains(&property) {
                    return Err(self.error(
                        "expect_property",
                        format!(
                            "`{property}` is not among the properties checked (`properties.check`)"
                        ),
                    ));
                }
                Some(property)
            }
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
                format!("expected `pass` or `violation`, not `{}`", clip(other)),
            )),
        }
    }
}
