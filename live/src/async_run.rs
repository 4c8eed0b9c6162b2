//! A live run of an async recipe: the application's own async code, built
//! without `--cfg madsim`, so its `zookeeper-client` is the real crate and
//! its tokio the real runtime, run against a real ZooKeeper with the
//! scenario's faults and judged by the same oracles as in the simulator.
//!
//! The application opens its own sessions: each client's [`Context`] gives
//! it, as the connect string, the address of a [`FaultProxy`] of its own in
//! front of the server. The proxy is where the faults strike:
//! - a drop (`disconnect`): every connection of the client is cut and its
//!   reconnects fall into a hole for `down_ms` ([`FaultProxy::drop_for`]);
//! - a silent connection (`silent`): nothing passes the proxy either way
//!   for `down_ms`, nothing is closed ([`FaultProxy::silence_for`]): the
//!   real crate notices at its own read timeout, the server expires the
//!   session if the silence outlasts it; the heal ends it;
//! - a lost request or reply (`lose_request`, `lose_reply`): the proxy
//!   numbers the client's requests as the simulator does and asks the seed's
//!   plan about each ([`FaultProxy::set_request_hook`]);
//! - an expiry: a raw connection into the session the proxy saw the server
//!   grant, closed ([`crate::takeover::expire_session`]);
//! - a pause: nothing passes the proxy, and the application's own timers
//!   ([`Context::sleep_ms`]) wait, as a paused process does.
//!
//! The phases are the simulator's: faults, heal with the liveness deadline
//! (every workload must end), settle, end checks on a snapshot of the tree.
//! At the end every session the proxies saw is expired, so the run's
//! ephemerals go at once whatever the application left open.

use crate::backend::ZkBackend;
use crate::proxy::{FaultProxy, LinkSession};
use crate::takeover::{expire_session, Takeover};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};
use zk_recipes::zk::{Path, SessionId};
use zk_recipes::{FencingToken, Hold, HoldId, Observation};
use zk_sim::async_recipe::{AsyncWorkload, Context, Sleep, World};
use zk_sim::faults::plan::{stream, REQUEST_STREAM};
use zk_sim::faults::{ns_to_ms, Fault, MsRange, RequestFaults, ScheduledFault, Trigger};
use zk_sim::live::{
    end_tree, judge_end, judge_liveness, live_report, mirror, prepare, Backend, BackendError,
    BoxFuture, ClientProgress, FencedResource, LiveRunner, RequestLoss,
};
use zk_sim::oracles::{CallObservation, Oracles, Seen, View};
use zk_sim::scenario::Scenario;
use zk_sim::world::workloads::WorkloadSpec;
use zk_sim::world::{RunReport, RunStats, WorldConfig};

/// The simulator's stream for the workloads' draws (`world::run`).
const WORKLOAD_STREAM: u64 = 21;
/// How often the supervisor looks at the run.
const TICK_MS: u64 = 10;
/// How often a paused application looks whether its pause is over.
const PAUSE_POLL_MS: u64 = 5;

/// The run's phases, as in the simulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Faults,
    Healing { deadline_ns: u64 },
    Done,
}

/// One client as the run keeps it.
struct Slot {
    proxy: Arc<FaultProxy>,
    workload_rng: rand::rngs::SmallRng,
    paused: bool,
    done: bool,
    /// The last call the application reported starting: (time, call).
    last_call: Option<(u64, String)>,
    /// The last session the server granted this client (expired at the end).
    last_session: Option<LinkSession>,
}

/// What the run's tasks share (never locked across an await).
struct Run {
    clients: Vec<Slot>,
    oracles: Oracles,
    /// Each client's session while the run believes it alive.
    sessions: Vec<Option<SessionId>>,
    phase: Phase,
    stats: RunStats,
    fault_history: Vec<ScheduledFault>,
    request_faults: RequestFaults,
    fault_rng: rand::rngs::SmallRng,
    resource: FencedResource,
    /// Sessions the run expired (by a fault).
    expired: BTreeSet<i64>,
    t0: u64,
    workloads_done_at_verdict: Option<usize>,
    failure: Option<String>,
}

type Shared = Arc<Mutex<Run>>;

fn lock(run: &Mutex<Run>) -> MutexGuard<'_, Run> {
    run.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Run {
    fn now_rel(&self, now: u64) -> u64 {
        now.saturating_sub(self.t0)
    }

    /// Brings the client's session in line with what its proxy saw: a new
    /// session granted, or the old one refused as expired.
    fn sync_session(&mut self, now: u64, client: usize) {
        // The proxy still shows a session the run expired until the
        // client's next handshake: that one is gone.
        let seen = (self.clients[client].proxy.session())
            .filter(|session| !self.expired.contains(&session.session_id));
        let current = seen.as_ref().map(|s| SessionId(s.session_id));
        if current == self.sessions[client] {
            return;
        }
        if self.sessions[client].is_some() {
            self.observe(now, client, HoldId::FIRST, Seen::SessionEnded);
        }
        self.sessions[client] = current;
        if let Some(session) = seen {
            let slot = &mut self.clients[client];
            slot.last_session = Some(session);
        }
    }

    /// Feeds one observation to the oracles; the view holds the sessions
    /// the run believes alive (what the fenced check asks of the server).
    fn observe(&mut self, now: u64, client: usize, hold: HoldId, seen: Seen) {
        let alive: Vec<SessionId> = self.sessions.iter().flatten().copied().collect();
        let server = mirror(&[], &alive);
        let view = View {
            server: &server,
            sessions: &self.sessions,
        };
        let at = self.now_rel(now);
        self.oracles.seen_in_hold(at, client, hold, &seen, &view);
    }

    fn record_fault(&mut self, now: u64, client: usize, fault: Fault) {
        self.stats.faults += 1;
        let at_ms = ns_to_ms(self.now_rel(now));
        self.fault_history.push(ScheduledFault {
            trigger: Trigger::AtMs(at_ms),
            client,
            fault,
        });
    }
}

/// The async recipe of a checked scenario, ready to run live.
pub struct AsyncRunner {
    config: WorldConfig,
    workload: AsyncWorkload,
    spec: WorkloadSpec,
    path: String,
    zk: Arc<ZkBackend>,
}

impl AsyncRunner {
    /// The live run of `scenario` (rooted under the run's root), whose
    /// variant runs `workload`, against the server behind `zk`.
    pub fn new(scenario: &Scenario, workload: AsyncWorkload, zk: Arc<ZkBackend>) -> AsyncRunner {
        AsyncRunner {
            config: scenario.world_config(),
            workload,
            spec: scenario.raw.workload.clone(),
            path: scenario.path.to_string(),
            zk,
        }
    }
}

impl LiveRunner for AsyncRunner {
    fn run<'a>(
        &'a self,
        seed: u64,
        root: &'a Path,
        backend: Arc<dyn Backend>,
    ) -> BoxFuture<'a, Result<RunReport, BackendError>> {
        Box::pin(self.run_seed(seed, root, backend))
    }
}

impl AsyncRunner {
    async fn run_seed(
        &self,
        seed: u64,
        root: &Path,
        backend: Arc<dyn Backend>,
    ) -> Result<RunReport, BackendError> {
        let config = &self.config;
        let initial = prepare(&*backend, &config.setup, root).await?;
        let mut proxies = Vec::with_capacity(config.clients);
        for _ in 0..config.clients {
            let proxy = FaultProxy::start_reporting(self.zk.addr(), self.zk.local_failures())
                .await
                .map_err(|error| BackendError(error.to_string()))?;
            proxies.push(Arc::new(proxy));
        }
        let t0 = backend.now_ns();
        let phase_ns = config.fault_phase_ms.saturating_mul(1_000_000);
        let drawn = config.faults.materialize(seed, config.clients, phase_ns);
        let clients = proxies
            .iter()
            .enumerate()
            .map(|(client, proxy)| Slot {
                proxy: proxy.clone(),
                workload_rng: stream(seed ^ client as u64, WORKLOAD_STREAM),
                paused: false,
                done: false,
                last_call: None,
                last_session: None,
            })
            .collect();
        let run: Shared = Arc::new(Mutex::new(Run {
            clients,
            oracles: Oracles::new(config.oracles.clone(), config.clients),
            sessions: vec![None; config.clients],
            phase: Phase::Faults,
            stats: RunStats::default(),
            fault_history: Vec::new(),
            request_faults: drawn.per_request,
            fault_rng: stream(seed, REQUEST_STREAM),
            resource: FencedResource::default(),
            expired: BTreeSet::new(),
            t0,
            workloads_done_at_verdict: None,
            failure: None,
        }));
        for (client, proxy) in proxies.iter().enumerate() {
            proxy.set_request_hook(request_hook(run.clone(), backend.clone(), client));
        }
        let mut tasks = tokio::task::JoinSet::new();
        for (at, fault) in drawn.timed {
            let strike = Strike {
                run: run.clone(),
                backend: backend.clone(),
                addr: self.zk.addr().to_string(),
                at_ns: t0 + at,
                fault,
            };
            tasks.spawn(strike.run());
        }
        let mut workloads = tokio::task::JoinSet::new();
        for (client, proxy) in proxies.iter().enumerate() {
            let world = LiveWorld {
                client,
                clients: config.clients,
                cluster: proxy.addr().to_string(),
                session_timeout_ms: config.session_timeout_ms,
                run: run.clone(),
                backend: backend.clone(),
            };
            let context = Context::new(Arc::new(world), self.spec.clone(), self.path.clone());
            let workload = (self.workload)(context);
            let run = run.clone();
            workloads.spawn(async move {
                workload.await;
                lock(&run).clients[client].done = true;
            });
        }
        let supervisor = Supervisor {
            run: run.clone(),
            backend: backend.clone(),
            config: config.clone(),
            root: root.clone(),
            initial,
        };
        let panicked = supervisor.run(&mut workloads).await;
        tasks.abort_all();
        workloads.abort_all();
        while workloads.join_next().await.is_some() {}
        end_sessions(&run, self.zk.addr()).await;
        for proxy in &proxies {
            proxy.clear_request_hook(); // the hook holds the run, which holds the proxy
        }
        let mut run = lock(&run);
        if let Some(failure) = run.failure.take().or(panicked) {
            return Err(BackendError(failure));
        }
        run.stats.sim_time_ns = backend.now_ns().saturating_sub(t0);
        let done = run
            .workloads_done_at_verdict
            .unwrap_or_else(|| run.clients.iter().filter(|s| s.done).count());
        let (stats, history) = (run.stats.clone(), std::mem::take(&mut run.fault_history));
        Ok(live_report(
            seed,
            &run.oracles,
            stats,
            history,
            drawn.rates,
            done,
        ))
    }
}

/// Asks the seed's plan about each request the client's proxy forwards
/// (numbered from 1, as the simulator numbers a client's requests).
fn request_hook(
    run: Shared,
    backend: Arc<dyn Backend>,
    client: usize,
) -> crate::proxy::RequestHook {
    Arc::new(move |n: u64| {
        let now = backend.now_ns();
        let mut run = lock(&run);
        run.stats.requests += 1;
        if run.phase != Phase::Faults {
            return None;
        }
        let Run {
            request_faults,
            fault_rng,
            ..
        } = &mut *run;
        let fault = request_faults.for_request(client, n, fault_rng)?;
        let loss = match fault {
            Fault::LoseRequest { down_ms } => RequestLoss::BeforeApply { down_ms },
            Fault::LoseReply { down_ms } => RequestLoss::AfterApply { down_ms },
            _ => return None,
        };
        run.record_fault(now, client, fault);
        Some(loss)
    })
}

/// One time-triggered fault: waits for its time and strikes its client's
/// proxy (nothing once the faults have healed).
struct Strike {
    run: Shared,
    backend: Arc<dyn Backend>,
    addr: String,
    at_ns: u64,
    fault: ScheduledFault,
}

impl Strike {
    async fn run(self) {
        let now = self.backend.now_ns();
        let wait_ms = self.at_ns.saturating_sub(now).div_ceil(1_000_000);
        self.backend.sleep(wait_ms).await;
        let client = self.fault.client;
        let proxy = {
            let run = lock(&self.run);
            if run.phase != Phase::Faults {
                return;
            }
            run.clients[client].proxy.clone()
        };
        let now = self.backend.now_ns();
        let fault = self.fault.fault.clone();
        let struck = match fault {
            Fault::Disconnect { down_ms } => {
                proxy.drop_for(down_ms);
                true
            }
            Fault::Silent { down_ms } => {
                proxy.silence_for(down_ms);
                true
            }
            Fault::Pause { .. } => {
                proxy.black_hole(crate::proxy::Hole::Both);
                lock(&self.run).clients[client].paused = true;
                true
            }
            Fault::Expire => self.expire(&proxy, client, now).await,
            // Refused before the run (`zk_sim::scenario::unsupported`).
            _ => false,
        };
        if !struck {
            return;
        }
        lock(&self.run).record_fault(now, client, fault.clone());
        if let Fault::Pause { pause_ms } = fault {
            self.backend.sleep(pause_ms).await;
            // Unless the heal already resumed it.
            let mut run = lock(&self.run);
            if run.clients[client].paused {
                run.clients[client].paused = false;
                proxy.heal();
            }
        }
    }

    /// Expires the session the client's proxy saw granted; whether that
    /// struck (false: no session, or already gone).
    async fn expire(&self, proxy: &FaultProxy, client: usize, now: u64) -> bool {
        let Some(session) = proxy.session() else {
            return false;
        };
        match expire_session(&self.addr, &session).await {
            Ok(Takeover::Expired) => {}
            Ok(Takeover::AlreadyGone) => return false,
            Err(error) => {
                lock(&self.run)
                    .failure
                    .get_or_insert(format!("expiring a session failed: {error}"));
                return false;
            }
        }
        let mut run = lock(&self.run);
        run.expired.insert(session.session_id);
        if run.sessions[client] == Some(SessionId(session.session_id)) {
            run.sessions[client] = None;
            run.observe(now, client, HoldId::FIRST, Seen::SessionEnded);
        }
        true
    }
}

/// Moves the run through its phases and runs the end checks.
struct Supervisor {
    run: Shared,
    backend: Arc<dyn Backend>,
    config: WorldConfig,
    root: Path,
    initial: BTreeSet<Path>,
}

impl Supervisor {
    /// The run to its verdict; returns why it cannot be judged if a
    /// workload panicked.
    async fn run(&self, workloads: &mut tokio::task::JoinSet<()>) -> Option<String> {
        let t0 = lock(&self.run).t0;
        let phase_end = t0 + self.config.fault_phase_ms.saturating_mul(1_000_000);
        let heal_ns = self.config.heal_ms.saturating_mul(1_000_000);
        let mut cut_short = false;
        loop {
            self.backend.sleep(TICK_MS).await;
            while let Some(finished) = workloads.try_join_next() {
                if let Err(error) = finished {
                    if error.is_panic() {
                        return Some(format!("a client's workload panicked: {error}"));
                    }
                }
            }
            if let Some(failure) = self.backend.local_failure() {
                lock(&self.run).failure.get_or_insert(failure);
                cut_short = true;
                break;
            }
            let now = self.backend.now_ns();
            let mut run = lock(&self.run);
            for client in 0..run.clients.len() {
                run.sync_session(now, client);
            }
            if self.config.stop_on_violation && run.oracles.has_violation() {
                cut_short = true;
                break;
            }
            let all_done = run.clients.iter().all(|slot| slot.done);
            match run.phase {
                Phase::Faults if all_done || now >= phase_end => {
                    run.phase = Phase::Healing {
                        deadline_ns: now + heal_ns,
                    };
                    for slot in &mut run.clients {
                        slot.paused = false;
                        slot.proxy.heal();
                        slot.proxy.end_silence();
                    }
                }
                Phase::Healing { .. } if all_done => break,
                Phase::Healing { deadline_ns } if now >= deadline_ns => {
                    self.liveness(&mut run, now);
                    break;
                }
                _ => {}
            }
        }
        {
            let mut run = lock(&self.run);
            run.phase = Phase::Done;
            let done = run.clients.iter().filter(|slot| slot.done).count();
            run.workloads_done_at_verdict = Some(done);
        }
        if !cut_short {
            self.backend.sleep(self.config.settle_ms).await;
            self.end_checks().await;
        }
        None
    }

    fn liveness(&self, run: &mut Run, now: u64) {
        let progress = run.clients.iter().map(|slot| ClientProgress {
            done: slot.done,
            last_call: slot.last_call.clone(),
        });
        judge_liveness(&mut run.oracles, progress, run.t0, now, self.config.heal_ms);
    }

    /// Leaked nodes, against a snapshot of the real tree; undelivered items.
    async fn end_checks(&self) {
        let now = self.backend.now_ns();
        let tree = end_tree(&*self.backend, &self.root).await;
        let mut run = lock(&self.run);
        match tree {
            Ok(tree) => {
                let at = run.now_rel(now);
                let run = &mut *run;
                judge_end(&mut run.oracles, at, &tree, &self.initial, &run.sessions);
            }
            Err(failure) => {
                run.failure.get_or_insert(failure);
            }
        }
    }
}

/// Expires every session the proxies saw granted (the application's
/// handles may still hold them): the run's ephemerals go at once.
async fn end_sessions(run: &Shared, addr: &str) {
    let sessions: Vec<LinkSession> = {
        let run = lock(run);
        run.clients
            .iter()
            .flat_map(|slot| {
                let last = slot.proxy.session().or_else(|| slot.last_session.clone());
                last.into_iter()
            })
            .collect()
    };
    for session in sessions {
        let _ = expire_session(addr, &session).await;
    }
}

/// One client's world in a live run: real time, its proxy's address, and
/// the run's oracles.
struct LiveWorld {
    client: usize,
    clients: usize,
    cluster: String,
    session_timeout_ms: u64,
    run: Shared,
    backend: Arc<dyn Backend>,
}

impl LiveWorld {
    fn run(&self) -> MutexGuard<'_, Run> {
        lock(&self.run)
    }
}

impl World for LiveWorld {
    fn index(&self) -> usize {
        self.client
    }

    fn clients(&self) -> usize {
        self.clients
    }

    fn cluster(&self) -> String {
        self.cluster.clone()
    }

    fn session_timeout_ms(&self) -> u64 {
        self.session_timeout_ms
    }

    fn stopping(&self) -> bool {
        self.run().phase != Phase::Faults
    }

    fn draw_ms(&self, range: MsRange) -> u64 {
        range.draw(&mut self.run().clients[self.client].workload_rng)
    }

    fn sleep_ms(&self, ms: u64) -> Sleep {
        let (run, backend, client) = (self.run.clone(), self.backend.clone(), self.client);
        Box::pin(async move {
            if ms > 0 {
                backend.sleep(ms).await;
            }
            // A paused process's timers fire when it resumes.
            while lock(&run).clients[client].paused {
                backend.sleep(PAUSE_POLL_MS).await;
            }
        })
    }

    fn write_resource(&self, token: FencingToken) -> bool {
        let now = self.backend.now_ns();
        let mut run = self.run();
        let (accepted, seen) = run.resource.write(token.0);
        run.observe(now, self.client, HoldId::FIRST, seen);
        accepted
    }

    fn doing(&self, hold: HoldId, call: CallObservation) {
        let now = self.backend.now_ns();
        let mut run = self.run();
        run.stats.calls += 1;
        run.clients[self.client].last_call = Some((now, format!("{call:?}")));
        run.observe(now, self.client, hold, Seen::Call(call));
    }

    fn saw(&self, hold: HoldId, observation: Observation) {
        let now = self.backend.now_ns();
        let mut run = self.run();
        if matches!(
            observation,
            Observation::Acquired {
                hold: Hold::Exclusive,
                ..
            }
        ) {
            // The fenced check asks whether the holder's session is alive.
            run.sync_session(now, self.client);
        }
        run.stats.count_outcome(&observation);
        run.observe(now, self.client, hold, Seen::Outcome(observation));
    }
}
