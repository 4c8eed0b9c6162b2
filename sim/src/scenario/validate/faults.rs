//! `[faults]`: each `[[faults.schedule]]` entry (its times, its client or
//! server, a server fault only in an ensemble) and `[faults.rates]` (each
//! probability and rate in range, and a cap on the faults one run may
//! expect).

use super::{Checked, Checker};
use crate::faults::{FaultPlan, ScheduledFault};
use crate::scenario::file::{FaultsFile, ScenarioFile};
use crate::scenario::limits::{self as limit, MAX_MS};

impl Checker<'_> {
    pub(super) fn faults(&self, raw: &ScenarioFile) -> Checked<FaultPlan> {
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
}
