//! The handle an application workload drives its recipe through: calls go
//! in, outcomes come out, in simulated time. A user's own async workload is
//! written against this handle exactly like the built-in ones.

use super::choice_tape::StrikeChoice;
use super::events::Event;
use super::server_fault_choices::{ServerFaultChoice, ServerFaultShapes};
use super::shared::{enter, trace, Phase, Shared, SimRecipe};
use crate::faults::{Fault, MsRange, ScheduledFault, Trigger};
use crate::oracles::{ObserveCall, Seen};
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;
use std::time::Duration;
use zk_recipes::{FencingToken, WatcherId};

/// One client's application side.
pub struct Client<R: SimRecipe> {
    index: usize,
    shared: Arc<Mutex<Shared<R>>>,
}

impl<R: SimRecipe> Clone for Client<R> {
    fn clone(&self) -> Self {
        Client {
            index: self.index,
            shared: self.shared.clone(),
        }
    }
}

impl<R: SimRecipe> Client<R> {
    pub(crate) fn new(index: usize, shared: Arc<Mutex<Shared<R>>>) -> Client<R> {
        Client { index, shared }
    }

    fn world(&self) -> MutexGuard<'_, Shared<R>> {
        enter(&self.shared)
    }

    /// This client's index (0-based).
    pub fn index(&self) -> usize {
        self.index
    }

    /// How many clients the world runs.
    pub fn clients(&self) -> usize {
        self.world().clients.len()
    }

    /// The session timeout every session of the run asks for, in ms.
    pub fn session_timeout_ms(&self) -> u64 {
        self.world().config.session_timeout_ms
    }

    /// Hands an application call to the recipe.
    pub fn call(&self, call: R::Call) {
        let mut world = self.world();
        let client = self.index;
        let now = world.now_ns();
        world.stats.calls += 1;
        trace!(world, Some(client), Call, "{call:?}");
        world.clients[client].last_call = Some((now, call.clone()));
        world.clients[client].awaiting_answer = true;
        world.observe_hold(client, call.hold(), Seen::Call(call.observe_call()));
        world.clients[client].session.now_ms = now / 1_000_000;
        world.clients[client].session.call(call);
        world.pump(client);
    }

    /// The application connects again after its session expired (a new
    /// `zookeeper-client` handle): after the crate gave up on its session by
    /// itself, the world opens the client's next session only now.
    pub fn connect_again(&self) {
        self.world().application_connects(self.index);
    }

    /// The application dropped a watcher object before it fired: the
    /// session forgets its registrations (a later event for it reaches
    /// nobody, a reconnect does not set it again). Called from a drop: does
    /// nothing if the world is busy (it is then being torn down).
    pub fn forget_watcher(&self, watcher: WatcherId) {
        let Ok(mut world) = self.shared.try_lock() else {
            return;
        };
        let slot = &mut world.clients[self.index];
        if slot.session.watches.forget(watcher) {
            trace!(
                world,
                Some(self.index),
                Session,
                "drops watcher {}: its watch is removed",
                watcher.0
            );
        }
    }

    /// Waits for the recipe's next outcome.
    pub async fn next_outcome(&self) -> R::Outcome {
        std::future::poll_fn(|cx| {
            let mut world = self.world();
            let now = world.now_ns();
            let slot = &mut world.clients[self.index];
            match slot.outcomes.pop_front() {
                Some(outcome) => {
                    slot.last_outcome = Some((now, format!("{outcome:?}")));
                    slot.awaiting_answer = false;
                    Poll::Ready(outcome)
                }
                None => {
                    slot.app_waker = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await
    }

    /// Waits for the next outcome at most `ms` of simulated time.
    pub async fn outcome_within(&self, ms: u64) -> Option<R::Outcome> {
        let mut sleep = pin!(madsim::time::sleep(Duration::from_millis(ms)));
        self.workload_timer(ms);
        let outcome = std::future::poll_fn(|cx| {
            {
                let mut world = self.world();
                let now = world.now_ns();
                let slot = &mut world.clients[self.index];
                if let Some(outcome) = slot.outcomes.pop_front() {
                    slot.last_outcome = Some((now, format!("{outcome:?}")));
                    slot.awaiting_answer = false;
                    return Poll::Ready(Some(outcome));
                }
                slot.app_waker = Some(cx.waker().clone());
            }
            sleep.as_mut().poll(cx).map(|()| None)
        })
        .await;
        self.world().clients[self.index].workload_timer = None;
        outcome
    }

    /// Sleeps `ms` of simulated time (the workload's own timer while it
    /// runs, ended by the sleep's end or its cancellation).
    pub async fn sleep_ms(&self, ms: u64) {
        if ms > 0 {
            self.workload_timer(ms);
            let _ends = TimerEnds(self);
            madsim::time::sleep(Duration::from_millis(ms)).await;
        }
    }

    /// The workload's own timer starts: due in `ms` (liveness reports).
    fn workload_timer(&self, ms: u64) {
        let mut world = self.world();
        let now = world.now_ns();
        let due = now.saturating_add(ms.saturating_mul(1_000_000));
        world.clients[self.index].workload_timer = Some((now, due));
    }

    /// Waits until the client has its first session.
    pub async fn connected(&self) {
        std::future::poll_fn(|cx| {
            let mut world = self.world();
            let slot = &mut world.clients[self.index];
            if slot.session.session_id.is_some() {
                Poll::Ready(())
            } else {
                slot.app_waker = Some(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }

    /// True once the faults have healed: workloads finish what they are
    /// doing and stop starting new work.
    pub fn stopping(&self) -> bool {
        self.world().phase != Phase::Faults
    }

    /// A seeded draw in the range, for think and hold times; in an
    /// explored run, one of the range's points the choice tape picks, and
    /// the fault the tape strikes the client with as the duration starts
    /// (between requests), if any.
    pub fn draw_ms(&self, range: MsRange) -> u64 {
        let mut world = self.world();
        // After the heal a fault would not strike: no choice to offer.
        let strikes = world.faults_active();
        let (servers, leader) = (world.ensemble.servers(), world.ensemble.leader());
        if let Some(tape) = world.chooser.as_mut() {
            let (min, max) = (range.min, range.max.max(range.min));
            let chosen = tape.duration_ms(min, max);
            if strikes {
                let strike = tape.strike();
                let server_fault = tape.server_fault(servers, leader);
                strike_between_requests(&mut world, self.index, strike);
                strike_the_ensemble(&mut world, self.index, server_fault);
            }
            if min < max {
                trace!(
                    world,
                    Some(self.index),
                    Timer,
                    "choice: {chosen} ms of [{min}, {max}]"
                );
            }
            return chosen;
        }
        range.draw(&mut world.clients[self.index].workload_rng)
    }

    /// Which of `alternatives` the workload picks: a seeded draw, or the
    /// choice tape's in an explored run.
    pub fn pick(&self, alternatives: usize) -> usize {
        let mut world = self.world();
        if let Some(tape) = world.chooser.as_mut() {
            let chosen = tape.pick(alternatives);
            if alternatives > 1 {
                trace!(
                    world,
                    Some(self.index),
                    Call,
                    "choice: call {chosen} of {alternatives}"
                );
            }
            return chosen;
        }
        let range = MsRange::new(0, alternatives as u64 - 1);
        range.draw(&mut world.clients[self.index].workload_rng) as usize
    }

    /// Writes to the shared resource with a fencing token; the resource
    /// rejects a token below the highest it has accepted. Returns whether
    /// the write was accepted.
    pub fn write_resource(&self, token: FencingToken) -> bool {
        let mut world = self.world();
        let accepted = world.resource_max_token.is_none_or(|max| token.0 >= max);
        if accepted {
            world.resource_max_token = Some(token.0);
        }
        trace!(
            world,
            Some(self.index),
            Call,
            "write resource with token {} ({})",
            token.0,
            if accepted {
                "accepted"
            } else {
                "rejected: stale"
            }
        );
        world.observe(
            self.index,
            Seen::ResourceWrite {
                token: token.0,
                accepted,
            },
        );
        accepted
    }

    /// State shared by the workloads of this run (one value per type,
    /// created on first use), e.g. a queue's count of delivered items.
    pub fn run_state<T: Default + Send + 'static>(&self) -> Arc<Mutex<T>> {
        super::app::run_state_in(&mut self.world().run_state)
    }

    /// Simulated time since the run started, in ns.
    pub fn now_ns(&self) -> u64 {
        self.world().now_ns()
    }

    pub(crate) fn mark_done(&self) {
        let mut world = self.world();
        world.clients[self.index].workload_done = true;
        trace!(world, Some(self.index), Phase, "workload done");
        if world.clients.iter().all(|slot| slot.workload_done) {
            if let Some(waker) = world.supervisor.take() {
                waker.wake();
            }
        }
    }
}

/// Ends the workload's timer when a sleep ends or is cancelled (a sleep a
/// `select!` dropped). From a drop: does nothing if the world is busy.
struct TimerEnds<'a, R: SimRecipe>(&'a Client<R>);

impl<R: SimRecipe> Drop for TimerEnds<'_, R> {
    fn drop(&mut self) {
        if let Ok(mut world) = self.0.shared.try_lock() {
            world.clients[self.0.index].workload_timer = None;
        }
    }
}

impl<R: SimRecipe> super::app::App for Client<R> {
    type Recipe = R;

    fn index(&self) -> usize {
        Client::index(self)
    }

    fn clients(&self) -> usize {
        Client::clients(self)
    }

    fn call(&self, call: R::Call) {
        Client::call(self, call)
    }

    fn next_outcome(&self) -> impl Future<Output = R::Outcome> + Send {
        Client::next_outcome(self)
    }

    fn outcome_within(&self, ms: u64) -> impl Future<Output = Option<R::Outcome>> + Send {
        Client::outcome_within(self, ms)
    }

    fn sleep_ms(&self, ms: u64) -> impl Future<Output = ()> + Send {
        Client::sleep_ms(self, ms)
    }

    fn stopping(&self) -> bool {
        Client::stopping(self)
    }

    fn draw_ms(&self, range: MsRange) -> u64 {
        Client::draw_ms(self, range)
    }

    fn pick(&self, alternatives: usize) -> usize {
        Client::pick(self, alternatives)
    }

    fn write_resource(&self, token: FencingToken) -> bool {
        Client::write_resource(self, token)
    }

    fn run_state<T: Default + Send + 'static>(&self) -> Arc<Mutex<T>> {
        Client::run_state(self)
    }

    fn now_ns(&self) -> u64 {
        Client::now_ns(self)
    }
}

/// Explored runs: the fault the tape chose to strike `client` with
/// between requests, as an event due now (a partition, a silence and a
/// pause last twice the session timeout, so the server expires the
/// session meanwhile; an outage half of it, so the session lives).
fn strike_between_requests<R: SimRecipe>(
    world: &mut Shared<R>,
    client: usize,
    strike: StrikeChoice,
) {
    let long_ms = world.config.session_timeout_ms.saturating_mul(2);
    let fault = match strike {
        StrikeChoice::None => return,
        StrikeChoice::Blip => Fault::Disconnect { down_ms: 0 },
        StrikeChoice::Partition => Fault::Disconnect { down_ms: long_ms },
        StrikeChoice::Silent => Fault::Silent { down_ms: long_ms },
        StrikeChoice::Expire => Fault::Expire,
        StrikeChoice::Pause => Fault::Pause { pause_ms: long_ms },
        StrikeChoice::Outage => Fault::Disconnect {
            down_ms: world.config.session_timeout_ms / 2,
        },
    };
    let now = world.now_ns();
    let scheduled = ScheduledFault {
        trigger: Trigger::AtMs(now as f64 / 1e6),
        client,
        fault,
    };
    world.schedule(now, Event::Fault(scheduled));
}

/// Explored runs on an ensemble: the ensemble fault the tape chose at this
/// strike point, now, in the shape the scenario gives its kind.
fn strike_the_ensemble<R: SimRecipe>(
    world: &mut Shared<R>,
    client: usize,
    choice: ServerFaultChoice,
) {
    let Some(fault) = ServerFaultShapes::of(&world.config).fault(choice) else {
        return;
    };
    let now = world.now_ns();
    let scheduled = ScheduledFault {
        trigger: Trigger::AtMs(now as f64 / 1e6),
        client,
        fault,
    };
    world.schedule(now, Event::Fault(scheduled));
}
