//! The recipe's side of a scenario: its directory (`config.path`), the
//! persistent parents created before the run, the `[config]` keys its
//! variant reads, and the `[workload]` it runs (the keys its kind takes,
//! each range, and the cap on calls in one run).

use super::{Checked, Checker};
use crate::scenario::clip;
use crate::scenario::file::ScenarioFile;
use crate::scenario::limits as limit;
use crate::scenario::registry::{RecipeKind, RecipeSpec, SimVariant, WorkloadKind};
use std::collections::BTreeSet;
use zk_recipes::zk::Path;

impl Checker<'_> {
    pub(super) fn recipe_path(&self, raw: &ScenarioFile, recipe: &RecipeSpec) -> Checked<Path> {
        let path = match raw.config.path.as_deref() {
            Some(text) => self.zk_path("config.path", text)?,
            None => recipe.default_path.clone(),
        };
        if path.is_root() {
            return Err(self.error(
                "config.path",
                "the recipe's directory cannot be the root `/`: every node it creates would be a child of `/`, and ZooKeeper refuses its paths",
            ));
        }
        Ok(path)
    }

    /// The persistent nodes created before the run, top-down: each one's
    /// parent is the root or an earlier entry.
    pub(super) fn parents(
        &self,
        raw: &ScenarioFile,
        recipe: &RecipeSpec,
        variant: &SimVariant,
        path: &Path,
    ) -> Checked<Vec<Path>> {
        let key = "config.parents";
        let Some(texts) = &raw.config.parents else {
            if !variant.needs_existing_path {
                return Ok(Vec::new());
            }
            let mut chain = vec![path.clone()];
            while let Some(parent) = chain.last().and_then(Path::parent).filter(|p| !p.is_root()) {
                chain.push(parent);
            }
            chain.reverse();
            return Ok(chain);
        };
        if texts.len() > 1_000 {
            return Err(self.error(key, "more than 1000 parents"));
        }
        let mut created: BTreeSet<Path> = BTreeSet::from([Path::root()]);
        let mut parents = Vec::new();
        for text in texts {
            let parent = self.zk_path(key, text)?;
            if parent.is_root() {
                return Err(self.error(key, "`/` always exists: do not list it"));
            }
            let above = parent.parent().unwrap_or_else(Path::root);
            if !created.contains(&above) {
                return Err(self.error(
                    key,
                    format!(
                        "`{}` cannot be created: its parent `{}` does not exist by then (list parents top-down, e.g. [\"/a\", \"/a/b\"])",
                        clip(parent.as_str()),
                        clip(above.as_str())
                    ),
                ));
            }
            created.insert(parent.clone());
            if !parents.contains(&parent) {
                parents.push(parent);
            }
        }
        if variant.needs_existing_path && !created.contains(path) {
            return Err(self.error(
                key,
                format!(
                    "the {} {} expects its directory `{}` to exist before it runs: add it to `parents`",
                    recipe.name,
                    raw.variant,
                    clip(path.as_str())
                ),
            ));
        }
        Ok(parents)
    }

    pub(super) fn check_config(
        &self,
        raw: &ScenarioFile,
        recipe: RecipeKind,
        variant: &SimVariant,
        path: &Path,
        parents: &[Path],
    ) -> Checked<()> {
        let config = &raw.config;
        let reads = |key: &str| variant.config_keys.contains(&key);
        if let Some(hosts) = &config.hosts {
            if !reads("hosts") || !["shared", "unique"].contains(&hosts.as_str()) {
                return Err(self.error(
                    "config.hosts",
                    "`hosts` is `shared` or `unique`, for a variant that reads it (the original barrier)",
                ));
            }
        }
        if let Some(mode) = &config.node_mode {
            if !reads("node_mode")
                || !["ephemeral", "ephemeral_sequential"].contains(&mode.as_str())
            {
                return Err(self.error(
                    "config.node_mode",
                    "`node_mode` is `ephemeral` or `ephemeral_sequential`, for a variant that reads it (the original barrier)",
                ));
            }
        }
        let clients = raw.clients as u64;
        if let Some(leases) = config.max_leases {
            if recipe != RecipeKind::Semaphore {
                return Err(self.error("config.max_leases", "leases are for semaphores only"));
            }
            self.within(
                "config.max_leases",
                u64::from(leases),
                limit::MAX_LEASES,
                "",
            )?;
        }
        if let Some(size) = config.barrier_size {
            if recipe != RecipeKind::Barrier {
                return Err(self.error("config.barrier_size", "a size is for barriers only"));
            }
            if !(1..=clients).contains(&(size as u64)) {
                return Err(self.error(
                    "config.barrier_size",
                    format!("{size} members cannot meet among {clients} clients: the size is 1..={clients}"),
                ));
            }
        }
        if let Some(start) = config.sequence_start {
            self.within(
                "config.sequence_start",
                i64::from(start),
                limit::SEQUENCE_START,
                "",
            )?;
            if !parents.contains(path) {
                return Err(self.error(
                    "config.sequence_start",
                    format!(
                        "the counter of `{}` can only be set if it is created before the run: add it to `config.parents`",
                        clip(path.as_str())
                    ),
                ));
            }
        }
        Ok(())
    }

    pub(super) fn check_workload(&self, raw: &ScenarioFile, kind: WorkloadKind) -> Checked<()> {
        if let Some(toml::Value::Table(workload)) = self.table.get("workload") {
            for key in workload.keys() {
                if !kind.keys().contains(&key.as_str()) {
                    return Err(self.error(
                        &format!("workload.{key}"),
                        format!(
                            "this recipe's workload does not read `{}` (it takes: {})",
                            clip(key),
                            kind.keys().join(", ")
                        ),
                    ));
                }
            }
        }
        let spec = &raw.workload;
        let clients = raw.clients as u64;
        self.ms_range("workload.think_ms", spec.think_ms)?;
        let (key, per_client, range) = match kind {
            WorkloadKind::Hold => {
                self.ms_range("workload.hold_ms", spec.hold_ms)?;
                ("workload.cycles", u64::from(spec.cycles), limit::CYCLES)
            }
            WorkloadKind::Queue => {
                if clients < 2 {
                    return Err(self.error(
                        "clients",
                        "a queue needs at least 2 clients: a producer and a consumer",
                    ));
                }
                if !(1..clients).contains(&(spec.producers as u64)) {
                    return Err(self.error(
                        "workload.producers",
                        format!(
                            "{} producers leave no consumer among {clients} clients: producers are 1..={}",
                            spec.producers,
                            clients - 1
                        ),
                    ));
                }
                self.within(
                    "workload.take_wait_ms",
                    spec.take_wait_ms,
                    limit::TAKE_WAIT_MS,
                    " ms",
                )?;
                ("workload.items", u64::from(spec.items), limit::ITEMS)
            }
            WorkloadKind::Barrier => {
                self.ms_range("workload.work_ms", spec.work_ms)?;
                self.ms_range("workload.arrive_ms", spec.arrive_ms)?;
                ("workload.rounds", u64::from(spec.rounds), limit::ROUNDS)
            }
        };
        self.within(key, per_client, range, "")?;
        let calls = per_client.saturating_mul(clients);
        if calls > limit::MAX_RUN_CALLS {
            return Err(self.error(
                key,
                format!(
                    "{per_client} per client × {clients} clients = {calls} calls in one run, above the cap of {}",
                    limit::MAX_RUN_CALLS
                ),
            ));
        }
        Ok(())
    }
}
