//! A lasso's cycle on the stepper: run [`LASSO_ROUNDS`] times after the
//! prefix, each round checked to bring the stepper back where the cycle
//! started ([`CycleView`]) without answering a call ([`LassoReplay`]).

use super::{AppView, Replay, ReplayError};
use crate::model::ModelRecipe;
use crate::schedule::Schedule;

/// What replaying a lasso's cycle showed (see [`replay`](super::replay)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LassoReplay {
    /// Steps before the cycle, and in it.
    pub prefix: usize,
    pub cycle: usize,
    /// Times the cycle ran.
    pub rounds: usize,
    /// After every round the stepper was back in the state the cycle
    /// started in: the server's tree (times aside), every client's session
    /// and recipe (timers relative to its clock) and application view.
    /// The stepper's inboxes are not visible and not compared.
    pub returned: bool,
    /// The clients with a pending call when the cycle started.
    pub waiting: Vec<usize>,
    /// Their calls stayed pending, and no other call was answered, through
    /// every round.
    pub pending_stayed: bool,
}

/// How many times a lasso's cycle is replayed.
pub const LASSO_ROUNDS: usize = 2;

/// What must come back after a lasso's cycle: the server's tree and
/// counters without times, each client's session with its timers relative
/// to its clock, each application's view.
#[derive(Clone, Debug, PartialEq, Eq)]
struct CycleView<R: ModelRecipe> {
    last_zxid: zk_recipes::zk::Zxid,
    nodes: Vec<NodeView>,
    sessions: Vec<zk_sim::client::ClientSession<R>>,
    apps: Vec<AppView>,
}

type NodeView = (
    zk_recipes::zk::Path,
    Option<Vec<u8>>,
    Option<zk_recipes::zk::Stat>,
    Option<i32>,
);

impl<R: ModelRecipe> Replay<'_, R> {
    /// Runs a lasso's cycle (steps `start..`) [`LASSO_ROUNDS`] times,
    /// comparing the state after each round with the one before the first.
    pub(super) fn run_cycle(
        &mut self,
        schedule: &Schedule,
        start: usize,
    ) -> Result<LassoReplay, ReplayError> {
        let before = self.cycle_view();
        let waiting: Vec<usize> = (0..self.apps.len())
            .filter(|&c| self.apps[c].pending.is_some())
            .collect();
        let (mut returned, mut pending_stayed) = (true, true);
        for _ in 0..LASSO_ROUNDS {
            for index in start..schedule.steps.len() {
                self.run_steps(schedule, index..index + 1)?;
                // No call answered: every application view keeps its call
                // and its place in the workload.
                pending_stayed &= (0..self.apps.len()).all(|c| {
                    (self.apps[c].pending, self.apps[c].cursor)
                        == (before.apps[c].pending, before.apps[c].cursor)
                });
            }
            returned &= self.cycle_view() == before;
        }
        Ok(LassoReplay {
            prefix: start,
            cycle: schedule.steps.len() - start,
            rounds: LASSO_ROUNDS,
            returned,
            waiting,
            pending_stayed,
        })
    }

    /// The stepper as a lasso's cycle must find it again (see [`CycleView`]).
    fn cycle_view(&self) -> CycleView<R> {
        let server = self.stepper.server();
        let nodes = server
            .paths()
            .into_iter()
            .map(|path| {
                let stat = server.stat(&path).map(|stat| zk_recipes::zk::Stat {
                    ctime_ms: 0,
                    mtime_ms: 0,
                    ..stat
                });
                let data = server.data(&path).map(<[u8]>::to_vec);
                let counter = server.sequence_counter(&path);
                (path, data, stat, counter)
            })
            .collect();
        let sessions = (0..self.apps.len())
            .map(|c| {
                let mut session = self.stepper.client(c).clone();
                let now = session.now_ms;
                session.now_ms = 0;
                for due in session.timers.values_mut() {
                    *due = due.saturating_sub(now);
                }
                session
            })
            .collect();
        CycleView {
            last_zxid: server.last_zxid(),
            nodes,
            sessions,
            apps: self.apps.clone(),
        }
    }
}
