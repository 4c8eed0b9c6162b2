//! `[timing]` and `ensemble`: session, reaper, tick and latency settings
//! in their ranges, an odd ensemble of at most seven servers, and the
//! settings only an ensemble has refused on one server.

use super::{Checked, Checker};
use crate::scenario::file::ScenarioFile;
use crate::scenario::limits as limit;

impl Checker<'_> {
    pub(super) fn check_timing(&self, raw: &ScenarioFile) -> Checked<()> {
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
}
