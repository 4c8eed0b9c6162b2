//! The world's state, shared by its tasks behind one mutex (madsim runs
//! one task at a time, so the lock is never contended; no task holds it
//! across an await).

pub use super::app::SimRecipe;
use super::config::WorldConfig;
use super::draws::{Draws, Stream};
use super::events::{Event, EventQueue, Inbound, LocalTimer, ToClient, ToServer};
use super::report::RunStats;
use super::trace::Trace;
use crate::client::ClientSession;
use crate::diagnosis::{diagnose_undiagnosed, ClientScene, History, Scene};
use crate::ensemble::Ensemble;
use crate::ensemble::EnsembleEvent;
use crate::faults::{RequestFaults, ScheduledFault};
use crate::oracles::Violation;
use crate::oracles::{Oracles, Seen, View};
use madsim::task::NodeId;
use madsim::time::TimeHandle;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::future::Future;
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Waker};
use std::time::Duration;
use zk_recipes::zk::{Path, SessionId};
use zk_recipes::TimerId;

/// Seeded random streams, one per purpose (see `faults::plan::stream`),
/// each on the run's draw tape when it has one (`super::draws`).
pub struct Rngs {
    /// Message latencies.
    pub net: Stream,
    /// The order of getChildren results.
    pub child_order: Stream,
    /// The order a closing session's ephemerals are deleted in.
    pub ephemeral_order: Stream,
    /// Followers' apply lags.
    pub lag: Stream,
    /// The server each connection attempt lands on.
    pub placement: Stream,
    /// Per-request faults and the choices faults make.
    pub faults: Stream,
    /// Session ids and unique ids.
    pub ids: Stream,
    /// Reconnect and new-session delays.
    pub delays: Stream,
    /// Choices timed faults make (which watch fires spuriously).
    pub choices: Stream,
    /// Swarm mode: when a partitioned server notices (`world::servers`).
    pub detect: Stream,
    /// How long each election takes (`WorldConfig::election_ms`).
    pub election: Stream,
}

impl Rngs {
    pub fn new(draws: &mut Draws) -> Rngs {
        Rngs {
            net: draws.stream("net", 10),
            child_order: draws.stream("child_order", 11),
            faults: draws.stream("faults", crate::faults::plan::REQUEST_STREAM),
            ids: draws.stream("ids", 12),
            delays: draws.stream("delays", 13),
            choices: draws.stream("choices", 14),
            ephemeral_order: draws.stream("ephemeral_order", 16),
            lag: draws.stream("lag", 17),
            placement: draws.stream("placement", 18),
            detect: draws.stream("detect", 23),
            election: draws.stream("election", 24),
        }
    }
}

/// The run's phases: faults, then healing (no faults; liveness deadline),
/// then done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Faults,
    Healing { deadline_ns: u64 },
    Done,
}

/// A client's connection as both ends see it. Every connection attempt and
/// every drop starts a new epoch; a message arriving with an older epoch
/// was in flight on a connection that is gone, and is lost.
#[derive(Clone, Debug, Default)]
pub struct Link {
    pub epoch: u32,
    /// The server has accepted this epoch's connection.
    pub server_up: bool,
    /// The session the connection belongs to.
    pub session: Option<SessionId>,
    /// The server the connection is to (an index into the ensemble).
    pub server: usize,
    /// Arrival time of the last message sent each way (FIFO).
    pub up_last_ns: u64,
    pub down_last_ns: u64,
    /// Reconnecting fails until then (network down).
    pub down_until_ns: u64,
    /// Notifications are delayed by `.0` ns until `.1` (fault).
    pub watch_delay: Option<(u64, u64)>,
    /// The connection is a black hole until then (`Fault::Silent`):
    /// nothing sent either way arrives.
    pub silent_until_ns: u64,
    /// When the client last heard from the server (its read timeout runs
    /// from there).
    pub last_heard_ns: u64,
    /// Reconnect attempts since the client last had a connection (the
    /// client library's backoff counts them).
    pub attempts: u64,
    /// Client-side expiry (`FaultRates::client_expiry`): when the client
    /// gives up on its session, counted from the loss of its connection.
    pub gives_up_at_ns: Option<u64>,
    /// When the client last received anything from a server (the
    /// `zookeeper-client` crate's `last_recv`: its own give-up deadline,
    /// 7/5 of the session timeout, runs from there).
    pub last_recv_ns: u64,
    /// The `zookeeper-client` crate gave up on the session: the world opens
    /// no new session until the application connects again
    /// (`Client::connect_again`).
    pub awaits_connect: bool,
}

/// What a connection attempt in flight is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Connecting {
    Reconnect,
    Open(SessionId),
}

/// One client process.
pub struct ClientSlot<R: SimRecipe> {
    pub session: ClientSession<R>,
    pub node: Option<NodeId>,
    pub inbox: VecDeque<Inbound>,
    pub conn_waker: Option<Waker>,
    /// Outcomes not yet taken by the workload.
    pub outcomes: VecDeque<R::Outcome>,
    pub app_waker: Option<Waker>,
    pub link: Link,
    pub connecting: Option<Connecting>,
    /// Recipe timers the event queue holds, by id (due time in ms).
    pub scheduled_timers: BTreeMap<TimerId, u64>,
    /// Requests the server received from this client (per-request faults).
    pub requests_received: u64,
    /// A per-request fault armed by the schedule for the next request.
    pub armed_fault: Option<crate::faults::Fault>,
    pub last_sent_ns: u64,
    /// The pending reconnect or new-session attempt: when it is due and
    /// which it is. A retry timer firing while none is pending, or before
    /// the pending one is due, was superseded (the heal moves a far attempt
    /// closer) and does nothing.
    pub retry: Option<(u64, LocalTimer)>,
    /// The ping timer chain has started (the Java client's cadence).
    pub pinging: bool,
    /// The `zookeeper-client` crate's cadence (`crate_ticks`): when its
    /// tick grid started (the connection's establishment), and the tick
    /// it pings at next if still idle.
    pub tick_anchor_ns: u64,
    pub ping_check_ns: Option<u64>,
    pub paused: bool,
    pub workload_done: bool,
    pub workload_rng: Stream,
    /// The last application call, for liveness reports.
    pub last_call: Option<(u64, R::Call)>,
    /// The last outcome the workload took, as text, with its time (what
    /// the client holds, for liveness reports).
    pub last_outcome: Option<(u64, String)>,
    /// The last call has not been answered yet: no outcome was taken since
    /// it was made. (Times cannot tell: a workload calls again in the same
    /// nanosecond it took the previous answer.)
    pub awaiting_answer: bool,
    /// The workload's own timer (a hold, think or work time, or a bounded
    /// wait for an outcome) while it runs: (started, due), in ns.
    pub workload_timer: Option<(u64, u64)>,
    /// Explored runs only: requests that reached the server and wait for
    /// it to pick them, oldest first, each with its arrival number.
    pub held: VecDeque<(u64, zk_recipes::zk::Request)>,
    /// Explored runs only: a hash of everything handed to this client
    /// (its history of inputs, without their times; pings left out).
    pub inputs: u64,
    /// Requests the server took and has not answered yet, oldest first
    /// (with an ensemble, a reply waits for the session's server).
    pub awaiting: VecDeque<Awaited>,
}

/// A request the server took: its number, itself, whether the fault plan
/// loses its reply (dropping the connection as it is sent), and whether
/// the leader committed it.
#[derive(Clone, Debug)]
pub struct Awaited {
    pub number: u64,
    pub request: zk_recipes::zk::Request,
    pub lose_reply_down_ms: Option<u64>,
    /// A write the leader committed (traced and recorded then; its reply
    /// comes when the session's server applies it).
    pub committed: bool,
}

/// The scheduler's wakeup: the server task's waker and the deadlines of the
/// madsim timers set for it that have not fired yet (madsim cannot cancel a
/// timer, so a new one is set only when it would fire before all of these).
#[derive(Default)]
pub struct Wakeup {
    pub waker: Option<Waker>,
    pub armed: BTreeSet<u64>,
}

impl Wakeup {
    /// Forgets the timers that have fired by `now`.
    pub fn fired(&mut self, now: u64) {
        while self.armed.first().is_some_and(|at| *at <= now) {
            self.armed.pop_first();
        }
    }

    /// True if a pending timer fires no later than `at`.
    pub fn covers(&self, at: u64) -> bool {
        self.armed.first().is_some_and(|first| *first <= at)
    }
}

pub struct Shared<R: SimRecipe> {
    pub config: WorldConfig,
    pub time: TimeHandle,
    pub start: Duration,
    /// Simulated ns since the start, read once per task poll (madsim moves
    /// the clock only between polls); see [`enter`].
    pub now: u64,
    /// The servers: one, or a leader and lagging followers.
    pub ensemble: Ensemble,
    /// Per server, follower applies scheduled and not yet run, and the
    /// time of the last one (a follower applies in log order).
    pub applies_scheduled: Vec<usize>,
    pub last_apply_ns: Vec<u64>,
    /// Servers down by fault, lag spikes, the election under way.
    pub servers: super::server_faults::ServerFaults,
    pub rng: Rngs,
    /// Where the streams come from; what they drew, when recording.
    pub draws: Draws,
    pub queue: EventQueue,
    pub scheduler: Wakeup,
    pub clients: Vec<ClientSlot<R>>,
    /// Every client's current session id (for the oracles' view).
    pub sessions: Vec<Option<SessionId>>,
    pub owners: BTreeMap<SessionId, usize>,
    pub oracles: Oracles,
    /// What diagnoses need to remember (recorded always).
    pub history: History,
    pub trace: Trace,
    pub stats: RunStats,
    /// The highest token the fenced resource accepted.
    pub resource_max_token: Option<i64>,
    pub request_faults: RequestFaults,
    /// The fault rates in force (drawn from the seed in swarm mode).
    pub rates: crate::faults::FaultRates,
    /// Every fault that struck, in order (the shrinker's input).
    pub fault_history: Vec<ScheduledFault>,
    pub phase: Phase,
    pub supervisor: Option<Waker>,
    /// The supervisor waits for the world to go quiet before the end
    /// checks: every task that changes the world wakes it (see
    /// [`Shared::unsettled`]).
    pub settling: bool,
    pub initial_paths: BTreeSet<Path>,
    pub handle: madsim::runtime::Handle,
    /// State the workloads of one run share (see `Client::run_state`).
    pub run_state: super::app::RunStates,
    /// Where the choices come from: None, the seed (sweeps); a tape, an
    /// exploration or the replay of a choice string (`crate::explore`).
    pub chooser: Option<super::choice_tape::Tape>,
    /// Explored runs only: a `ServerPick` event is queued; requests that
    /// reached the server so far (numbers their arrivals).
    pub pick_scheduled: bool,
    pub arrivals: u64,
    /// Explored runs on an ensemble: each server's apply lag for the whole
    /// run, once the tape chose it (at its first apply).
    pub explored_lags_ms: Vec<Option<u64>>,
    /// On an ensemble: each client's host list, once its order was drawn
    /// or chosen (at its first attempt).
    pub host_lists: Vec<HostList>,
    /// The abstract states and steps of the run, when it keeps them.
    pub coverage: Option<super::Coverage>,
}

/// A client's host list: its servers in the order drawn from the seed or
/// chosen by the tape (empty until then), and the index of the next
/// attempt's.
#[derive(Clone, Debug, Default, Hash)]
pub struct HostList {
    pub order: Vec<usize>,
    pub next: usize,
}

/// Records a trace line, formatting it only when the trace is on.
macro_rules! trace {
    ($world:expr, $client:expr, $kind:ident, $($fmt:tt)+) => {
        if $world.trace.enabled {
            let at = $world.now_ns();
            $world.trace.push(at, $client, $crate::world::TraceKind::$kind, format!($($fmt)+));
        }
    };
}
pub(crate) use trace;

/// Locks the world for a task's poll and reads the clock.
pub fn enter<R: SimRecipe>(shared: &Mutex<Shared<R>>) -> MutexGuard<'_, Shared<R>> {
    let mut world = shared.lock().expect("world lock");
    world.read_clock();
    world
}

/// Milliseconds to nanoseconds, saturating: simulated time never wraps.
/// Every duration the world adds to a time goes through this and
/// `saturating_add`, so a huge setting puts an event at the end of time
/// (it never happens) instead of in the past.
pub fn ms_to_ns(ms: u64) -> u64 {
    ms.saturating_mul(1_000_000)
}

impl<R: SimRecipe> Shared<R> {
    /// Simulated ns since the world started (as of this poll).
    pub fn now_ns(&self) -> u64 {
        self.now
    }

    /// Sets `now` from madsim's clock (a task that locks the world reads it).
    pub fn read_clock(&mut self) {
        let elapsed = self.time.elapsed().saturating_sub(self.start);
        self.now = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
    }

    pub fn now_ms(&self) -> u64 {
        self.now_ns() / 1_000_000
    }

    /// Queues an event and makes sure the scheduler wakes for it.
    pub fn schedule(&mut self, at_ns: u64, event: Event) {
        self.queue.push(at_ns, event);
        self.arm(at_ns);
    }

    /// Registers a madsim timer that wakes the scheduler at `at_ns`, unless
    /// one at or before it is already pending.
    pub fn arm(&mut self, at_ns: u64) {
        let now = self.now_ns();
        self.scheduler.fired(now);
        if self.scheduler.covers(at_ns) {
            return;
        }
        let Some(waker) = self.scheduler.waker.clone() else {
            return; // the scheduler has not run yet; its first poll arms
        };
        if at_ns <= now {
            waker.wake();
            return;
        }
        let deadline = self.time.now_instant() + Duration::from_nanos(at_ns - now);
        let mut sleep = std::pin::pin!(self.time.sleep_until(deadline));
        // sleep_until rounds up to 1 ms; reset keeps the exact deadline.
        sleep.as_mut().reset(deadline);
        let _ = sleep.poll(&mut Context::from_waker(&waker));
        self.scheduler.armed.insert(at_ns);
        self.stats.timers_armed += 1;
    }

    /// Feeds an observation to the oracles and stops the run at the first
    /// violation when asked to.
    pub fn observe(&mut self, client: usize, seen: Seen) {
        self.observe_hold(client, zk_recipes::HoldId::FIRST, seen);
    }

    /// As [`Shared::observe`], about one of the client's holds.
    pub fn observe_hold(&mut self, client: usize, hold: zk_recipes::HoldId, seen: Seen) {
        let at = self.now_ns();
        let view = View {
            server: self.ensemble.committed(),
            sessions: &self.sessions,
        };
        let before = self.oracles.violations().len();
        self.oracles.seen_in_hold(at, client, hold, &seen, &view);
        if self.oracles.violations().len() > before {
            self.diagnose_new();
        }
        if self.config.stop_on_violation && self.oracles.has_violation() {
            self.finish_run();
        }
    }

    /// Records a violation found outside the oracles (liveness), with its
    /// diagnosis.
    pub fn report_violation(&mut self, violation: Violation) {
        self.oracles.report(violation);
        self.diagnose_new();
    }

    /// Attaches a diagnosis to every violation that has none yet, from
    /// the world as it is now (the moment of the violation).
    pub fn diagnose_new(&mut self) {
        if !self.oracles.has_undiagnosed() {
            return;
        }
        let clients = self
            .clients
            .iter()
            .map(|slot| ClientScene {
                // What answered the last call, if anything did yet.
                last_outcome: slot.last_outcome.clone().filter(|_| !slot.awaiting_answer),
                workload_timer: slot.workload_timer,
                ..ClientScene::of(
                    &slot.session,
                    slot.workload_done,
                    slot.paused,
                    slot.last_call.as_ref(),
                )
            })
            .collect();
        let scene = Scene {
            server: self.ensemble.committed(),
            clients,
            owners: &self.owners,
            history: &self.history,
            fifo_dir: self.config.oracles.fifo_dir.as_ref(),
            heal_ms: Some(self.config.heal_ms),
        };
        diagnose_undiagnosed(self.oracles.violations_mut(), &scene);
    }

    /// Ends the run: the supervisor takes over.
    pub fn finish_run(&mut self) {
        if self.phase != Phase::Done {
            self.phase = Phase::Done;
            trace!(self, None, Phase, "run ends");
        }
        if let Some(waker) = self.supervisor.take() {
            waker.wake();
        }
        if let Some(waker) = self.scheduler.waker.clone() {
            waker.wake();
        }
    }

    pub fn faults_active(&self) -> bool {
        self.phase == Phase::Faults
    }

    /// Sends a message to the server on the client's current connection.
    pub fn send_to_server(&mut self, client: usize, msg: ToServer) {
        let now = self.now_ns();
        // A silent connection holds it up (see `world::connection`).
        let silence_end = self.silence_end_ns(client);
        let latency = self.config.latency.draw_ns(&mut self.rng.net);
        let link = &mut self.clients[client].link;
        let at = silence_end
            .unwrap_or(now)
            .saturating_add(latency)
            .max(link.up_last_ns.saturating_add(1));
        link.up_last_ns = at;
        let epoch = link.epoch;
        self.clients[client].last_sent_ns = now;
        self.stats.messages += 1;
        if silence_end.is_some() && !matches!(msg, ToServer::Ping) {
            trace!(self, Some(client), Send, "into the silence: {msg:?}");
        }
        self.schedule(at, Event::ToServer { client, epoch, msg });
    }

    /// Sends a message to the client on its current connection; watch
    /// notifications under a delay fault overtake nothing but are overtaken.
    pub fn send_to_client(&mut self, client: usize, msg: ToClient) {
        let now = self.now_ns();
        // A silent connection holds it up (see `world::connection`).
        let silence_end = self.silence_end_ns(client);
        let latency = self.config.latency.draw_ns(&mut self.rng.net);
        let link = &mut self.clients[client].link;
        let delayed = match (&msg, link.watch_delay, silence_end) {
            (ToClient::Watch(_), Some((delay, until)), None) if now < until => Some(delay),
            _ => None,
        };
        let at = match delayed {
            Some(delay) => now.saturating_add(latency).saturating_add(delay),
            None => {
                let at = silence_end
                    .unwrap_or(now)
                    .saturating_add(latency)
                    .max(link.down_last_ns.saturating_add(1));
                link.down_last_ns = at;
                at
            }
        };
        let epoch = link.epoch;
        self.stats.messages += 1;
        if silence_end.is_some() {
            trace!(self, Some(client), Deliver, "into the silence: {msg:?}");
        }
        self.schedule(at, Event::ToClient { client, epoch, msg });
    }

    /// Hands something to a client process. A running client handles it at
    /// once, as its connection task would at this very instant (saving a
    /// task switch per message); a paused one finds it in its inbox when its
    /// node resumes, behind anything queued before.
    pub fn hand_to(&mut self, client: usize, inbound: Inbound) {
        if self.chooser.is_some() {
            self.note_input(client, &inbound);
        }
        let slot = &mut self.clients[client];
        slot.inbox.push_back(inbound);
        if !slot.paused && slot.inbox.len() == 1 {
            self.client_step(client);
        } else if let Some(waker) = slot.conn_waker.take() {
            waker.wake();
        }
    }

    /// Adds an input to the client's history (explored runs: the memo's
    /// key). Pings come and go with time, not with the run's choices.
    fn note_input(&mut self, client: usize, inbound: &Inbound) {
        use std::hash::{Hash, Hasher};
        if matches!(inbound, Inbound::Timer(LocalTimer::Ping)) {
            return;
        }
        let text = match inbound {
            Inbound::Timer(LocalTimer::Recipe { id, .. }) => format!("timer {id:?}"),
            other => format!("{other:?}"),
        };
        let mut hasher = std::hash::DefaultHasher::new();
        (self.clients[client].inputs, text).hash(&mut hasher);
        self.clients[client].inputs = hasher.finish();
    }

    /// Explored runs: what the memo knows a state by, with time left out:
    /// the phase, the committed tree (every node's path, data, kind and
    /// zxids; no times), the live sessions, and per client its history of
    /// inputs, what it sent, what waits at the server for it, its
    /// workload's timer left to run (a drawn hold or think time), and its
    /// connection's state. A client's code is a function of its inputs, so
    /// two runs that agree on all of it go on alike.
    pub fn state_key(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::hash::DefaultHasher::new();
        std::mem::discriminant(&self.phase).hash(&mut hasher);
        let server = self.ensemble.committed();
        server.last_zxid().hash(&mut hasher);
        for path in server.paths() {
            path.as_str().hash(&mut hasher);
            server.data(&path).hash(&mut hasher);
            if let Some(stat) = server.stat(&path) {
                let zxids = (stat.czxid, stat.mzxid, stat.pzxid);
                let versions = (stat.version, stat.cversion, stat.ephemeral_owner);
                (zxids, versions).hash(&mut hasher);
            }
        }
        for session in server.live_sessions() {
            session.0.hash(&mut hasher);
        }
        let now = self.now_ns();
        if self.ensemble.servers() > 1 {
            self.hash_ensemble(&mut hasher, now);
        }
        for slot in &self.clients {
            slot.inputs.hash(&mut hasher);
            // A workload's timer left to run (a drawn hold or think time).
            let timer_left = slot.workload_timer.map(|(_, due)| due.saturating_sub(now));
            timer_left.hash(&mut hasher);
            (slot.requests_received, slot.awaiting.len()).hash(&mut hasher);
            for (_, request) in &slot.held {
                format!("{request:?}").hash(&mut hasher);
            }
            let link = &slot.link;
            (link.server_up, link.session.map(|s| s.0), link.epoch).hash(&mut hasher);
            (
                slot.workload_done,
                slot.paused,
                slot.session.in_flight.len(),
            )
                .hash(&mut hasher);
        }
        hasher.finish()
    }

    /// The ensemble's part of the memo's key: where it stands, and per
    /// server the applies scheduled (how many, the last one's time left),
    /// its lag chosen for the run, a lag spike's time left, an outage.
    fn hash_ensemble(&self, hasher: &mut std::hash::DefaultHasher, now: u64) {
        use std::hash::Hash;
        self.ensemble.hash_progress(hasher);
        for server in 0..self.ensemble.servers() {
            let last_apply_left = self.last_apply_ns[server].saturating_sub(now);
            (self.applies_scheduled[server], last_apply_left).hash(hasher);
            self.explored_lags_ms[server].hash(hasher);
            let spike = self.servers.lag_spikes[server]
                .filter(|&(_, until)| until > now)
                .map(|(delay, until)| (delay, until - now));
            spike.hash(hasher);
            self.servers.down[server].is_some().hash(hasher);
        }
        self.servers.election.is_some().hash(hasher);
        self.host_lists.hash(hasher);
    }

    /// A seeded draw in a delay range, in ns.
    pub fn delay_ns(&mut self, range: crate::faults::MsRange) -> u64 {
        ms_to_ns(range.draw(&mut self.rng.delays))
    }
}

/// The sessions' closes before the watch notifications (a closing server
/// drops the connection, then the deletions' events go out).
pub(super) fn closes_first(events: Vec<EnsembleEvent>) -> Vec<EnsembleEvent> {
    let (mut closes, rest): (Vec<_>, Vec<_>) = events
        .into_iter()
        .partition(|event| matches!(event, EnsembleEvent::Closed { .. }));
    closes.extend(rest);
    closes
}
