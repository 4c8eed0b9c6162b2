//! Heal feasibility: the one place that knows every setting whose effect
//! can outlast the heal, and refuses a scenario in which the world itself
//! cannot settle before the liveness deadline (`duration_ms + heal_ms`),
//! whatever the recipe does. Without it such a scenario fails liveness (or
//! does no work at all) and the failure reads as the recipe's.
//!
//! The heal ends every fault at `duration_ms`: disconnects, pauses, lag
//! spikes, server faults (see `world::shell::heal`). What it does not end,
//! and what a client still needs after it, is bounded here:
//! - the workload: a client caught mid-hold (or mid-work) holds for up to
//!   the longest hold, then thinks before it stops; a barrier member still
//!   arriving arrives, works and thinks ([`Checker::workload_needs_ms`]);
//! - a `silent` connection: what it holds up is delivered only when the
//!   silence ends (the heal does not shorten it for messages already sent);
//! - the reconnect and new-session delays: a client reconnects up to their
//!   longest after the heal;
//! - a steady follower lag (`timing.apply_lag_ms`): after the heal each
//!   handoff among the clients may wait one lag;
//! - tickTime × syncLimit, how long noticing a lost leader takes: the heal
//!   ends an election and rejoins a cut-off server at once, so it does not
//!   outlast the heal; it is capped at one simulated day like every other
//!   duration (it was unbounded: 1,000 days were accepted).
//!
//! Each refusal names the key and the bound it breaks; a timing at its
//! default is not refused (the defaults fit every heal window the workload
//! rule accepts but for extreme ones, and a refusal must name a line the
//! user wrote). A new setting whose effect can outlast the heal belongs
//! here.

use super::{Checked, Checker};
use crate::faults::{Fault, FaultPlan, Trigger};
use crate::scenario::file::ScenarioFile;
use crate::scenario::limits::MAX_MS;
use crate::scenario::registry::WorkloadKind;

impl Checker<'_> {
    /// What a client may still need of the heal window for its own
    /// workload once the faults are over, in ms, and what that is made of
    /// (for messages).
    pub(super) fn workload_needs_ms(raw: &ScenarioFile, kind: WorkloadKind) -> (u64, String) {
        let spec = &raw.workload;
        let think = spec.think_ms.max;
        match kind {
            WorkloadKind::Hold => (
                spec.hold_ms.max.saturating_add(think),
                format!(
                    "its longest hold ({} ms) and think ({think} ms)",
                    spec.hold_ms.max
                ),
            ),
            WorkloadKind::Barrier => (
                spec.work_ms.max.saturating_add(think),
                format!(
                    "its longest work ({} ms) and think ({think} ms)",
                    spec.work_ms.max
                ),
            ),
            WorkloadKind::Queue => (0, "nothing of its own".to_string()),
        }
    }

    /// Refuses a scenario whose world cannot settle before the liveness
    /// deadline; see the module's documentation. Runs after every value is
    /// in its declared range.
    pub(super) fn heal_feasible(
        &self,
        raw: &ScenarioFile,
        kind: WorkloadKind,
        faults: &FaultPlan,
    ) -> Checked<()> {
        let heal = raw.heal_ms;
        let (needs, made_of) = Self::workload_needs_ms(raw, kind);
        // What the heal window must hold after something that outlasts the
        // faults ends `after_ms` into it.
        let fits = |after_ms: u64| after_ms.saturating_add(needs) <= heal;
        let bound = |after: &str, after_ms: u64| {
            format!(
                "{after} ends {after_ms} ms into the heal window, and a client then still needs {needs} ms ({made_of}): {} ms in all, more than heal_ms ({heal} ms), so the world cannot settle before the liveness deadline whatever the recipe does",
                after_ms.saturating_add(needs)
            )
        };
        if !fits(0) {
            let what = match kind {
                WorkloadKind::Barrier => "work_ms",
                _ => "hold_ms",
            };
            let busy = needs.saturating_sub(raw.workload.think_ms.max);
            return Err(self.error(
                "heal_ms",
                format!(
                    "the heal window ({heal} ms) is shorter than the workload needs after the heal: a client may still be in its longest {what} ({busy} ms) and think ({} ms) before it stops, {needs} ms; raise heal_ms to at least {needs}",
                    raw.workload.think_ms.max
                ),
            ));
        }
        if kind == WorkloadKind::Barrier {
            let arrive = raw.workload.arrive_ms.max;
            if !fits(arrive) {
                return Err(self.error(
                    "workload.arrive_ms",
                    format!(
                        "a member still arriving at the heal enters up to {arrive} ms later, then works and thinks ({needs} ms): {} ms, more than heal_ms ({heal} ms); no member could have finished before the liveness deadline: shorten arrive_ms or raise heal_ms",
                        arrive.saturating_add(needs)
                    ),
                ));
            }
        }
        for (index, fault) in faults.schedule.iter().enumerate() {
            let Fault::Silent { down_ms } = fault.fault else {
                continue;
            };
            // A silence tied to a request may strike at the end of the
            // fault phase.
            let ends_ms = match fault.trigger {
                Trigger::AtMs(at) => (at.max(0.0).ceil() as u64).saturating_add(down_ms),
                Trigger::Request(_) => raw.duration_ms.saturating_add(down_ms),
            };
            let after = ends_ms.saturating_sub(raw.duration_ms);
            if !fits(after) {
                return Err(self.error(
                    &format!("faults.schedule[{index}].down_ms"),
                    bound(
                        &format!("the {down_ms} ms silence (the heal does not end a silence: what it holds up arrives when it ends)"),
                        after,
                    ),
                ));
            }
        }
        let rates = &raw.faults.rates;
        if rates.silences_per_s > 0.0 && !fits(rates.down_ms.max) {
            let down_written = self
                .table
                .get("faults")
                .and_then(|faults| faults.get("rates"))
                .and_then(toml::Value::as_table)
                .is_some_and(|rates| rates.contains_key("down_ms"));
            let key = match down_written {
                true => "faults.rates.down_ms",
                false => "faults.rates.silences_per_s",
            };
            return Err(self.error(
                key,
                bound(
                    &format!(
                        "a silence drawn at the end of the fault phase (silences_per_s > 0, up to {} ms; the heal does not end a silence)",
                        rates.down_ms.max
                    ),
                    rates.down_ms.max,
                ),
            ));
        }
        let timing = &raw.timing;
        if let Some(delay) = timing.reconnect_delay_ms {
            if delay.max == 0 {
                return Err(self.error(
                    "timing.reconnect_delay_ms",
                    "[0, 0] retries a refused connection at once, a million times a simulated second while the network is down: give a longest delay of at least 1 ms",
                ));
            }
            if !fits(delay.max) {
                return Err(self.error(
                    "timing.reconnect_delay_ms",
                    bound(
                        &format!(
                            "a client's next reconnect attempt (up to {} ms after the heal)",
                            delay.max
                        ),
                        delay.max,
                    ),
                ));
            }
        }
        let new_session = timing.new_session_delay_ms.max;
        if self.written("timing", "new_session_delay_ms") && !fits(new_session) {
            return Err(self.error(
                "timing.new_session_delay_ms",
                bound(
                    &format!("opening a new session after an expiry (up to {new_session} ms after the heal)"),
                    new_session,
                ),
            ));
        }
        // The key a refusal of the detection time names: the one written.
        let detect_key = ["sync_limit", "tick_time_ms"]
            .into_iter()
            .find(|key| self.written("timing", key))
            .map(|key| format!("timing.{key}"));
        let detect = timing.tick_time_ms.saturating_mul(timing.sync_limit);
        if let Some(key) = detect_key.as_ref().filter(|_| detect > MAX_MS) {
            return Err(self.error(
                key,
                format!(
                    "tick_time_ms × sync_limit = {} ms × {} = {detect} ms, above one simulated day ({MAX_MS} ms)",
                    timing.tick_time_ms, timing.sync_limit
                ),
            ));
        }
        // (Detection itself does not outlast the heal: the heal ends an
        // election and rejoins a cut-off server at once, world::servers.)
        if raw.ensemble > 1 {
            let lag = timing.apply_lag_ms.max;
            let chain = lag.saturating_mul(raw.clients as u64);
            if self.written("timing", "apply_lag_ms") && !fits(chain) {
                return Err(self.error(
                    "timing.apply_lag_ms",
                    bound(
                        &format!(
                            "a follower applies each commit up to {lag} ms late, and after the heal each of the {} clients may wait one lag for the one before it: the chain of waits ({chain} ms)",
                            raw.clients
                        ),
                        chain,
                    ),
                ));
            }
        }
        Ok(())
    }
}
