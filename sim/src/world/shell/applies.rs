//! The followers' pace: each applies the leader's commits in log order, a
//! lag after each commit (drawn per commit, or chosen once per server in
//! an explored run), later under a lag spike, never while cut off.

use super::super::events::Event;
use super::super::shared::{ms_to_ns, trace, Shared, SimRecipe};
use crate::server::ShuffledOrder;

impl<R: SimRecipe> Shared<R> {
    /// Schedules one apply per transaction each follower has not applied
    /// nor been scheduled to, each a drawn lag after now and after its
    /// previous one (a follower applies in log order).
    /// A follower cut off from the leader applies nothing (none is
    /// scheduled); one under a lag spike applies later.
    pub(in crate::world) fn schedule_applies(&mut self) {
        if self.ensemble.servers() == 1 {
            return;
        }
        let now = self.now_ns();
        for server in 0..self.ensemble.servers() {
            if !self.ensemble.is_in_quorum(server) {
                continue;
            }
            let spike_ns = self.servers.lag_spike_ns(server, now);
            while self.applies_scheduled[server] < self.ensemble.lag(server) {
                let lag_ns = ms_to_ns(self.apply_lag_ms(server)).saturating_add(spike_ns);
                let at = now.saturating_add(lag_ns).max(self.last_apply_ns[server]);
                self.last_apply_ns[server] = at;
                self.applies_scheduled[server] += 1;
                let round = self.servers.apply_rounds[server];
                self.schedule(at, Event::Apply { server, round });
            }
        }
    }

    /// How long after a commit `server` applies it: drawn per commit from
    /// the seed; in an explored run, one of the range's points the tape
    /// chose for the server, the same for the whole run.
    fn apply_lag_ms(&mut self, server: usize) -> u64 {
        let range = self.config.apply_lag_ms;
        let Some(tape) = self.chooser.as_mut() else {
            return range.draw(&mut self.rng.lag);
        };
        if let Some(lag_ms) = self.explored_lags_ms[server] {
            return lag_ms;
        }
        let lag_ms = tape.duration_ms(range.min, range.max.max(range.min));
        self.explored_lags_ms[server] = Some(lag_ms);
        if range.min < range.max {
            trace!(
                self,
                None,
                Phase,
                "choice: server {server} applies each commit {lag_ms} ms after it, this run"
            );
        }
        lag_ms
    }

    pub(super) fn follower_applies(&mut self, server: usize, round: u64) {
        if round != self.servers.apply_rounds[server] {
            return;
        }
        self.applies_scheduled[server] = self.applies_scheduled[server].saturating_sub(1);
        let now_ms = self.now_ms() as i64;
        self.ensemble.set_time_ms(now_ms);
        let mut order = ShuffledOrder(&mut self.rng.child_order);
        let events = self.ensemble.apply_next(server, &mut order);
        self.dispatch(events);
        self.schedule_applies();
    }
}
