//! One live run: the clients' connection tasks (each owns its session
//! layer and its real connection), their workloads, and a supervisor that
//! moves the run through its phases (faults, heal with the liveness
//! deadline, settle) and runs the end checks. Everything runs as futures
//! polled together by [`LiveRunner::run`]'s caller on one task: the work is
//! waiting for the server, not computing.
//!
//! With the `client_expiry` policy a client disconnected for its session
//! timeout gives up on its own clock, as Curator 3.0+ does: the recipe sees
//! Expired, the session is abandoned unclosed (the server keeps it, and its
//! ephemerals, until its own timeout) and the client opens a new one after
//! the outage. The report's trace holds the clients' session changes
//! (opened, expired, given up), the only lines a live run records.
//!
//! A run that cannot be judged ends with an error, not a verdict: the
//! backend ran out of a local resource ([`Backend::local_failure`], checked
//! every tick: the run stops at once), or the end checks could not read
//! the tree. The report's count of finished workloads is taken with the
//! verdict, so it agrees with a liveness violation's list of stuck clients.

use super::app::LiveClient;
use super::common::{
    end_tree, judge_liveness, live_report, prepare, session_owner, ClientProgress, FencedResource,
};
use super::mirror::mirror;
use super::run_state::{lock, Phase, Run, Slot};
use super::{
    Backend, BackendError, BoxFuture, Connection, LiveRunner, LiveState, NodeInfo, RequestLoss,
};
use crate::client::{ClientSession, ConnectionState};
use crate::faults::plan::{stream, REQUEST_STREAM};
use crate::faults::{Fault, MsRange, ScheduledFault};
use crate::oracles::{Oracles, Property, Seen};
use crate::server::{ServerConfig, ZkServer};
use crate::world::{RunReport, RunStats, SimRecipe, Trace, WorldConfig};
use rand::Rng;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;
use zk_recipes::zk::{Path, Request, SessionId, WatchedEvent};
use zk_recipes::{Hold, Observation, Observe};

/// The same streams as the simulator's world (`world::run`).
const UNIQUE_ID_STREAM: u64 = 20;
const WORKLOAD_STREAM: u64 = 21;
const DELAY_STREAM: u64 = 13;
/// How often the supervisor looks at the run.
const TICK_MS: u64 = 10;
/// The longest a connection task sleeps without looking around.
const IDLE_MS: u64 = 20;
/// After an injected drop, how long the driver waits to see the client
/// library notice it before it believes a reconnect it did not see.
const DROP_NOTICE_MS: u64 = 1_000;
/// Retry delay when opening a session fails.
const CONNECT_RETRY_MS: u64 = 200;

/// A workload future as the driver stores it.
pub type BoxedWorkload = BoxFuture<'static, ()>;
type MakeRecipe<R> = dyn Fn(usize, u64) -> R + Send + Sync;
type MakeWorkload<R> = dyn Fn(LiveClient<R>) -> BoxedWorkload + Send + Sync;

/// A scenario's recipe, workload and world, ready to run live.
pub struct Driver<R: SimRecipe> {
    config: WorldConfig,
    make_recipe: Arc<MakeRecipe<R>>,
    workload: Arc<MakeWorkload<R>>,
}

/// The live runner of a world config: `make_recipe(client, unique_id)`
/// builds each client's machine, `workload(client)` is its application.
pub fn live_runner<R: SimRecipe, F>(
    config: WorldConfig,
    make_recipe: impl Fn(usize, u64) -> R + Send + Sync + 'static,
    workload: impl Fn(LiveClient<R>) -> F + Send + Sync + 'static,
) -> Box<dyn LiveRunner>
where
    F: Future<Output = ()> + Send + 'static,
{
    Box::new(Driver {
        config,
        make_recipe: Arc::new(make_recipe),
        workload: Arc::new(move |client| Box::pin(workload(client))),
    })
}

impl<R: SimRecipe> LiveRunner for Driver<R> {
    fn run<'a>(
        &'a self,
        seed: u64,
        root: &'a Path,
        backend: Arc<dyn Backend>,
    ) -> BoxFuture<'a, Result<RunReport, BackendError>> {
        Box::pin(self.run_seed(seed, root, backend))
    }
}

/// What a connection task needs to know of the run's settings.
#[derive(Clone)]
struct TaskConfig {
    fifo_dir: Option<Path>,
    root: Path,
    /// Whether exclusive acquisitions are judged against the tree.
    needs_tree: bool,
    reconnect_delay_ms: MsRange,
    new_session_delay_ms: MsRange,
    /// The client-side expiry policy (as drawn for the seed).
    client_expiry: bool,
}

impl<R: SimRecipe> Driver<R> {
    async fn run_seed(
        &self,
        seed: u64,
        root: &Path,
        backend: Arc<dyn Backend>,
    ) -> Result<RunReport, BackendError> {
        let config = &self.config;
        let initial = prepare(&*backend, &config.setup, root).await?;
        let t0 = backend.now_ns();
        let phase_ns = config.fault_phase_ms.saturating_mul(1_000_000);
        let drawn = config.faults.materialize(seed, config.clients, phase_ns);
        let mut timed: Vec<VecDeque<(u64, ScheduledFault)>> = vec![VecDeque::new(); config.clients];
        for (at, fault) in drawn.timed {
            if let Some(queue) = timed.get_mut(fault.client) {
                queue.push_back((t0 + at, fault));
            }
        }
        let mut unique_ids = stream(seed, UNIQUE_ID_STREAM);
        let clients = (0..config.clients)
            .map(|client| Slot {
                session: ClientSession::new((self.make_recipe)(client, unique_ids.gen::<u64>())),
                calls: VecDeque::new(),
                outcomes: VecDeque::new(),
                app_waker: None,
                conn_waker: None,
                workload_rng: stream(seed ^ client as u64, WORKLOAD_STREAM),
                paused: false,
                workload_done: false,
                last_call: None,
            })
            .collect();
        let run = Arc::new(Mutex::new(Run {
            clients,
            oracles: Oracles::new(config.oracles.clone(), config.clients),
            sessions: vec![None; config.clients],
            phase: Phase::Faults,
            closing: false,
            resource: FencedResource::default(),
            run_state: BTreeMap::new(),
            stats: RunStats::default(),
            fault_history: Vec::new(),
            request_faults: drawn.per_request,
            fault_rng: stream(seed, REQUEST_STREAM),
            delays: stream(seed, DELAY_STREAM),
            empty: ZkServer::new(ServerConfig::default()),
            t0,
            workloads_done_at_verdict: None,
            failure: None,
            trace: Trace::new(true),
        }));
        let properties = &config.oracles.properties;
        let task_config = TaskConfig {
            fifo_dir: config.oracles.fifo_dir.clone(),
            root: root.clone(),
            needs_tree: properties.contains(&Property::Fifo)
                || properties.contains(&Property::FencedMutualExclusion),
            reconnect_delay_ms: config.reconnect_delay_ms,
            new_session_delay_ms: config.new_session_delay_ms,
            client_expiry: drawn.rates.client_expiry,
        };
        let mut tasks: Vec<Option<BoxFuture<'_, ()>>> = Vec::new();
        let mut workloads: Vec<Option<BoxFuture<'_, ()>>> = Vec::new();
        for (client, faults) in timed.into_iter().enumerate() {
            let task = ConnectionTask {
                run: run.clone(),
                client,
                backend: backend.clone(),
                config: task_config.clone(),
                faults,
            };
            tasks.push(Some(Box::pin(task.run())));
            let app = LiveClient::new(client, run.clone(), backend.clone());
            let workload = (self.workload)(app.clone());
            workloads.push(Some(Box::pin(async move {
                app.connected().await;
                workload.await;
                app.mark_done();
            })));
        }
        let supervisor = Supervisor {
            run: run.clone(),
            backend: backend.clone(),
            config: config.clone(),
            root: root.clone(),
            initial,
        };
        tasks.push(Some(Box::pin(supervisor.run())));
        // Every task to its end; workloads still waiting when the
        // connection tasks closed are dropped.
        std::future::poll_fn(|cx| {
            for slot in workloads.iter_mut() {
                if let Some(task) = slot {
                    if task.as_mut().poll(cx).is_ready() {
                        *slot = None;
                    }
                }
            }
            for slot in tasks.iter_mut() {
                if let Some(task) = slot {
                    if task.as_mut().poll(cx).is_ready() {
                        *slot = None;
                    }
                }
            }
            if tasks.iter().all(Option::is_none) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
        drop(workloads);
        let mut run = lock(&run);
        if let Some(failure) = run.failure.take() {
            return Err(BackendError(failure));
        }
        let now = backend.now_ns();
        run.stats.sim_time_ns = now.saturating_sub(t0);
        let done = run
            .workloads_done_at_verdict
            .unwrap_or_else(|| run.clients.iter().filter(|s| s.workload_done).count());
        let (stats, history) = (run.stats.clone(), std::mem::take(&mut run.fault_history));
        let mut report = live_report(seed, &run.oracles, stats, history, drawn.rates, done);
        report.trace = std::mem::take(&mut run.trace);
        Ok(report)
    }
}

/// Moves the run through its phases and runs the end checks.
struct Supervisor<R: SimRecipe> {
    run: Arc<Mutex<Run<R>>>,
    backend: Arc<dyn Backend>,
    config: WorldConfig,
    root: Path,
    initial: BTreeSet<Path>,
}

impl<R: SimRecipe> Supervisor<R> {
    async fn run(self) {
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
                let sessions = run.sessions.clone();
                run.oracles.finish_naming_owners(
                    at,
                    &tree,
                    &self.initial,
                    &session_owner(&sessions),
                );
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

/// One client's connection: feeds the session layer what the real
/// connection delivers, sends what the recipe emits, injects the client's
/// faults at their times.
struct ConnectionTask<R: SimRecipe> {
    run: Arc<Mutex<Run<R>>>,
    client: usize,
    backend: Arc<dyn Backend>,
    config: TaskConfig,
    faults: VecDeque<(u64, ScheduledFault)>,
}

/// What a connection task tracks about its connection.
#[derive(Default)]
struct Link {
    /// Requests sent in this run (per-request faults count them from 1).
    sent: u64,
    /// A pause in force until then.
    paused_until: Option<u64>,
    /// An injected drop: reconnecting fails until then.
    down_until: u64,
    /// An injected drop the client library has not shown yet: since when.
    drop_unseen_since: Option<u64>,
    /// The next emulated failed reconnect attempt.
    next_attempt: Option<u64>,
    /// Client-side expiry: when the client gives up on its session,
    /// counted from the session layer's disconnect.
    gives_up_at: Option<u64>,
    healed: bool,
}

impl<R: SimRecipe> ConnectionTask<R> {
    fn lock(&self) -> MutexGuard<'_, Run<R>> {
        lock(&self.run)
    }

    async fn run(mut self) {
        let mut conn: Option<Box<dyn Connection>> = None;
        let mut link = Link::default();
        let mut new_session_at = 0u64;
        loop {
            let now = self.backend.now_ns();
            let (closing, phase) = {
                let run = self.lock();
                (run.closing, run.phase)
            };
            if closing {
                if let Some(mut conn) = conn.take() {
                    conn.close().await;
                }
                return;
            }
            if phase != Phase::Faults && !link.healed {
                link.healed = true;
                self.faults.clear();
                link.down_until = 0;
                if let Some(conn) = conn.as_mut() {
                    conn.heal();
                }
                if link.paused_until.take().is_some() {
                    self.lock().clients[self.client].paused = false;
                }
            }
            if let Some(until) = link.paused_until {
                if now < until {
                    self.backend.sleep(ms_until(now, until).min(IDLE_MS)).await;
                    continue;
                }
                link.paused_until = None;
                if let Some(conn) = conn.as_mut() {
                    conn.resume();
                }
                self.lock().clients[self.client].paused = false;
            }
            let Some(live) = conn.as_mut() else {
                // An outage still in force (a client that gave up during
                // it) holds the new session back, as it holds reconnects.
                let open_at = new_session_at.max(link.down_until);
                if now >= open_at {
                    match self.open_session().await {
                        Ok(opened) => {
                            self.opened(&*opened);
                            conn = Some(opened);
                            link = Link {
                                sent: link.sent,
                                healed: link.healed,
                                ..Link::default()
                            };
                        }
                        Err(_) => new_session_at = now + CONNECT_RETRY_MS * 1_000_000,
                    }
                } else {
                    let wait = ms_until(now, open_at).min(IDLE_MS);
                    self.wait(None, wait).await;
                }
                continue;
            };
            if phase == Phase::Faults && self.faults.front().is_some_and(|(at, _)| *at <= now) {
                if let Some((_, scheduled)) = self.faults.pop_front() {
                    self.inject(live.as_mut(), &mut link, scheduled.fault, now)
                        .await;
                }
                continue;
            }
            let events = live.drain_events();
            self.deliver_events(events);
            if self.sync_state(live.as_mut(), &mut link, now) {
                live.close().await;
                conn = None;
                new_session_at = self.new_session_at(now);
                self.flush().await;
                continue;
            }
            if self.gives_up(live.as_ref(), &mut link, now) {
                live.abandon();
                conn = None;
                new_session_at = self.new_session_at(now);
                self.flush().await;
                continue;
            }
            self.step(&mut link, now);
            self.flush().await;
            let next = {
                let mut run = self.lock();
                run.clients[self.client].session.next_to_send()
            };
            if let Some((_, request)) = next {
                self.send(live.as_mut(), &mut link, &request, phase).await;
                self.flush().await;
                continue;
            }
            let wake_at = self.next_wake(&link, now);
            self.wait(
                Some(live.as_mut()),
                ms_until(now, wake_at).clamp(1, IDLE_MS),
            )
            .await;
        }
    }

    /// Opens a session: one the client can abandon if it may give up on it.
    async fn open_session(&self) -> Result<Box<dyn Connection>, BackendError> {
        if self.config.client_expiry {
            self.backend.connect_abandonable().await
        } else {
            self.backend.connect().await
        }
    }

    /// When the client opens its next session, the previous one ended now.
    fn new_session_at(&self, now: u64) -> u64 {
        let mut run = self.lock();
        let delay = self.config.new_session_delay_ms.draw(&mut run.delays);
        now + delay * 1_000_000
    }

    /// Client-side expiry: once the session layer has been disconnected
    /// for the session timeout the server granted, the client gives up on
    /// its session as Curator does (the recipe sees Expired, the oracles
    /// see the session end). Returns true when it gives up now; the caller
    /// abandons the connection. The server still holds the session.
    fn gives_up(&self, conn: &dyn Connection, link: &mut Link, now: u64) -> bool {
        if !self.config.client_expiry {
            return false;
        }
        let mut run = self.lock();
        let session = &mut run.clients[self.client].session;
        if session.state != ConnectionState::Disconnected || session.session_id.is_none() {
            link.gives_up_at = None;
            return false;
        }
        let timeout_ms = conn.session_timeout_ms();
        let at = *link
            .gives_up_at
            .get_or_insert(now.saturating_add(timeout_ms.saturating_mul(1_000_000)));
        if now < at {
            return false;
        }
        link.gives_up_at = None;
        link.next_attempt = None;
        session.expired();
        if run.sessions[self.client].take().is_some() {
            run.observe(now, self.client, Seen::SessionEnded, None);
        }
        let text = format!(
            "gives up on session {:#x} after {timeout_ms} ms disconnected (client-side expiry, \
             as Curator does); the server still holds it",
            conn.session_id().0
        );
        run.note_session(now, self.client, text);
        true
    }

    /// A new session is open.
    fn opened(&self, conn: &dyn Connection) {
        let id = conn.session_id();
        let now = self.backend.now_ns();
        let mut run = self.lock();
        run.sessions[self.client] = Some(id);
        run.note_session(now, self.client, format!("opens session {:#x}", id.0));
        let slot = &mut run.clients[self.client];
        slot.session.now_ms = now / 1_000_000;
        slot.session.connected(id);
        if let Some(waker) = slot.app_waker.take() {
            waker.wake();
        }
    }

    /// Node events to the session layer (and the herd oracle).
    fn deliver_events(&self, events: Vec<WatchedEvent>) {
        if events.is_empty() {
            return;
        }
        let now = self.backend.now_ns();
        let mut run = self.lock();
        for event in events {
            let fires = run.clients[self.client].session.watches.would_fire(&event);
            run.clients[self.client].session.notification(event);
            if fires {
                run.observe(now, self.client, Seen::WatchFired, None);
            }
        }
    }

    /// Brings the session layer's connection state in line with the
    /// client library's. Returns true when the session expired.
    fn sync_state(&self, conn: &mut dyn Connection, link: &mut Link, now: u64) -> bool {
        let state = conn.state();
        let mut run = self.lock();
        let session = &mut run.clients[self.client].session;
        match state {
            LiveState::Expired => {
                if session.state != ConnectionState::Expired {
                    session.expired();
                }
                let ended = run.sessions[self.client].take().is_some();
                if ended {
                    run.observe(now, self.client, Seen::SessionEnded, None);
                    let id = conn.session_id().0;
                    run.note_session(now, self.client, format!("session {id:#x} expired"));
                }
                return true;
            }
            LiveState::Disconnected => {
                link.drop_unseen_since = None;
                if session.state == ConnectionState::Connected {
                    session.disconnected();
                }
            }
            LiveState::Connected => {
                // After an injected drop the library may not have noticed
                // yet: its "connected" is the old connection, not a reconnect.
                let drop_unnoticed = link
                    .drop_unseen_since
                    .is_some_and(|since| now < since + DROP_NOTICE_MS * 1_000_000);
                let down = now < link.down_until;
                if session.state == ConnectionState::Disconnected && !drop_unnoticed && !down {
                    link.drop_unseen_since = None;
                    link.next_attempt = None;
                    let _ = session.reconnected();
                }
            }
        }
        false
    }

    /// Application calls, due recipe timers, emulated failed reconnect
    /// attempts while the network is down.
    fn step(&self, link: &mut Link, now: u64) {
        let now_ms = now / 1_000_000;
        let mut run = self.lock();
        let Run {
            clients, delays, ..
        } = &mut *run;
        let slot = &mut clients[self.client];
        slot.session.now_ms = now_ms;
        while let Some(call) = slot.calls.pop_front() {
            slot.session.call(call);
        }
        while let Some((due, id)) = slot.session.next_timer() {
            if due > now_ms {
                break;
            }
            slot.session.fire_timer(id);
        }
        if slot.session.state == ConnectionState::Disconnected && now < link.down_until {
            match link.next_attempt {
                Some(at) if now >= at => {
                    slot.session.reconnect_failed();
                    link.next_attempt = None;
                }
                Some(_) => {}
                None => {
                    let delay = self.config.reconnect_delay_ms.draw(delays);
                    link.next_attempt = Some(now + delay.max(1) * 1_000_000);
                }
            }
        }
    }

    /// Hands the recipe's outcomes to the application and the oracles; an
    /// exclusive acquisition is judged against a snapshot of the tree.
    async fn flush(&self) {
        let (outcomes, sessions) = {
            let mut run = self.lock();
            let outcomes = std::mem::take(&mut run.clients[self.client].session.outcomes);
            (outcomes, run.sessions.clone())
        };
        if outcomes.is_empty() {
            return;
        }
        let exclusive = outcomes.iter().any(|outcome| {
            matches!(
                outcome.observed(),
                Some(Observation::Acquired {
                    hold: Hold::Exclusive,
                    ..
                })
            )
        });
        let tree = if exclusive && self.config.needs_tree {
            let dir = self.config.fifo_dir.as_ref().unwrap_or(&self.config.root);
            let alive: Vec<SessionId> = sessions.into_iter().flatten().collect();
            self.backend
                .snapshot(dir)
                .await
                .ok()
                .map(|nodes: Vec<NodeInfo>| mirror(&nodes, &alive))
        } else {
            None
        };
        let now = self.backend.now_ns();
        let mut run = self.lock();
        for outcome in outcomes {
            if let Some(observation) = outcome.observed() {
                run.stats.count_outcome(&observation);
                run.observe(now, self.client, Seen::Outcome(observation), tree.as_ref());
            }
            let slot = &mut run.clients[self.client];
            slot.outcomes.push_back(outcome);
            if let Some(waker) = slot.app_waker.take() {
                waker.wake();
            }
        }
    }

    /// Sends one request, with the per-request fault the seed draws for it.
    async fn send(
        &self,
        conn: &mut dyn Connection,
        link: &mut Link,
        request: &Request,
        phase: Phase,
    ) {
        link.sent += 1;
        let now = self.backend.now_ns();
        let loss = {
            let mut run = self.lock();
            run.stats.requests += 1;
            if request.is_read() {
                run.observe(now, self.client, Seen::Read, None);
            }
            let Run {
                request_faults,
                fault_rng,
                ..
            } = &mut *run;
            let fault = request_faults.for_request(self.client, link.sent, fault_rng);
            let loss = match (phase, &fault) {
                (Phase::Faults, Some(Fault::LoseRequest { down_ms })) => {
                    Some(RequestLoss::BeforeApply { down_ms: *down_ms })
                }
                (Phase::Faults, Some(Fault::LoseReply { down_ms })) => {
                    Some(RequestLoss::AfterApply { down_ms: *down_ms })
                }
                _ => None,
            };
            if let (Some(_), Some(fault)) = (loss, fault) {
                run.record_fault(now, self.client, fault);
            }
            loss
        };
        let (before, result) = conn.apply(request, loss).await;
        self.deliver_events(before);
        let mut run = self.lock();
        let session = &mut run.clients[self.client].session;
        session.now_ms = self.backend.now_ns() / 1_000_000;
        if !session.in_flight.is_empty() {
            session.reply(result, 0);
        }
        if let Some(RequestLoss::BeforeApply { down_ms } | RequestLoss::AfterApply { down_ms }) =
            loss
        {
            session.disconnected();
            let now = self.backend.now_ns();
            link.down_until = now + down_ms * 1_000_000;
            link.drop_unseen_since = Some(now);
        }
    }

    /// Injects a time-triggered fault.
    async fn inject(&self, conn: &mut dyn Connection, link: &mut Link, fault: Fault, now: u64) {
        match &fault {
            Fault::Disconnect { down_ms } => {
                conn.disconnect(*down_ms);
                link.down_until = now + down_ms * 1_000_000;
                link.drop_unseen_since = Some(now);
                self.lock().clients[self.client].session.disconnected();
            }
            Fault::Expire => {
                if conn.expire().await.is_err() {
                    return; // the session was already gone: nothing struck
                }
                let mut run = self.lock();
                if run.sessions[self.client].take().is_some() {
                    run.observe(now, self.client, Seen::SessionEnded, None);
                }
            }
            // The session layer learns of it from the client library, at
            // the library's read timeout (`sync_state`).
            Fault::Silent { down_ms } => conn.silence(*down_ms),
            Fault::Pause { pause_ms } => {
                conn.pause();
                link.paused_until = Some(now + pause_ms * 1_000_000);
                self.lock().clients[self.client].paused = true;
            }
            // Refused before the run (`super::unsupported`); per-request
            // faults never arrive by time.
            _ => return,
        }
        self.lock().record_fault(now, self.client, fault);
    }

    /// The next moment something is due: a recipe timer, a fault, an
    /// emulated reconnect attempt, the end of a drop.
    fn next_wake(&self, link: &Link, now: u64) -> u64 {
        let run = self.lock();
        let session = &run.clients[self.client].session;
        let mut at = now + IDLE_MS * 1_000_000;
        if let Some((due_ms, _)) = session.next_timer() {
            at = at.min(due_ms * 1_000_000);
        }
        if let Some((fault_at, _)) = self.faults.front() {
            at = at.min(*fault_at);
        }
        if let Some(attempt) = link.next_attempt {
            at = at.min(attempt);
        }
        if link.down_until > now {
            at = at.min(link.down_until);
        }
        if let Some(give_up) = link.gives_up_at {
            at = at.min(give_up);
        }
        at
    }

    /// Waits until the connection has news, the application called, the
    /// run changed phase, or `ms` passed.
    async fn wait(&self, conn: Option<&mut dyn Connection>, ms: u64) {
        let mut changed: BoxFuture<'_, ()> = match conn {
            Some(conn) => conn.changed(),
            None => Box::pin(std::future::pending()),
        };
        let mut timeout = self.backend.sleep(ms);
        std::future::poll_fn(|cx| {
            if changed.as_mut().poll(cx).is_ready() || timeout.as_mut().poll(cx).is_ready() {
                return Poll::Ready(());
            }
            let mut run = self.lock();
            let closing = run.closing;
            let slot = &mut run.clients[self.client];
            if closing || !slot.calls.is_empty() {
                Poll::Ready(())
            } else {
                slot.conn_waker = Some(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }
}

/// Whole ms from `now` until `at` (0 if past).
fn ms_until(now: u64, at: u64) -> u64 {
    at.saturating_sub(now).div_ceil(1_000_000)
}
