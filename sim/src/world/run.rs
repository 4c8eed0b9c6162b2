//! One seeded run: builds the world in a fresh madsim runtime, lets the
//! clients and the server run through the fault phase and the heal phase,
//! and collects the verdict.

use super::client::Client;
use super::config::WorldConfig;
use super::connection::connection_task;
use super::draws::{Draws, Stream};
use super::events::{Event, EventQueue, LocalTimer};
use super::report::{RunReport, RunStats};
use super::settle::wait_until_settled;
use super::shared::{
    enter, ms_to_ns, trace, ClientSlot, HostList, Link, Phase, Rngs, Shared, SimRecipe, Wakeup,
};
use super::shell::scheduler_task;
use super::trace::Trace;
use crate::client::ClientSession;
use crate::diagnosis::History;
use crate::ensemble::Ensemble;
use crate::faults::plan::{SWARM_STREAM, TIMED_STREAM};
use crate::faults::MsRange;
use crate::oracles::Oracles;
use crate::server::{ServerConfig, SortedOrder, ZkServer};
use madsim::runtime::{Handle, Runtime};
use madsim::task::NodeId;
use madsim::time::TimeHandle;
use rand::Rng;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;
use zk_recipes::zk::SessionId;

/// A workload future as the world stores it.
pub type BoxedWorkload = Pin<Box<dyn Future<Output = ()> + Send>>;

type MakeRecipe<R> = dyn Fn(usize, u64) -> R + Send + Sync;
type MakeWorkload<R> = dyn Fn(Client<R>) -> BoxedWorkload + Send + Sync;

/// A recipe, a workload and a world configuration: run it for any seed.
pub struct Simulation<R: SimRecipe> {
    pub config: WorldConfig,
    make_recipe: Arc<MakeRecipe<R>>,
    workload: Arc<MakeWorkload<R>>,
    /// Each run on an OS thread of its own (see [`Simulation::isolated`]).
    isolated: bool,
}

impl<R: SimRecipe> Clone for Simulation<R> {
    fn clone(&self) -> Self {
        Simulation {
            config: self.config.clone(),
            make_recipe: self.make_recipe.clone(),
            workload: self.workload.clone(),
            isolated: self.isolated,
        }
    }
}

const ADMIN_SESSION: SessionId = SessionId(0x7fff_ffff_ffff_fff0);
const UNIQUE_ID_STREAM: u64 = 20;
const WORKLOAD_STREAM: u64 = 21;
const ENSEMBLE_SWARM_STREAM: u64 = 22;

impl<R: SimRecipe> Simulation<R> {
    /// `make_recipe(client, unique_id)` builds each client's machine (the
    /// unique id is drawn from the seed); `workload(client)` is the
    /// application each client runs.
    pub fn new<F>(
        config: WorldConfig,
        make_recipe: impl Fn(usize, u64) -> R + Send + Sync + 'static,
        workload: impl Fn(Client<R>) -> F + Send + Sync + 'static,
    ) -> Simulation<R>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        Simulation {
            config,
            make_recipe: Arc::new(make_recipe),
            workload: Arc::new(move |client| Box::pin(workload(client))),
            isolated: false,
        }
    }

    /// Runs each seed on an OS thread of its own ([`super::isolated`]), so
    /// that a `HashMap`'s order in the application's code is a function of
    /// the seed (about 25-75 µs a run: for code zkcheck did not write).
    pub fn isolated(mut self) -> Simulation<R> {
        self.isolated = true;
        self
    }

    /// Runs one seed in a fresh madsim runtime (call from outside any
    /// runtime), then frees the world (see `shut_down`).
    /// tokio's generator (an unbiased `select!`) is seeded by the run; an
    /// [`isolated`](Simulation::isolated) simulation runs it on a thread
    /// of its own.
    pub fn run(&self, seed: u64) -> RunReport {
        match self.isolated {
            true => super::isolated::run_isolated(|| self.run_on_this_thread(seed)),
            false => self.run_on_this_thread(seed),
        }
    }

    fn run_on_this_thread(&self, seed: u64) -> RunReport {
        let runtime = Runtime::with_seed_and_config(seed, madsim::Config::default());
        let simulation = self.clone();
        let run = || runtime.block_on(async move { simulation.supervise(seed).await });
        let (report, nodes) = super::isolated::with_seeded_tokio(seed, run);
        shut_down(&runtime, &nodes);
        report
    }

    /// Runs one seed, recording the trace or not whatever the config says.
    pub fn run_with_trace(&self, seed: u64, trace: bool) -> RunReport {
        if self.config.trace == trace {
            return self.run(seed);
        }
        let mut simulation = self.clone();
        simulation.config.trace = trace;
        simulation.run(seed)
    }

    /// Runs the world until every workload is done (or the heal deadline
    /// passed, or a violation stopped the run); then, once every workload
    /// is done, heals the faults if they have not healed yet, lets the
    /// world settle (at least `settle_ms`, then until every client is
    /// connected and quiet: see [`super::settle`], bounded by the heal
    /// deadline) and runs the end checks.
    /// Returns the report and the nodes the world's tasks run on.
    async fn supervise(&self, seed: u64) -> (RunReport, Vec<NodeId>) {
        let shared = Arc::new(Mutex::new(self.build_world(seed)));
        if self.config.trace {
            super::app_events::install(Arc::downgrade(&shared));
        }
        let nodes = self.start_nodes(&shared);
        wait_until_over(&shared).await;
        let heal_needed = {
            let mut world = enter(&shared);
            let over_early = world.phase != Phase::Done;
            if over_early {
                world.heal();
            }
            over_early
        };
        if heal_needed {
            madsim::time::sleep(Duration::from_millis(self.config.settle_ms)).await;
            wait_until_settled(&shared).await;
        }
        let mut world = enter(&shared);
        let report = finish(&mut world, seed);
        if let Some(tape) = world.draws.recorded() {
            super::draws::give_back(tape);
        }
        (report, nodes)
    }

    fn build_world(&self, seed: u64) -> Shared<R> {
        let mut draws = Draws::for_run(seed);
        let (config, swarmed) = swarm_ensemble(self.config.clone(), &mut draws);
        let time = TimeHandle::current();
        let mut server = ZkServer::new(ServerConfig {
            extended_types_enabled: config.extended_types,
        });
        set_up(&mut server, &config);
        let initial_paths: BTreeSet<_> = server.paths().into_iter().collect();
        assert!(
            config.tick_time_ms > 0,
            "tick_time_ms is 0: the expiry tick would never let time pass (a validation gap: \
             scenarios refuse it)"
        );
        let phase_ns = ms_to_ns(config.fault_phase_ms);
        let drawn = config.faults.materialize_from(
            &mut draws.stream("swarm", SWARM_STREAM),
            &mut draws.stream("timed", TIMED_STREAM),
            config.clients,
            phase_ns,
        );
        let mut unique_ids = draws.stream("unique_ids", UNIQUE_ID_STREAM);
        let clients = (0..config.clients)
            .map(|client| {
                let unique_id = unique_ids.gen::<u64>();
                new_slot(
                    (self.make_recipe)(client, unique_id),
                    draws.workload(client, WORKLOAD_STREAM),
                )
            })
            .collect();
        let loss_words = drawn.per_request.loss_words();
        let mut world = Shared {
            oracles: Oracles::new(config.oracles.clone(), config.clients),
            history: History::new(config.clients),
            trace: Trace::new(config.trace),
            sessions: vec![None; config.clients],
            request_faults: drawn.per_request,
            rates: drawn.rates,
            start: time.elapsed(),
            now: 0,
            time,
            ensemble: Ensemble::from_server(server, config.servers),
            applies_scheduled: vec![0; config.servers],
            last_apply_ns: vec![0; config.servers],
            servers: super::server_faults::ServerFaults::new(config.servers),
            rng: Rngs::new(&mut draws),
            coverage: draws
                .coverage
                .then(|| super::Coverage::striking_with(loss_words)),
            draws,
            queue: EventQueue::default(),
            scheduler: Wakeup::default(),
            clients,
            owners: BTreeMap::new(),
            stats: RunStats::default(),
            resource_max_token: None,
            fault_history: Vec::new(),
            phase: Phase::Faults,
            supervisor: None,
            settling: false,
            initial_paths,
            handle: Handle::current(),
            run_state: BTreeMap::new(),
            chooser: super::choice_tape::take(),
            pick_scheduled: false,
            arrivals: 0,
            explored_lags_ms: vec![None; config.servers],
            host_lists: vec![HostList::default(); config.clients],
            config,
        };
        world.stats.faults = 0;
        if swarmed {
            let lag = world.config.apply_lag_ms;
            let picked = match world.config.servers {
                1 => "1 server".to_string(),
                n => format!(
                    "{n} servers, followers apply {}-{} ms after each commit",
                    lag.min, lag.max
                ),
            };
            trace!(world, None, Phase, "swarm picked {picked}");
        }
        schedule_start(&mut world, drawn.timed, phase_ns);
        world
    }

    /// Starts the server's and every client's tasks; returns their nodes.
    fn start_nodes(&self, shared: &Arc<Mutex<Shared<R>>>) -> Vec<NodeId> {
        let handle = Handle::current();
        let server_node = handle.create_node().name("zk-server").build();
        server_node.spawn(scheduler_task(shared.clone()));
        let mut nodes = vec![server_node.id()];
        for client in 0..self.config.clients {
            let node = handle
                .create_node()
                .name(format!("client-{client}"))
                .build();
            enter(shared).clients[client].node = Some(node.id());
            nodes.push(node.id());
            node.spawn(connection_task(shared.clone(), client));
            let app = Client::new(client, shared.clone());
            let workload = self.workload.clone();
            node.spawn(async move {
                app.connected().await;
                workload(app.clone()).await;
                app.mark_done();
            });
        }
        nodes
    }
}

/// Frees a finished run's world. Its tasks are still pending when the
/// supervisor returns, and they and the world hold each other (a task
/// holds the `Arc` of the world, the world holds the task's waker and the
/// runtime's handle, whose queue holds woken tasks): dropping the runtime
/// frees none of it, and a sweep kept every seed's world (about 100 KB a
/// seed). Killing a node wakes its tasks; the next turn of the executor
/// drops a killed task's future instead of polling it, and with the last
/// task gone the world goes.
fn shut_down(runtime: &Runtime, nodes: &[NodeId]) {
    forget_thread_state();
    for &node in nodes {
        runtime.handle().kill(node);
    }
    runtime.block_on(std::future::ready(()));
}

/// What a run keeps on its thread for the application's code: the async
/// clients' bridges and the sink of its log events.
fn forget_thread_state() {
    super::async_bridge::forget_bridges();
    super::app_events::uninstall();
}

fn new_slot<R: SimRecipe>(recipe: R, workload_rng: Stream) -> ClientSlot<R> {
    ClientSlot {
        session: ClientSession::new(recipe),
        node: None,
        inbox: VecDeque::new(),
        conn_waker: None,
        outcomes: VecDeque::new(),
        app_waker: None,
        link: Link::default(),
        connecting: None,
        scheduled_timers: BTreeMap::new(),
        requests_received: 0,
        armed_fault: None,
        last_sent_ns: 0,
        retry: None,
        pinging: false,
        tick_anchor_ns: 0,
        ping_check_ns: None,
        paused: false,
        workload_done: false,
        workload_rng,
        last_call: None,
        last_outcome: None,
        awaiting_answer: false,
        workload_timer: None,
        awaiting: VecDeque::new(),
        held: VecDeque::new(),
        inputs: 0,
    }
}

/// Creates the recipe's parent nodes with an admin session, then closes it.
fn set_up(server: &mut ZkServer, config: &WorldConfig) {
    server
        .open_session(ADMIN_SESSION, u64::MAX / 4)
        .expect("admin session");
    for request in &config.setup {
        let applied = server.apply(ADMIN_SESSION, request, &mut SortedOrder);
        assert!(
            applied.result.is_ok() || applied.result == Err(zk_recipes::zk::ZkError::NodeExists),
            "setup request {request:?} failed: {:?}. This is a validation gap: scenario \
             validation must refuse a setup the server cannot apply (a parent that is not a \
             valid path or whose own parent is missing) before anything runs",
            applied.result
        );
    }
    for (parent, next) in &config.sequence_starts {
        server
            .set_sequence_counter(parent, *next)
            .expect("sequence start needs an existing parent");
    }
    server
        .close_session(ADMIN_SESSION, &mut SortedOrder)
        .expect("admin session alive");
}

/// The first events: sessions open, ticks start, faults wait, heal comes.
fn schedule_start<R: SimRecipe>(
    world: &mut Shared<R>,
    timed: Vec<(u64, crate::faults::ScheduledFault)>,
    phase_ns: u64,
) {
    for client in 0..world.clients.len() {
        world.clients[client].retry = Some((0, LocalTimer::NewSession));
        world.schedule(
            0,
            Event::Local {
                client,
                timer: LocalTimer::NewSession,
            },
        );
    }
    world.schedule(ms_to_ns(world.config.tick_time_ms), Event::ExpiryTick);
    if world.config.reaper_interval_ms > 0 {
        world.schedule(ms_to_ns(world.config.reaper_interval_ms), Event::ReaperTick);
    }
    for (at, fault) in timed {
        world.schedule(at, Event::Fault(fault));
    }
    world.schedule(phase_ns, Event::Heal);
}

/// Waits until the run is done or every workload finished.
async fn wait_until_over<R: SimRecipe>(shared: &Arc<Mutex<Shared<R>>>) {
    std::future::poll_fn(|cx| {
        let mut world = enter(shared);
        if world.phase == Phase::Done || world.clients.iter().all(|slot| slot.workload_done) {
            Poll::Ready(())
        } else {
            world.supervisor = Some(cx.waker().clone());
            Poll::Pending
        }
    })
    .await
}

/// End-of-run checks and the report.
fn finish<R: SimRecipe>(world: &mut Shared<R>, seed: u64) -> RunReport {
    world.finish_run();
    // Two passes: a container emptied by one pass is reaped by the next.
    world.reap();
    world.reap();
    let now = world.now_ns();
    // A run stopped at its first violation never finished its workload:
    // its leftovers (nodes, undelivered items) say nothing.
    let cut_short = world.config.stop_on_violation && world.oracles.has_violation();
    let Shared {
        oracles,
        ensemble,
        initial_paths,
        clients,
        ..
    } = world;
    if !cut_short {
        oracles.finish(now, ensemble.committed(), initial_paths);
        let tallies: Vec<_> = clients.iter().map(|slot| slot.session.creates).collect();
        oracles.judge_churn(now, &tallies);
        world.diagnose_new();
    }
    world.stats.sim_time_ns = world.now_ns();
    world.stats.planned_goals = world.config.planned_goals;
    trace!(
        world,
        None,
        Phase,
        "verdict: {}",
        match (world.oracles.has_violation(), world.stats.calls) {
            (true, 0) => "no call was made: what the oracles report is not judged",
            (true, _) => "VIOLATION",
            (false, _) => "pass",
        }
    );
    if let Some(tape) = world.chooser.take() {
        super::choice_tape::give_back(tape);
    }
    RunReport {
        seed,
        violations: world.oracles.violations().to_vec(),
        stats: world.stats.clone(),
        fault_history: std::mem::take(&mut world.fault_history),
        rates: world.rates.clone(),
        herd_maxima: world.oracles.herd_maxima(),
        herd_figures: world.oracles.herd_figures(),
        workloads_done: world
            .clients
            .iter()
            .filter(|slot| slot.workload_done)
            .count(),
        unjudged: Vec::new(),
        trace: std::mem::take(&mut world.trace),
        holds: std::mem::take(&mut world.history.holds),
        coverage: world.coverage.take().map(super::Coverage::finished),
    }
    .set_aside_unexercised()
}

/// In swarm mode an ensemble scenario lets each seed pick its ensemble as
/// well as its faults: an odd number of servers up to the scenario's `ensemble`
/// (one included), and a cap on the followers' lag drawn within
/// `timing.apply_lag_ms`. A schedule that strikes a server keeps the
/// scenario's ensemble. Returns the config and whether the seed picked.
fn swarm_ensemble(mut config: WorldConfig, draws: &mut Draws) -> (WorldConfig, bool) {
    let strikes_a_server = config.faults.schedule.iter().any(|f| f.fault.is_ensemble());
    if !config.faults.swarm || config.servers < 2 || strikes_a_server {
        return (config, false);
    }
    let mut rng = draws.stream("ensemble_swarm", ENSEMBLE_SWARM_STREAM);
    let odd_counts = config.servers.div_ceil(2);
    config.servers = 2 * rng.gen_range(0..odd_counts) + 1;
    let lag = config.apply_lag_ms;
    config.apply_lag_ms = MsRange::new(lag.min, rng.gen_range(lag.min..=lag.max));
    (config, true)
}
