//! The state one live run's tasks share ([`Run`]): each client's slot
//! (its session layer, calls, outcomes, wakers), the oracles, the phase,
//! the fault bookkeeping and the report's trace. The driver
//! (`super::driver`) and the application handle (`super::app`) both work
//! on it, under its mutex, never across an await.

use super::common::FencedResource;
use crate::client::{ClientSession, ConnectionState};
use crate::faults::{ns_to_ms, Fault, RequestFaults, ScheduledFault, Trigger};
use crate::oracles::{Oracles, Seen, View};
use crate::server::ZkServer;
use crate::world::app::RunStates;
use crate::world::{RunStats, SimRecipe, Trace, TraceKind};
use rand::rngs::SmallRng;
use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};
use std::task::Waker;
use zk_recipes::zk::SessionId;

/// The run's phases, as in the simulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Faults,
    Healing { deadline_ns: u64 },
    Done,
}

/// One client as the run keeps it.
pub struct Slot<R: SimRecipe> {
    pub session: ClientSession<R>,
    /// Application calls not yet handed to the session layer.
    pub calls: VecDeque<R::Call>,
    /// Outcomes not yet taken by the application.
    pub outcomes: VecDeque<R::Outcome>,
    pub app_waker: Option<Waker>,
    pub conn_waker: Option<Waker>,
    pub workload_rng: SmallRng,
    /// Frozen by a pause fault.
    pub paused: bool,
    pub workload_done: bool,
    pub last_call: Option<(u64, String)>,
}

/// The state the tasks of one run share (never locked across an await).
pub struct Run<R: SimRecipe> {
    pub clients: Vec<Slot<R>>,
    pub oracles: Oracles,
    /// Each client's session while the driver believes it alive.
    pub sessions: Vec<Option<SessionId>>,
    pub phase: Phase,
    /// The connection tasks close their sessions and end.
    pub closing: bool,
    pub resource: FencedResource,
    pub run_state: RunStates,
    pub stats: RunStats,
    pub fault_history: Vec<ScheduledFault>,
    pub(super) request_faults: RequestFaults,
    pub(super) fault_rng: SmallRng,
    pub(super) delays: SmallRng,
    /// What the oracles see when they need no tree.
    pub(super) empty: ZkServer,
    /// When the run started (backend time), for fault times.
    pub(super) t0: u64,
    /// Workloads done when the verdict was taken (the liveness deadline,
    /// or all done): what the report says, so its count and a liveness
    /// violation's list of stuck clients agree.
    pub(super) workloads_done_at_verdict: Option<usize>,
    /// Why the run could not be judged (the harness ran out of a local
    /// resource, the end checks could not read the tree): the run ends
    /// with this error instead of a verdict.
    pub(super) failure: Option<String>,
    /// The clients' session changes (the report's trace).
    pub(super) trace: Trace,
}

impl<R: SimRecipe> Run<R> {
    /// Feeds one observation to the oracles; `tree` is a mirror of the
    /// real tree when the observation needs one.
    pub fn observe(&mut self, now: u64, client: usize, seen: Seen, tree: Option<&ZkServer>) {
        let view = View {
            server: tree.unwrap_or(&self.empty),
            sessions: &self.sessions,
        };
        self.oracles
            .seen(now.saturating_sub(self.t0), client, &seen, &view);
    }

    pub(super) fn wake_all(&mut self) {
        for slot in &mut self.clients {
            if let Some(waker) = slot.conn_waker.take() {
                waker.wake();
            }
            if let Some(waker) = slot.app_waker.take() {
                waker.wake();
            }
        }
    }

    /// A session change of `client` for the report's trace.
    pub(super) fn note_session(&mut self, now: u64, client: usize, text: String) {
        let at_ns = now.saturating_sub(self.t0);
        self.trace
            .push(at_ns, Some(client), TraceKind::Session, text);
    }

    pub(super) fn record_fault(&mut self, now: u64, client: usize, fault: Fault) {
        self.stats.faults += 1;
        let at_ms = ns_to_ms(now.saturating_sub(self.t0));
        self.fault_history.push(ScheduledFault {
            trigger: Trigger::AtMs(at_ms),
            client,
            fault,
        });
    }

    pub(super) fn settled(&self) -> bool {
        self.clients.iter().all(|slot| {
            slot.session.state == ConnectionState::Connected
                && slot.session.is_idle()
                && slot.calls.is_empty()
        })
    }
}

pub(super) fn lock<R: SimRecipe>(run: &Mutex<Run<R>>) -> MutexGuard<'_, Run<R>> {
    run.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
