//! The handle a workload drives its recipe through in a live run: the same
//! [`App`] the simulator's workloads use, in wall-clock time. A call is
//! handed to the client's connection task (which owns the session layer);
//! outcomes come back from it. While the client is paused (a fault), its
//! application is frozen too, as a paused process is.

use super::run_state::{Phase, Run};
use super::Backend;
use crate::faults::MsRange;
use crate::oracles::{ObserveCall, Seen};
use crate::world::app::run_state_in;
use crate::world::{App, SimRecipe};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;
use zk_recipes::FencingToken;

/// How often a frozen application looks whether its pause is over.
const PAUSE_POLL_MS: u64 = 5;

/// One client's application side in a live run.
pub struct LiveClient<R: SimRecipe> {
    index: usize,
    run: Arc<Mutex<Run<R>>>,
    backend: Arc<dyn Backend>,
}

impl<R: SimRecipe> Clone for LiveClient<R> {
    fn clone(&self) -> Self {
        LiveClient {
            index: self.index,
            run: self.run.clone(),
            backend: self.backend.clone(),
        }
    }
}

impl<R: SimRecipe> LiveClient<R> {
    pub(super) fn new(index: usize, run: Arc<Mutex<Run<R>>>, backend: Arc<dyn Backend>) -> Self {
        LiveClient {
            index,
            run,
            backend,
        }
    }

    fn run(&self) -> MutexGuard<'_, Run<R>> {
        self.run
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Returns once the client is not paused.
    async fn unpaused(&self) {
        while self.run().clients[self.index].paused {
            self.backend.sleep(PAUSE_POLL_MS).await;
        }
    }

    /// Waits until the client has its first session.
    pub(super) async fn connected(&self) {
        std::future::poll_fn(|cx| {
            let mut run = self.run();
            let done = run.phase == Phase::Done;
            let slot = &mut run.clients[self.index];
            if slot.session.session_id.is_some() || done {
                Poll::Ready(())
            } else {
                slot.app_waker = Some(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }

    pub(super) fn mark_done(&self) {
        self.run().clients[self.index].workload_done = true;
    }

    fn poll_outcome(&self, cx: &mut std::task::Context<'_>) -> Poll<R::Outcome> {
        let mut run = self.run();
        let slot = &mut run.clients[self.index];
        match slot.outcomes.pop_front() {
            Some(outcome) => Poll::Ready(outcome),
            None => {
                slot.app_waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl<R: SimRecipe> App for LiveClient<R> {
    type Recipe = R;

    fn index(&self) -> usize {
        self.index
    }

    fn clients(&self) -> usize {
        self.run().clients.len()
    }

    fn call(&self, call: R::Call) {
        let now = self.backend.now_ns();
        let mut run = self.run();
        run.stats.calls += 1;
        run.observe(now, self.index, Seen::Call(call.observe_call()), None);
        let slot = &mut run.clients[self.index];
        slot.last_call = Some((now, format!("{call:?}")));
        slot.calls.push_back(call);
        if let Some(waker) = slot.conn_waker.take() {
            waker.wake();
        }
    }

    async fn next_outcome(&self) -> R::Outcome {
        let outcome = std::future::poll_fn(|cx| self.poll_outcome(cx)).await;
        self.unpaused().await;
        outcome
    }

    async fn outcome_within(&self, ms: u64) -> Option<R::Outcome> {
        let mut timeout = self.backend.sleep(ms);
        let outcome = std::future::poll_fn(|cx| {
            if let Poll::Ready(outcome) = self.poll_outcome(cx) {
                return Poll::Ready(Some(outcome));
            }
            timeout.as_mut().poll(cx).map(|()| None)
        })
        .await;
        self.unpaused().await;
        outcome
    }

    async fn sleep_ms(&self, ms: u64) {
        if ms > 0 {
            self.backend.sleep(ms).await;
        }
        self.unpaused().await;
    }

    fn stopping(&self) -> bool {
        self.run().phase != Phase::Faults
    }

    fn draw_ms(&self, range: MsRange) -> u64 {
        let mut run = self.run();
        range.draw(&mut run.clients[self.index].workload_rng)
    }

    fn write_resource(&self, token: FencingToken) -> bool {
        let now = self.backend.now_ns();
        let mut run = self.run();
        let (accepted, seen) = run.resource.write(token.0);
        run.observe(now, self.index, seen, None);
        accepted
    }

    fn run_state<T: Default + Send + 'static>(&self) -> Arc<Mutex<T>> {
        run_state_in(&mut self.run().run_state)
    }

    fn now_ns(&self) -> u64 {
        self.backend.now_ns()
    }
}
