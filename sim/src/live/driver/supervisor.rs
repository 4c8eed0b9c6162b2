//! The supervisor of a live run: it moves the run through its phases
//! (faults until the fault phase ends or every workload is done, then the
//! heal up to the liveness deadline, then settle), judges liveness at the
//! deadline, runs the end checks against the real tree, and tells the
//! connection tasks to close.

use super::TICK_MS;
use crate::live::common::{end_tree, judge_end, judge_liveness, ClientProgress};
use crate::live::run_state::{lock, Phase, Run};
use crate::live::Backend;
use crate::world::{SimRecipe, WorldConfig};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use zk_recipes::zk::Path;

/// Moves the run through its phases and runs the end checks.
pub(super) struct Supervisor<R: SimRecipe> {
    pub(super) run: Arc<Mutex<Run<R>>>,
    pub(super) backend: Arc<dyn Backend>,
    pub(super) config: WorldConfig,
    pub(super) root: Path,
    pub(super) initial: BTreeSet<Path>,
}

impl<R: SimRecipe> Supervisor<R> {
    pub(super) async fn run(self) {
        let t0 = lock(&self.run).t0;
        let phase_end = t0 + self.config.fault_phase_ms.saturating_mul(1_000_000);
        let heal_ns = self.config.heal_ms.saturating_mul(1_000_000);
        let cut_short = loop {
            self.backend.sleep(TICK_MS).await;
            if self.harness_failed() {
                break true;
            }
            let now = self.backend.now_ns();
            let settle_until = {
                let mut run = lock(&self.run);
                if self.config.stop_on_violation && run.oracles.has_violation() {
                    break true;
                }
                let all_done = run.clients.iter().all(|slot| slot.workload_done);
                match run.phase {
                    Phase::Faults if all_done || now >= phase_end => {
                        run.phase = Phase::Healing {
                            deadline_ns: now + heal_ns,
                        };
                        run.wake_all();
                        None
                    }
                    Phase::Healing { deadline_ns } if all_done => Some(deadline_ns),
                    Phase::Healing { deadline_ns } if now >= deadline_ns => {
                        self.liveness(&mut run, now);
                        break false;
                    }
                    _ => None,
                }
            };
            if let Some(deadline_ns) = settle_until {
                self.settle(deadline_ns).await;
                break false;
            }
        };
        {
            let mut run = lock(&self.run);
            run.phase = Phase::Done;
            let done = run.clients.iter().filter(|slot| slot.workload_done).count();
            run.workloads_done_at_verdict = Some(done);
        }
        let cut_short = cut_short || {
            let run = lock(&self.run);
            self.config.stop_on_violation && run.oracles.has_violation()
        };
        if !cut_short {
            self.end_checks().await;
            self.harness_failed();
        }
        let mut run = lock(&self.run);
        run.closing = true;
        run.wake_all();
    }

    /// Whether the backend ran out of a local resource (descriptors, ...);
    /// if so the run's failure says so and the run ends without a verdict.
    fn harness_failed(&self) -> bool {
        let Some(failure) = self.backend.local_failure() else {
            return false;
        };
        lock(&self.run).failure.get_or_insert(failure);
        true
    }

    /// Quiet time, then until every client is connected and idle (at most
    /// until the deadline), as the simulator settles before its end checks.
    async fn settle(&self, deadline_ns: u64) {
        self.backend.sleep(self.config.settle_ms).await;
        while self.backend.now_ns() < deadline_ns && !lock(&self.run).settled() {
            self.backend.sleep(TICK_MS).await;
        }
    }

    fn liveness(&self, run: &mut Run<R>, now: u64) {
        let progress = run.clients.iter().map(|slot| ClientProgress {
            done: slot.workload_done,
            last_call: slot.last_call.clone(),
        });
        judge_liveness(&mut run.oracles, progress, run.t0, now, self.config.heal_ms);
    }

    /// Leaked nodes (against a snapshot of the real tree, sessions still
    /// open) and undelivered items.
    async fn end_checks(&self) {
        let now = self.backend.now_ns();
        let tree = end_tree(&*self.backend, &self.root).await;
        let mut run = lock(&self.run);
        match tree {
            Ok(tree) => {
                let at = now.saturating_sub(run.t0);
                let run = &mut *run;
                judge_end(&mut run.oracles, at, &tree, &self.initial, &run.sessions);
                let tallies: Vec<_> = run
                    .clients
                    .iter()
                    .map(|slot| slot.session.creates)
                    .collect();
                run.oracles.judge_churn(at, &tallies);
            }
            Err(failure) => {
                run.failure.get_or_insert(failure);
            }
        }
    }
}
