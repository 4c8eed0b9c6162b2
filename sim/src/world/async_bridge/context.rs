//! What an async workload gets besides its client: who it is, the
//! scenario's workload parameters, simulated sleeps the diagnosis knows
//! about, and the observation calls through which the application tells
//! the oracles what it saw.
//!
//! Report what the application *believes*: `acquired` when the recipe's
//! code returns the lock, `releasing` when the application stops relying
//! on it (before it deletes its node, as a holder's tenure ends when it
//! calls release), `lost` when it learns it lost it. The oracles judge
//! those beliefs against each other and against the server. What only the
//! application can judge, its own invariants, it reports broken with
//! `violation(name, detail)`.

use crate::faults::MsRange;
use crate::oracles::CallObservation;
use crate::world::workloads::WorkloadSpec;
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::Poll;
use zk_recipes::{FencingToken, Hold, HoldId, Observation};

/// A sleep as the world gives it.
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The world a [`Context`] runs in: the simulator's (a client's
/// [`super::Bridge`]) or a live run's against a real server.
pub trait World: Send + Sync {
    /// This client's index, 0-based.
    fn index(&self) -> usize;
    /// How many clients the run has.
    fn clients(&self) -> usize;
    /// The connect string the application's `Client::connect` takes.
    fn cluster(&self) -> String;
    /// The scenario's session timeout.
    fn session_timeout_ms(&self) -> u64;
    /// True once the faults have healed.
    fn stopping(&self) -> bool;
    /// A seeded draw in `range`.
    fn draw_ms(&self, range: MsRange) -> u64;
    /// The application's own timer of `ms`.
    fn sleep_ms(&self, ms: u64) -> Sleep;
    /// A write to the shared fenced resource; whether it accepted `token`.
    fn write_resource(&self, token: FencingToken) -> bool;
    /// The application starts a call the oracles judge.
    fn doing(&self, hold: HoldId, call: CallObservation);
    /// The application saw something the oracles judge.
    fn saw(&self, hold: HoldId, observation: Observation);
}

/// One client's view of its run.
#[derive(Clone)]
pub struct Context {
    world: Arc<dyn World>,
    spec: WorkloadSpec,
    path: String,
    cluster: String,
    /// The hold the observation calls are about.
    hold: HoldId,
}

impl Context {
    /// A client's context in `world`, with the scenario's `[workload]`
    /// table and the recipe's directory.
    pub fn new(world: Arc<dyn World>, spec: WorkloadSpec, path: String) -> Context {
        Context {
            cluster: world.cluster(),
            world,
            spec,
            path,
            hold: HoldId::FIRST,
        }
    }

    /// The same context, its observation calls about the client's hold
    /// number `hold` (the first is 0, what `ctx` itself reports about):
    /// for a client that holds several things at once (nested locks, a read
    /// lock taken under a write lock), each judged on its own. Releasing
    /// one ends that one only.
    pub fn hold(&self, hold: u32) -> Context {
        Context {
            hold: HoldId(hold),
            ..self.clone()
        }
    }

    /// This client's index, 0-based.
    pub fn index(&self) -> usize {
        self.world.index()
    }

    /// How many clients the run has.
    pub fn clients(&self) -> usize {
        self.world.clients()
    }

    /// The recipe's directory (`config.path`, or the recipe's default).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The connect string to pass `Client::connect`: in a live run, the
    /// address of this client's fault-injecting proxy in front of the real
    /// server; in the simulator any string connects to the simulated
    /// ensemble.
    pub fn cluster(&self) -> &str {
        &self.cluster
    }

    /// The scenario's session timeout (`Connector::session_timeout`).
    pub fn session_timeout_ms(&self) -> u64 {
        self.world.session_timeout_ms()
    }

    /// The scenario's `[workload]` table.
    pub fn workload(&self) -> &WorkloadSpec {
        &self.spec
    }

    /// True once the faults have healed: finish what is started, start
    /// nothing new.
    pub fn stopping(&self) -> bool {
        self.world.stopping()
    }

    /// A seeded draw in `range` (hold and think times).
    pub fn draw_ms(&self, range: MsRange) -> u64 {
        self.world.draw_ms(range)
    }

    /// Sleeps `ms` of simulated time as the application's own timer (a
    /// liveness report names it). `tokio::time::sleep` works as well.
    pub async fn sleep_ms(&self, ms: u64) {
        self.world.sleep_ms(ms).await
    }

    /// The workload's cycles (`[workload] cycles`), numbered from 0; ends
    /// early once the faults have healed ([`Context::stopping`]).
    pub fn cycles(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.spec.cycles).take_while(|_| !self.stopping())
    }

    /// Sleeps a think time drawn from `[workload] think_ms`.
    pub async fn think(&self) {
        self.sleep_ms(self.draw_ms(self.spec.think_ms)).await
    }

    /// What a workload does with an exclusive hold acquired with `token`:
    /// reports it, writes to the fenced resource, holds for a time drawn
    /// from `[workload] hold_ms`, writes again and reports `releasing` —
    /// unless `lost` resolves first (the application learned it may no
    /// longer hold: its session is in doubt), which it reports as `lost`.
    /// The hold time wins a tie (a biased choice: no draw outside the seed).
    pub async fn hold_fenced(&self, token: i64, lost: impl Future<Output = ()>) {
        self.acquired(token);
        self.write_resource(token);
        let hold = self.sleep_ms(self.draw_ms(self.spec.hold_ms));
        let (mut hold, mut lost) = (pin!(hold), pin!(lost));
        let held = std::future::poll_fn(|cx| {
            if hold.as_mut().poll(cx).is_ready() {
                return Poll::Ready(true);
            }
            lost.as_mut().poll(cx).map(|()| false)
        })
        .await;
        if held {
            self.write_resource(token);
            self.releasing();
        } else {
            self.lost();
        }
    }

    /// Writes to the shared fenced resource; whether it accepted the token.
    pub fn write_resource(&self, token: i64) -> bool {
        self.world.write_resource(FencingToken(token))
    }

    /// The application asks for the lock (leadership, leases).
    pub fn acquiring(&self) {
        self.world.doing(self.hold, CallObservation::Acquire);
    }

    /// The application holds the lock exclusively, with a fencing token
    /// (e.g. its node's sequence number or creation zxid).
    pub fn acquired(&self, token: i64) {
        self.saw_acquired(Hold::Exclusive, token);
    }

    /// The application became the leader (an election's exclusive hold).
    pub fn became_leader(&self, token: i64) {
        self.saw_acquired(Hold::Exclusive, token);
    }

    /// The application holds a read (shared) lock.
    pub fn acquired_shared(&self, token: i64) {
        self.saw_acquired(Hold::Shared, token);
    }

    /// The application holds `leases` leases of a semaphore.
    pub fn acquired_leases(&self, leases: u32, token: i64) {
        self.saw_acquired(Hold::Leases(leases), token);
    }

    fn saw_acquired(&self, hold: Hold, token: i64) {
        self.world.saw(
            self.hold,
            Observation::Acquired {
                hold,
                token: FencingToken(token),
            },
        );
    }

    /// The application stops relying on what it holds (call it before the
    /// recipe deletes its node).
    pub fn releasing(&self) {
        self.world.doing(self.hold, CallObservation::Release);
    }

    /// The recipe confirmed the release.
    pub fn released(&self) {
        self.world.saw(self.hold, Observation::Released);
    }

    /// The application learned it no longer holds what it held.
    pub fn lost(&self) {
        self.world.saw(self.hold, Observation::Lost);
    }

    /// A timed acquisition gave up.
    pub fn timed_out(&self) {
        self.world.saw(self.hold, Observation::TimedOut);
    }

    /// The application offers an item to a queue.
    pub fn offering(&self, item: &[u8]) {
        self.world.doing(
            self.hold,
            CallObservation::Offer {
                item: item.to_vec(),
            },
        );
    }

    /// The queue accepted the item.
    pub fn offered(&self, item: &[u8]) {
        self.world.saw(
            self.hold,
            Observation::Offered {
                item: item.to_vec(),
            },
        );
    }

    /// The application asks the queue for an item.
    pub fn taking(&self) {
        self.world.doing(self.hold, CallObservation::Take);
    }

    /// The queue delivered an item to this client.
    pub fn took(&self, item: &[u8]) {
        self.world.saw(
            self.hold,
            Observation::Taken {
                item: item.to_vec(),
            },
        );
    }

    /// A take found the queue empty.
    pub fn found_empty(&self) {
        self.world.saw(self.hold, Observation::Empty);
    }

    /// The application enters a barrier.
    pub fn entering(&self) {
        self.world.doing(self.hold, CallObservation::Enter);
    }

    /// The application passed the barrier's entry.
    pub fn entered(&self) {
        self.world.saw(self.hold, Observation::Entered);
    }

    /// The application leaves a barrier.
    pub fn leaving(&self) {
        self.world.doing(self.hold, CallObservation::Leave);
    }

    /// The application passed the barrier's exit.
    pub fn left(&self) {
        self.world.saw(self.hold, Observation::Left);
    }

    /// The application's own invariant `name` broke (`detail`: how, in its
    /// words): the run fails with a violation of the property `name`,
    /// printed as `VIOLATION of name` and bucketed by a sweep as
    /// `name/reported`. Not about a hold: reporting it answers nothing.
    ///
    /// # Panics
    ///
    /// If `name` cannot name an invariant (see
    /// [`zk_recipes::check_property_name`]: empty, not a short identifier,
    /// or a built-in property's name): a programmer error, like a bad index.
    pub fn violation(&self, name: &str, detail: impl Into<String>) {
        if let Err(refused) = zk_recipes::check_property_name(name) {
            panic!("ctx.violation: {refused}");
        }
        self.world.saw(
            self.hold,
            Observation::Violated {
                property: name.to_string(),
                detail: detail.into(),
            },
        );
    }

    /// The recipe gave up on a call (an error reached the application).
    pub fn failed(&self, reason: impl Into<String>) {
        self.world.saw(
            self.hold,
            Observation::Failed {
                reason: reason.into(),
            },
        );
    }
}
