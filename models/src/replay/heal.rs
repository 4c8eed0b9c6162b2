//! After the schedule: healing the run (no faults, no new calls) until
//! nothing moves, then the liveness verdict on calls still waiting and
//! the end-of-run checks once every workload is done.

use super::Replay;
use crate::model::ModelRecipe;
use crate::workload::Gate;
use std::fmt::Write as _;
use zk_sim::client::ConnectionState;
use zk_sim::oracles::{Property, Violation};

/// Heal rounds after the schedule; a healed run settles long before.
const HEAL_ROUNDS_MAX: usize = 10_000;

impl<R: ModelRecipe> Replay<'_, R> {
    /// Runs without faults and without new calls until nothing moves.
    pub(super) fn heal(&mut self) {
        for _ in 0..HEAL_ROUNDS_MAX {
            let mut moved = false;
            for follower in 1..self.model.servers {
                while self.stepper.apply(follower) {
                    moved = true;
                }
            }
            moved |= self.expire_abandoned_sessions();
            for c in 0..self.apps.len() {
                moved |= self.heal_client(c);
                self.observe_outcomes();
            }
            if !moved {
                return;
            }
        }
    }

    /// The server expires every session a client gave up on (their
    /// timers run out while the run heals). True if one was still there.
    fn expire_abandoned_sessions(&mut self) -> bool {
        let mut moved = false;
        for c in 0..self.apps.len() {
            for generation in 0..self.apps[c].generation {
                let session = self.model.session_id(c, generation).0;
                moved |= self.expire_abandoned(c, session, 0).is_ok();
            }
        }
        moved
    }

    fn heal_client(&mut self, c: usize) -> bool {
        let alive = self
            .stepper
            .server()
            .is_session_alive(self.stepper.session_id(c));
        match self.stepper.state(c) {
            ConnectionState::Disconnected if alive => {
                self.stepper.reconnect(c);
                true
            }
            ConnectionState::Expired => false,
            _ if !alive => self.learn_expiry(c, None, 0).is_ok(),
            _ => {
                self.send(c, 0).is_ok()
                    || self.deliver(c, 0).is_ok()
                    || self.stepper.fire_next_timer(c)
            }
        }
    }

    /// Liveness and the end-of-run checks.
    pub(super) fn finish(&mut self) {
        let waiting: Vec<usize> = (0..self.apps.len())
            .filter(|&c| self.apps[c].pending.is_some())
            .collect();
        if !waiting.is_empty() {
            let mut message = String::from("after healing, calls still wait:");
            for &c in &waiting {
                let _ = write!(message, " c{c}");
            }
            self.oracles.report(Violation {
                property: Property::Liveness,
                at_ns: self.now_ns,
                message,
                events: Vec::new(),
                diagnosis: None,
                invariant: None,
            });
            self.diagnose_new();
            return;
        }
        if (0..self.apps.len()).all(|c| self.workload_done(c)) {
            self.reap_containers();
            let server = self.stepper.server().clone();
            self.oracles
                .finish(self.now_ns, &server, &self.initial_paths);
            self.diagnose_new();
        }
    }

    /// Runs the container reaper until it takes nothing more (a parent
    /// container empties once its child containers go), as the simulated
    /// world's periodic reaper would have by the end of a run.
    fn reap_containers(&mut self) {
        loop {
            let before = self.stepper.server().paths().len();
            self.stepper.reap();
            if self.stepper.server().paths().len() == before {
                return;
            }
        }
    }

    /// Every call of the client's workload was made or skipped by its gate.
    fn workload_done(&self, c: usize) -> bool {
        let app = self.apps[c];
        self.model.workload(c)[app.cursor..]
            .iter()
            .all(|step| match step.gate {
                Gate::Always => false,
                Gate::Release => !app.holding,
                Gate::AfterSuccess => app.last_call_failed,
            })
    }
}
