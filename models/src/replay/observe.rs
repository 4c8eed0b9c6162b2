//! What the replay shows the simulator's oracles and the application
//! views: each client's outcomes as they come, and a diagnosis for every
//! new violation from the stepper as it is at that moment.

use super::Replay;
use crate::model::ModelRecipe;
use zk_recipes::zk::SessionId;
use zk_recipes::{Observation, Observe};
use zk_sim::diagnosis::diagnose_undiagnosed;
use zk_sim::oracles::{Seen, View};

impl<R: ModelRecipe> Replay<'_, R> {
    /// Hands every client's new outcomes to the oracles and its application.
    pub(super) fn observe_outcomes(&mut self) {
        for c in 0..self.apps.len() {
            for outcome in self.stepper.take_outcomes(c) {
                let observation = outcome.observe();
                self.seen(c, Seen::Outcome(observation.clone()));
                self.answer(c, &observation);
            }
        }
    }

    /// The application side of an outcome (as `crate::app` does it).
    fn answer(&mut self, c: usize, observation: &Observation) {
        let app = &mut self.apps[c];
        let completes_call = match observation {
            Observation::Acquired { .. } => {
                app.holding = true;
                true
            }
            Observation::Released => {
                app.holding = false;
                true
            }
            Observation::Lost => {
                app.holding = false;
                app.pending == Some(true)
            }
            _ => true,
        };
        if completes_call && app.pending.is_some() {
            app.pending = None;
            app.last_call_failed = matches!(
                observation,
                Observation::Failed { .. } | Observation::TimedOut
            );
        }
    }

    pub(super) fn seen(&mut self, c: usize, seen: Seen) {
        let sessions: Vec<Option<SessionId>> = (0..self.apps.len())
            .map(|k| self.stepper.client(k).session_id)
            .collect();
        let view = View {
            server: self.stepper.server(),
            sessions: &sessions,
        };
        self.oracles.seen(self.now_ns, c, &seen, &view);
        self.diagnose_new();
    }

    /// Attaches a diagnosis to every violation that has none yet, from the
    /// stepper as it is now (the moment of the violation). A client with
    /// no call waiting for its outcome is done: the replay makes no new
    /// calls once the schedule is over.
    pub(super) fn diagnose_new(&mut self) {
        if !self.oracles.has_undiagnosed() {
            return;
        }
        let done: Vec<bool> = self.apps.iter().map(|app| app.pending.is_none()).collect();
        let model = self.model;
        let scene = self
            .stepper
            .scene(&done, model.oracles.fifo_parent.as_ref());
        diagnose_undiagnosed(self.oracles.violations_mut(), &scene);
    }
}
