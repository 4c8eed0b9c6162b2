//! The one validation layer between a parsed scenario file and a run: every
//! number is checked against its declared range ([`super::limits`]), every
//! cross-field rule is checked, and every refusal names the file, the line
//! and the dotted key (with the array index: `faults.schedule[2].pause_ms`).
//! What passes here runs without a panic, an overflow or a hang, and can
//! fail: a property that does not apply to the recipe is refused.

use super::error::{clip, ScenarioError};
use super::file::{FaultsFile, ScenarioFile};
use super::limits::{self as limit, MAX_MS};
use super::registry::{RecipeKind, RecipeSpec, SimRecipes, SimVariant, WorkloadKind};
use super::seeds::SeedRange;
use super::{Expectation, Scenario};
use crate::faults::{FaultPlan, MsRange, ScheduledFault};
use crate::oracles::Property;
use std::collections::BTreeSet;
use std::fmt::Display;
use std::ops::RangeInclusive;
use std::path::Path as FsPath;
use zk_recipes::zk::Path;

mod heal;

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

    /// `properties.herd_bound`: in range, read by a checked `herd`, and
    /// below the number of other clients one release could wake (a bound
    /// no release can exceed hides every herd).
    fn herd_bound(&self, raw: &ScenarioFile, judged: &BTreeSet<Property>) -> Checked<()> {
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
    fn fifo_dir(
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

    fn recipe_path(&self, raw: &ScenarioFile, recipe: &RecipeSpec) -> Checked<Path> {
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
    fn parents(
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

    fn check_config(
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

    fn check_workload(&self, raw: &ScenarioFile, kind: WorkloadKind) -> Checked<()> {
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

    fn check_timing(&self, raw: &ScenarioFile) -> Checked<()> {
        let timing = &raw.timing;
        let ms =
            |key: &str, value, range| self.within(&format!("timing.{key}"), value, range, " ms");
        ms(
            "session_timeout_ms",
            timing.session_timeout_ms,
            limit::SESSION_TIMEOUT_MS,
        )?;
        if let Some(tick_ms) = timing.expiry_tick_ms {
            return Err(self.error(
                "timing.expiry_tick_ms",
                format!(
                    "the servers expire sessions on their tickTime, which is `tick_time_ms` now: \
                     write `tick_time_ms = {tick_ms}`"
                ),
            ));
        }
        ms(
            "reaper_interval_ms",
            timing.reaper_interval_ms,
            limit::REAPER_INTERVAL_MS,
        )?;
        ms("settle_ms", timing.settle_ms, limit::SETTLE_MS)?;
        ms("tick_time_ms", timing.tick_time_ms, limit::TICK_TIME_MS)?;
        self.within("timing.sync_limit", timing.sync_limit, 1..=1_000, " ticks")?;
        if let Some(delay) = timing.reconnect_delay_ms {
            self.ms_range("timing.reconnect_delay_ms", delay)?;
        }
        self.ms_range("timing.new_session_delay_ms", timing.new_session_delay_ms)?;
        self.ms_range("timing.apply_lag_ms", timing.apply_lag_ms)?;
        self.ms_range("timing.election_ms", timing.election_ms)?;
        self.ensemble(raw)?;
        let latency = &timing.latency;
        let us = |key: &str, value, range| {
            self.within(&format!("timing.latency.{key}"), value, range, " µs")
        };
        us("min_us", latency.min_us, limit::LATENCY_US)?;
        us("max_us", latency.max_us, limit::LATENCY_US)?;
        if latency.min_us > latency.max_us {
            return Err(self.error("timing.latency.min_us", "min_us is above max_us"));
        }
        self.real(
            "timing.latency.spike_probability",
            latency.spike_probability,
            limit::PROBABILITY,
        )?;
        let [low, high] = latency.spike_us;
        us("spike_us", high, limit::SPIKE_US)?;
        if low > high {
            return Err(self.error("timing.latency.spike_us", "reversed: write [min, max]"));
        }
        Ok(())
    }

    /// `ensemble`: 1, 3, 5 or 7 servers; `timing.apply_lag_ms`,
    /// `sync_limit`, `election_ms` and `revalidate_moves` only with
    /// followers to lag, lose or move to.
    fn ensemble(&self, raw: &ScenarioFile) -> Checked<()> {
        self.within("ensemble", raw.ensemble, limit::ENSEMBLE, " servers")?;
        if raw.ensemble.is_multiple_of(2) {
            return Err(self.error(
                "ensemble",
                format!(
                    "{} servers: an ensemble is 1, 3, 5 or 7 servers (an even one needs as large a majority as the next odd one and tolerates no more failures)",
                    raw.ensemble
                ),
            ));
        }
        // What only an ensemble has: on one server it would mean nothing,
        // and a run would seem to have checked it.
        let ensemble_only = [
            ("apply_lag_ms", "one server applies every change at once, so a follower's lag means nothing here"),
            ("sync_limit", "one server has no leader to lose and no follower to cut off, so syncLimit (how long noticing that takes) means nothing here"),
            ("election_ms", "one server has no leader to lose, so an election's length means nothing here"),
            ("revalidate_moves", "one server has no other server for a session to move to, so revalidating a moved session means nothing here"),
        ];
        if raw.ensemble == 1 {
            if let Some((key, why)) = ensemble_only
                .into_iter()
                .find(|(key, _)| self.written("timing", key))
            {
                return Err(self.error(
                    &format!("timing.{key}"),
                    format!("{why}: set `ensemble = 3` (or more), or leave `{key}` out"),
                ));
            }
        }
        Ok(())
    }

    fn faults(&self, raw: &ScenarioFile) -> Checked<FaultPlan> {
        let FaultsFile {
            schedule,
            rates,
            swarm,
        } = &raw.faults;
        if schedule.len() > limit::MAX_SCHEDULED_FAULTS {
            return Err(self.error(
                "faults.schedule",
                format!(
                    "{} entries, above the cap of {}",
                    schedule.len(),
                    limit::MAX_SCHEDULED_FAULTS
                ),
            ));
        }
        let checked = schedule
            .iter()
            .enumerate()
            .map(|(index, entry)| self.scheduled_fault(raw, index, entry))
            .collect::<Checked<Vec<_>>>()?;
        self.check_rates(raw, &checked)?;
        Ok(FaultPlan {
            schedule: checked,
            rates: rates.clone(),
            swarm: *swarm,
        })
    }

    fn scheduled_fault(
        &self,
        raw: &ScenarioFile,
        index: usize,
        entry: &crate::faults::FaultEntry,
    ) -> Checked<ScheduledFault> {
        let key = |sub: &str| format!("faults.schedule[{index}].{sub}");
        for (sub, value) in [
            ("down_ms", entry.down_ms),
            ("pause_ms", entry.pause_ms),
            ("delay_ms", entry.delay_ms),
            ("window_ms", entry.window_ms),
            ("detect_ms", entry.detect_ms),
        ] {
            if let Some(ms) = value {
                self.within(&key(sub), ms, 0..=MAX_MS, " ms")?;
            }
        }
        if let Some(at) = entry.at_ms {
            self.real(&key("at_ms"), at, 0.0..=raw.duration_ms as f64)
                .map_err(|mut e| {
                    e.message = format!(
                        "{} (a timed fault strikes within the fault phase, duration_ms = {})",
                        e.message, raw.duration_ms
                    );
                    e
                })?;
        }
        if let Some(n) = entry.request {
            self.within(&key("request"), n, limit::REQUEST_NUMBER, "")?;
        }
        if entry.client >= raw.clients {
            return Err(self.error(
                &key("client"),
                format!(
                    "client {} does not exist (the scenario has clients 0..={})",
                    entry.client,
                    raw.clients - 1
                ),
            ));
        }
        let fault = ScheduledFault::try_from(entry.clone())
            .map_err(|e| self.error(&key(e.key), e.message))?;
        if fault.fault.is_ensemble() {
            if self.schedule_entry_writes(index, "client") {
                return Err(self.error(
                    &key("client"),
                    format!(
                        "fault `{}` strikes a server, not a client: leave `client` out",
                        entry.fault
                    ),
                ));
            }
            if raw.ensemble == 1 {
                return Err(self.error(
                    &key("fault"),
                    format!(
                        "fault `{}` strikes a server of an ensemble, and this scenario has one server: set `ensemble = 3` (or more)",
                        entry.fault
                    ),
                ));
            }
            if let Some(server) = entry.server.filter(|s| *s >= raw.ensemble) {
                return Err(self.error(
                    &key("server"),
                    format!(
                        "server {server} does not exist (the ensemble has servers 0..={})",
                        raw.ensemble - 1
                    ),
                ));
            }
        }
        Ok(fault)
    }

    /// Whether `[[faults.schedule]]` entry `index` writes `key`.
    fn schedule_entry_writes(&self, index: usize, key: &str) -> bool {
        self.table
            .get("faults")
            .and_then(|faults| faults.get("schedule"))
            .and_then(|schedule| schedule.get(index))
            .and_then(toml::Value::as_table)
            .is_some_and(|entry| entry.contains_key(key))
    }

    fn check_rates(&self, raw: &ScenarioFile, schedule: &[ScheduledFault]) -> Checked<()> {
        let rates = &raw.faults.rates;
        let key = |sub: &str| format!("faults.rates.{sub}");
        for (sub, probability) in [
            ("loss_before_apply", rates.loss_before_apply),
            ("loss_after_apply", rates.loss_after_apply),
        ] {
            self.real(&key(sub), probability, limit::PROBABILITY)?;
        }
        if rates.loss_before_apply + rates.loss_after_apply > 1.0 {
            return Err(self.error(
                &key("loss_after_apply"),
                "loss_before_apply + loss_after_apply is above 1",
            ));
        }
        let per_client = [
            ("disconnects_per_s", rates.disconnects_per_s),
            ("silences_per_s", rates.silences_per_s),
            ("expiries_per_s", rates.expiries_per_s),
            ("pauses_per_s", rates.pauses_per_s),
            ("spurious_watches_per_s", rates.spurious_watches_per_s),
            ("watch_delays_per_s", rates.watch_delays_per_s),
        ];
        let seconds = raw.duration_ms as f64 / 1e3;
        let mut expected = schedule.len() as f64 + rates.reaps_per_s.max(0.0) * seconds;
        for (sub, rate) in per_client
            .into_iter()
            .chain([("reaps_per_s", rates.reaps_per_s)])
        {
            self.real(&key(sub), rate, 0.0..=limit::MAX_RATE_PER_S)?;
        }
        for (_, rate) in per_client {
            expected += rate * seconds * raw.clients as f64;
        }
        if expected > limit::MAX_RUN_FAULTS {
            return Err(self.error(
                "faults.rates",
                format!(
                    "about {expected:.0} faults expected in one run (rates × {} clients × {seconds} s, plus the schedule), above the cap of {}",
                    raw.clients,
                    limit::MAX_RUN_FAULTS
                ),
            ));
        }
        for (sub, range) in [
            ("down_ms", rates.down_ms),
            ("pause_ms", rates.pause_ms),
            ("watch_delay_ms", rates.watch_delay_ms),
            ("watch_delay_window_ms", rates.watch_delay_window_ms),
        ] {
            self.ms_range(&key(sub), range)?;
        }
        Ok(())
    }

    fn property_names(&self, key: &str, names: &[String]) -> Checked<BTreeSet<Property>> {
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
    fn applicable(
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
    fn catalog(&self, raw: &ScenarioFile, recipe: &RecipeSpec) -> Checked<()> {
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
    fn expect_signature(
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
        if !crate::diagnosis::MECHANISMS.contains(&mechanism) {
            return Err(self.error(
                key,
                format!(
                    "unknown mechanism `{}` (expected one of: {})",
                    clip(mechanism),
                    crate::diagnosis::MECHANISMS.join(", ")
                ),
            ));
        }
        Ok(Some(signature.clone()))
    }

    fn expectation(
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
