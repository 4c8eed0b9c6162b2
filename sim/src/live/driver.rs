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
//!
//! This file builds the run from the seed and polls its futures to the
//! end; the connection tasks are in `connection`, the supervisor in
//! `supervisor`.

mod connection;
mod supervisor;

use super::app::LiveClient;
use super::common::{live_report, prepare, FencedResource};
use super::run_state::{lock, Phase, Run, Slot};
use super::{Backend, BackendError, BoxFuture, LiveRunner};
use crate::client::ClientSession;
use crate::faults::plan::{stream, REQUEST_STREAM};
use crate::faults::ScheduledFault;
use crate::oracles::{Oracles, Property};
use crate::server::{ServerConfig, ZkServer};
use crate::world::{RunReport, RunStats, SimRecipe, Trace, WorldConfig};
use connection::{ConnectionTask, TaskConfig};
use rand::Rng;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use supervisor::Supervisor;
use zk_recipes::zk::Path;

/// The same streams as the simulator's world (`world::run`).
const UNIQUE_ID_STREAM: u64 = 20;
const WORKLOAD_STREAM: u64 = 21;
const DELAY_STREAM: u64 = 13;
/// How often the supervisor looks at the run.
const TICK_MS: u64 = 10;

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
