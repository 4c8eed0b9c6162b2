//! Replays a model checker [`Schedule`] on the simulator's synchronous
//! driver ([`zk_sim::stepper::Stepper`]) and judges it with the simulator's
//! oracles ([`zk_sim::oracles`]), not with the model's properties: a
//! counterexample counts only if the simulator sees the same violation.
//!
//! The stepper starts from the model's setup server (its initial state
//! included: the one the schedule records in `[initial]` when it has that
//! table, in place of the model's own, checked first against the recipe's
//! setup nodes) with the model's clients and session ids, returns getChildren
//! results sorted (or in the permutation a step names), and applies each
//! step as the model did (a `reap` step runs the stepper's reaper). The
//! oracles see what the simulated world shows them: calls, outcomes, reads
//! sent, watches fired, sessions ended. After the last step the run is
//! healed (sessions their clients gave up on expired by the server,
//! reconnects, expiries learned, everything sent and delivered, timers
//! fired; no new calls): a call still unanswered then is a liveness
//! violation, and with every call answered the end-of-run checks (leaked
//! nodes, once the container reaper is done; items never delivered) run.
//!
//! One meaning differs on purpose: the model's `mutual_exclusion` counts
//! holders whose session is alive (a stale holder after an expiry is the
//! separate `stale_holder_overlap` example, harmless with fencing), while
//! the simulator's oracle counts every client that believes it holds. A
//! `stale_holder_overlap` example therefore replays as a simulator
//! mutual-exclusion violation.
//!
//! A schedule of a model with an ensemble (`servers = 2`) replays on the
//! stepper's ensemble mode: client `c` starts on server `c % servers` (every
//! follower caught up, as in the model's initial state), `apply` steps move
//! a follower, `reconnect` and `learn_expiry` go to the server they name
//! (a reconnect waits for the leader's revalidation, as in the model,
//! unless the schedule says `revalidate = false`);
//! healing first lets every follower catch up and reconnects to the leader.
//!
//! A lasso (a schedule with `cycle_start`, see [`crate::lasso`]) replays
//! its prefix, then its cycle [`LASSO_ROUNDS`] times, checking after each
//! round that the stepper is back where the cycle started and that no
//! call was answered ([`LassoReplay`]); healing then finds the waiting
//! calls still unanswered, which the liveness oracle reports.
//!
//! Every violation the replay reports carries a diagnosis, computed as the
//! simulated world computes it: from the stepper's history and the stepper
//! as it is at the moment of the violation (one millisecond of history
//! time per step), so [`Violation::signature`] names the mechanism, as it
//! does for a simulated run.

use crate::model::{self, ModelRecipe, RecipeModel};
use crate::schedule::client_of;
use crate::schedule::{clip, Schedule, ScheduleStep};
use crate::setup::InitialState;
use crate::workload::Gate;
use stateright::Model;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use zk_recipes::zk::SessionId;
use zk_recipes::{Observation, Observe};
use zk_sim::client::ConnectionState;
use zk_sim::diagnosis::diagnose_undiagnosed;
use zk_sim::oracles::{
    CallObservation, ObserveCall, OracleConfig, Oracles, Property, Seen, View, Violation,
};
use zk_sim::stepper::{Delivered, Stepper};

/// Simulated time per schedule step, so violations say at which step.
const STEP_NS: u64 = 1_000_000;

/// Heal rounds after the schedule; a healed run settles long before.
const HEAL_ROUNDS_MAX: usize = 10_000;

/// What the replay showed.
#[derive(Clone, Debug)]
pub struct ReplayReport {
    /// The model property the schedule was written for.
    pub property: String,
    /// The simulator oracle that judges it (None: no oracle checks it).
    pub oracle: Option<Property>,
    /// "violation" or "example", from the schedule.
    pub expect: String,
    pub steps: usize,
    /// What the simulator's oracles reported, first per property, each
    /// with its diagnosis.
    pub violations: Vec<Violation>,
    /// One line per stepper action.
    pub trace: String,
    /// For a lasso (`cycle_start` set): what running its cycle showed.
    pub lasso: Option<LassoReplay>,
    /// A `reach` schedule's `state`: the shared abstract state its steps
    /// lead to in the model ([`zk_sim::abstraction`]).
    pub expected_state: Option<u64>,
    /// The stepper's shared abstract state after the schedule's steps
    /// (before the heal; for a lasso, after its prefix).
    pub reached: u64,
}

/// What replaying a lasso's cycle showed (see [`replay`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LassoReplay {
    /// Steps before the cycle, and in it.
    pub prefix: usize,
    pub cycle: usize,
    /// Times the cycle ran.
    pub rounds: usize,
    /// After every round the stepper was back in the state the cycle
    /// started in: the server's tree (times aside), every client's session
    /// and recipe (timers relative to its clock) and application view.
    /// The stepper's inboxes are not visible and not compared.
    pub returned: bool,
    /// The clients with a pending call when the cycle started.
    pub waiting: Vec<usize>,
    /// Their calls stayed pending, and no other call was answered, through
    /// every round.
    pub pending_stayed: bool,
}

/// How many times a lasso's cycle is replayed.
pub const LASSO_ROUNDS: usize = 2;

impl ReplayReport {
    /// The oracle of the schedule's property reported a violation.
    pub fn shows_expected_violation(&self) -> bool {
        self.oracle
            .is_some_and(|oracle| self.violations.iter().any(|v| v.property == oracle))
    }

    /// The signatures (`property/mechanism`) of the violations, in order.
    pub fn signatures(&self) -> Vec<String> {
        self.violations.iter().map(Violation::signature).collect()
    }

    /// The replay agrees with the schedule: the expected violation shows,
    /// or (for an example) nothing is violated.
    pub fn agrees(&self) -> bool {
        if let Some(state) = self.expected_state {
            return self.reached == state;
        }
        match self.expect.as_str() {
            "violation" => self.shows_expected_violation(),
            _ => self.violations.is_empty(),
        }
    }
}

/// A schedule that does not fit the model or cannot be applied.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    #[error("the schedule has {found} client(s); the model was built with {expected}")]
    Clients { expected: usize, found: usize },
    /// The schedule's `[initial]` table cannot be made on the model's
    /// setup server; `key` is the dotted key it is about.
    #[error("initial state: {message}")]
    Initial { key: String, message: String },
    #[error("step {step} ({}op {op:?}): {message}", client_of(.client))]
    Step {
        step: usize,
        /// None for a step of the server (`reap`).
        client: Option<usize>,
        op: String,
        message: String,
    },
}

/// The simulator oracle that checks a model property of the same meaning.
pub fn oracle_for(property: &str) -> Option<Property> {
    Some(match property {
        "mutual_exclusion" => Property::MutualExclusion,
        "one_leader" => Property::OneLeader,
        "fenced_mutual_exclusion" => Property::FencedMutualExclusion,
        "fifo" => Property::Fifo,
        "herd" => Property::Herd,
        "no_leaks" => Property::NoLeaks,
        "no_stuck_waiter" | "liveness" | crate::lasso::PROGRESS => Property::Liveness,
        "exactly_once" => Property::ExactlyOnce,
        "barrier" => Property::Barrier,
        _ => return None,
    })
}

/// What the application of one client believes (the model's `app` view,
/// reduced to what replay needs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct AppView {
    /// Next workload step that may be called.
    cursor: usize,
    /// A call waits for its outcome; `true` if made while holding.
    pending: Option<bool>,
    holding: bool,
    last_call_failed: bool,
    generation: u8,
}

struct Replay<'m, R: ModelRecipe> {
    model: &'m RecipeModel<R>,
    stepper: Stepper<R>,
    oracles: Oracles,
    apps: Vec<AppView>,
    initial_paths: BTreeSet<zk_recipes::zk::Path>,
    now_ns: u64,
    /// Schedule steps applied (a lasso's cycle counts once per round).
    steps_run: usize,
}

/// Replays `schedule` on the stepper built from `model`.
pub fn replay<R: ModelRecipe>(
    model: &RecipeModel<R>,
    schedule: &Schedule,
) -> Result<ReplayReport, ReplayError> {
    if schedule.clients != model.clients.len() {
        return Err(ReplayError::Clients {
            expected: model.clients.len(),
            found: schedule.clients,
        });
    }
    let started;
    let model = match schedule.initial {
        None => model,
        Some(_) => {
            started = started_from_schedule(model, schedule)?;
            &started
        }
    };
    let mut replay = Replay::new(model);
    let prefix = schedule.cycle_start.unwrap_or(schedule.steps.len());
    replay.run_steps(schedule, 0..prefix)?;
    let reached = replay.stepper.shared_state();
    let lasso = match schedule.cycle_start {
        Some(start) => Some(replay.run_cycle(schedule, start)?),
        None => None,
    };
    replay.set_time_ns(replay.now_ns + STEP_NS);
    replay.heal();
    replay.finish();
    Ok(ReplayReport {
        property: schedule.property.clone(),
        oracle: oracle_for(&schedule.property),
        expect: schedule.expect.clone(),
        steps: replay.steps_run,
        violations: replay.oracles.violations().to_vec(),
        trace: replay.stepper.trace().to_string(),
        lasso,
        expected_state: schedule.expected_state(),
        reached,
    })
}

/// `model` started from the initial state `schedule` records instead of
/// its own, once that state is checked against the recipe's setup nodes
/// (so that a bad `[initial]` table is an error, never a panic).
fn started_from_schedule<R: ModelRecipe>(
    model: &RecipeModel<R>,
    schedule: &Schedule,
) -> Result<RecipeModel<R>, ReplayError> {
    let initial = |(key, message)| ReplayError::Initial { key, message };
    let state = schedule.initial_state().map_err(initial)?;
    let bare = model.clone().with_initial_state(InitialState::default());
    state
        .check_against(bare.setup_paths())
        .map_err(|error| initial((crate::schedule::initial_key(&error), error.to_string())))?;
    Ok(bare.with_initial_state(state))
}

/// What must come back after a lasso's cycle: the server's tree and
/// counters without times, each client's session with its timers relative
/// to its clock, each application's view.
#[derive(Clone, Debug, PartialEq, Eq)]
struct CycleView<R: ModelRecipe> {
    last_zxid: zk_recipes::zk::Zxid,
    nodes: Vec<NodeView>,
    sessions: Vec<zk_sim::client::ClientSession<R>>,
    apps: Vec<AppView>,
}

type NodeView = (
    zk_recipes::zk::Path,
    Option<Vec<u8>>,
    Option<zk_recipes::zk::Stat>,
    Option<i32>,
);

/// The simulator oracles matching the model's properties and oracle settings.
fn oracle_config<R: ModelRecipe>(model: &RecipeModel<R>) -> OracleConfig {
    let properties = model
        .properties()
        .iter()
        .filter_map(|p| oracle_for(p.name))
        .collect();
    OracleConfig {
        properties,
        max_leases: model.oracles.max_leases.unwrap_or(1),
        herd_bound: model
            .oracles
            .herd_bound
            .map_or(u32::MAX, |bound| bound as u32),
        fifo_dir: model.oracles.fifo_parent.clone(),
        barrier_size: model.clients.len(),
    }
}

impl<'m, R: ModelRecipe> Replay<'m, R> {
    fn new(model: &'m RecipeModel<R>) -> Self {
        let mut stepper = Stepper::with_sorted_children();
        *stepper.server_mut() = model.setup_server();
        let initial_paths = stepper.server().paths().into_iter().collect();
        if model.servers > 1 {
            stepper.use_ensemble(model.servers);
            stepper.revalidate_reconnects(model.revalidate);
        }
        for (client, spec) in model.clients.iter().enumerate() {
            stepper.add_client_on(
                spec.recipe.clone(),
                model.session_id(client, 0).0,
                client % model.servers,
            );
        }
        for follower in 1..model.servers {
            while stepper.apply(follower) {}
        }
        let mut replay = Replay {
            model,
            oracles: Oracles::new(oracle_config(model), model.clients.len()),
            stepper,
            apps: vec![AppView::default(); model.clients.len()],
            initial_paths,
            now_ns: 0,
            steps_run: 0,
        };
        replay.observe_outcomes();
        replay
    }

    /// Applies the schedule's steps `range`, one ms of history time each.
    fn run_steps(
        &mut self,
        schedule: &Schedule,
        range: std::ops::Range<usize>,
    ) -> Result<(), ReplayError> {
        for index in range {
            let step = &schedule.steps[index];
            self.steps_run += 1;
            self.set_time_ns(self.steps_run as u64 * STEP_NS);
            self.apply(step).map_err(|message| ReplayError::Step {
                step: index + 1,
                client: step.client,
                op: step.op.clone(),
                message,
            })?;
            self.observe_outcomes();
        }
        Ok(())
    }

    /// Runs a lasso's cycle (steps `start..`) [`LASSO_ROUNDS`] times,
    /// comparing the state after each round with the one before the first.
    fn run_cycle(&mut self, schedule: &Schedule, start: usize) -> Result<LassoReplay, ReplayError> {
        let before = self.cycle_view();
        let waiting: Vec<usize> = (0..self.apps.len())
            .filter(|&c| self.apps[c].pending.is_some())
            .collect();
        let (mut returned, mut pending_stayed) = (true, true);
        for _ in 0..LASSO_ROUNDS {
            for index in start..schedule.steps.len() {
                self.run_steps(schedule, index..index + 1)?;
                // No call answered: every application view keeps its call
                // and its place in the workload.
                pending_stayed &= (0..self.apps.len()).all(|c| {
                    (self.apps[c].pending, self.apps[c].cursor)
                        == (before.apps[c].pending, before.apps[c].cursor)
                });
            }
            returned &= self.cycle_view() == before;
        }
        Ok(LassoReplay {
            prefix: start,
            cycle: schedule.steps.len() - start,
            rounds: LASSO_ROUNDS,
            returned,
            waiting,
            pending_stayed,
        })
    }

    /// The stepper as a lasso's cycle must find it again (see [`CycleView`]).
    fn cycle_view(&self) -> CycleView<R> {
        let server = self.stepper.server();
        let nodes = server
            .paths()
            .into_iter()
            .map(|path| {
                let stat = server.stat(&path).map(|stat| zk_recipes::zk::Stat {
                    ctime_ms: 0,
                    mtime_ms: 0,
                    ..stat
                });
                let data = server.data(&path).map(<[u8]>::to_vec);
                let counter = server.sequence_counter(&path);
                (path, data, stat, counter)
            })
            .collect();
        let sessions = (0..self.apps.len())
            .map(|c| {
                let mut session = self.stepper.client(c).clone();
                let now = session.now_ms;
                session.now_ms = 0;
                for due in session.timers.values_mut() {
                    *due = due.saturating_sub(now);
                }
                session
            })
            .collect();
        CycleView {
            last_zxid: server.last_zxid(),
            nodes,
            sessions,
            apps: self.apps.clone(),
        }
    }

    /// The time of the oracles and of the stepper's history.
    fn set_time_ns(&mut self, now_ns: u64) {
        self.now_ns = now_ns;
        self.stepper.set_time_ns(now_ns);
    }

    fn apply(&mut self, step: &ScheduleStep) -> Result<(), String> {
        let server = usize::from(step.server.unwrap_or(0));
        if server >= self.model.servers {
            return Err(format!(
                "no server {server}: the model has {} server(s)",
                self.model.servers
            ));
        }
        let Some(c) = step.client else {
            return match step.op.as_str() {
                "reap" => self.reap(),
                "apply" => self.apply_log(server),
                "leader_loss" => self.leader_loss(),
                other => Err(format!("op {:?} needs a client", clip(other))),
            };
        };
        if c >= self.apps.len() {
            return Err(format!("no client {c}"));
        }
        match step.op.as_str() {
            "call" => self.call(c, step.call.as_deref().ok_or("a call step names its call")?),
            "send" => self.send(c, step.order.unwrap_or(0)),
            "deliver" => self.deliver(c, 0),
            "deliver_event_early" => self.deliver(c, usize::from(step.index.unwrap_or(0))),
            "fire_timer" => self
                .stepper
                .fire_next_timer(c)
                .then_some(())
                .ok_or_else(|| "no timer pending".to_string()),
            "reconnect" => self.reconnect(c, step.session, server),
            "reconnect_fails" => self
                .stepper
                .fail_reconnect_attempt(c)
                .then_some(())
                .ok_or_else(|| "no request queued on a disconnected client".to_string()),
            "learn_expiry" => self.learn_expiry(c, step.session, server),
            "disconnect" => {
                self.stepper.disconnect(c);
                Ok(())
            }
            "lose_reply" => {
                self.observe_read(c);
                self.stepper
                    .apply_then_disconnect(c)
                    .then_some(())
                    .ok_or_else(|| "nothing to send".to_string())
            }
            "lose_request" => self
                .stepper
                .lose_request(c)
                .then_some(())
                .ok_or_else(|| "nothing to send".to_string()),
            "expire" => self.expire(c, step.order.unwrap_or(0)),
            "client_expiry" => self.client_expiry(c, step.session, server),
            "expire_abandoned" => self.expire_abandoned(
                c,
                step.session
                    .ok_or("an expire_abandoned step names its session")?,
                step.order.unwrap_or(0),
            ),
            "leader_loss" => {
                Err("the leader is lost for every client: a leader_loss step names none".into())
            }
            "spurious_watch" => self.spurious(c, usize::from(step.watch.unwrap_or(0))),
            "reap" => Err("the server reaps, no client: a reap step names none".to_string()),
            "apply" => Err("a follower applies, no client: an apply step names none".to_string()),
            other => Err(format!("unknown op {other:?}")),
        }
    }

    /// The application makes its next call, as the model lets it: not while
    /// a call waits for its outcome, and skipping only steps with a gate
    /// (never an unconditional one).
    fn call(&mut self, c: usize, call_text: &str) -> Result<(), String> {
        if self.apps[c].pending.is_some() {
            return Err(format!(
                "client {c} still waits for the outcome of its previous call"
            ));
        }
        let workload = self.model.workload(c);
        let from = self.apps[c].cursor;
        let index = (from..workload.len())
            .find(|&i| format!("{:?}", workload[i].call) == call_text)
            .ok_or_else(|| {
                format!(
                    "client {c} has no call {} left in its workload",
                    clip(call_text)
                )
            })?;
        if let Some(skipped) = workload[from..index]
            .iter()
            .find(|step| step.gate == Gate::Always)
        {
            return Err(format!(
                "client {c} must call {:?} before {}",
                skipped.call,
                clip(call_text)
            ));
        }
        let call = workload[index].call.clone();
        let observed = call.observe_call();
        self.seen(c, Seen::Call(observed.clone()));
        let app = &mut self.apps[c];
        app.cursor = index + 1;
        app.pending = Some(app.holding);
        if observed == CallObservation::Release {
            app.holding = false;
        }
        self.stepper.call(c, call);
        Ok(())
    }

    fn send(&mut self, c: usize, order: u16) -> Result<(), String> {
        self.observe_read(c);
        self.stepper
            .send_in_order(c, order)
            .then_some(())
            .ok_or_else(|| "nothing to send".to_string())
    }

    fn observe_read(&mut self, c: usize) {
        let reads = self
            .stepper
            .client(c)
            .outgoing
            .front()
            .is_some_and(|(_, request, _)| request.is_read());
        if reads && self.stepper.state(c) == ConnectionState::Connected {
            self.seen(c, Seen::Read);
        }
    }

    fn deliver(&mut self, c: usize, index: usize) -> Result<(), String> {
        match self.stepper.deliver_at(c, index) {
            None => Err(format!("nothing at inbox index {index}")),
            Some(Delivered::Event { fired: true }) => {
                self.seen(c, Seen::WatchFired);
                Ok(())
            }
            Some(_) => Ok(()),
        }
    }

    /// A disconnected client reconnects into its session, or learns that
    /// it expired (then `session` is the new one's id).
    fn reconnect(&mut self, c: usize, session: Option<i64>, server: usize) -> Result<(), String> {
        let state = self.stepper.state(c);
        if state != ConnectionState::Disconnected {
            return Err(format!("the client is {state:?}, not disconnected"));
        }
        let alive = self
            .stepper
            .server()
            .is_session_alive(self.stepper.session_id(c));
        if session.is_some() || !alive {
            return self.learn_expiry(c, session, server);
        }
        self.stepper
            .reconnect_to(c, server)
            .map_err(|refused| format!("refused: {refused}"))
    }

    fn learn_expiry(
        &mut self,
        c: usize,
        session: Option<i64>,
        server: usize,
    ) -> Result<(), String> {
        let sid = self.stepper.session_id(c);
        if self.stepper.server().is_session_alive(sid) {
            return Err("the session is still alive on the server".to_string());
        }
        if let Some(at) = self.stepper.ensemble().and_then(|e| e.server_of(sid)) {
            return Err(format!(
                "server {at}, the client's, has not applied the session's expiry yet"
            ));
        }
        if self.apps[c].generation == u8::MAX {
            return Err(format!(
                "client {c} already had {} sessions, the model's limit",
                u16::from(u8::MAX) + 1
            ));
        }
        if self.stepper.state(c) == ConnectionState::Expired {
            return Err("the client already learned its session expired".to_string());
        }
        self.stepper.notice_expiry(c);
        self.open_next_session(c, session, server)
    }

    /// The client's current session has ended for it (it learned the
    /// server's expiry or gave up): it opens its next one at `server`.
    fn open_next_session(
        &mut self,
        c: usize,
        session: Option<i64>,
        server: usize,
    ) -> Result<(), String> {
        self.observe_outcomes();
        self.apps[c].generation += 1;
        let next = self.model.session_id(c, self.apps[c].generation).0;
        if session.is_some_and(|id| id != next) {
            return Err(format!(
                "expected new session {next}, the schedule says {session:?}"
            ));
        }
        self.stepper.new_session_on(c, next, server);
        Ok(())
    }

    /// A disconnected client gives up on a session the server still has
    /// (client-side expiry) and opens `session` at `server`.
    fn client_expiry(
        &mut self,
        c: usize,
        session: Option<i64>,
        server: usize,
    ) -> Result<(), String> {
        let state = self.stepper.state(c);
        if state != ConnectionState::Disconnected {
            return Err(format!("the client is {state:?}, not disconnected"));
        }
        let sid = self.stepper.session_id(c);
        if !self.stepper.server().is_session_alive(sid) {
            return Err("the server already ended the session: the client learns it".into());
        }
        if self.apps[c].generation == u8::MAX {
            return Err(format!(
                "client {c} already had {} sessions, the model's limit",
                u16::from(u8::MAX) + 1
            ));
        }
        let next = self.model.session_id(c, self.apps[c].generation + 1).0;
        if session.is_some_and(|id| id != next) {
            return Err(format!(
                "expected new session {next}, the schedule says {session:?}"
            ));
        }
        self.stepper.give_up_session(c);
        self.open_next_session(c, session, server)
    }

    /// The server expires `session`, one client `c` gave up on earlier.
    fn expire_abandoned(&mut self, c: usize, session: i64, order: u16) -> Result<(), String> {
        let abandoned = (0..self.apps[c].generation)
            .any(|generation| self.model.session_id(c, generation).0 == session);
        if !abandoned {
            return Err(format!(
                "session {session} is not one client {c} had before its current one"
            ));
        }
        if !self
            .stepper
            .expire_session_on_server(SessionId(session), order)
        {
            return Err(format!("the server no longer has session {session}"));
        }
        self.seen(c, Seen::SessionEnded);
        Ok(())
    }

    /// The leader is lost: every connected client is disconnected.
    fn leader_loss(&mut self) -> Result<(), String> {
        let connected =
            (0..self.apps.len()).any(|c| self.stepper.state(c) == ConnectionState::Connected);
        if !connected {
            return Err("no client is connected".to_string());
        }
        self.stepper.leader_loss();
        self.observe_outcomes();
        Ok(())
    }

    /// The server expires every session a client gave up on (their
    /// timers run out while the run heals). True if one was still there.
    fn expire_abandoned_sessions(&mut self) -> bool {
        let mut moved = false;
        for c in 0..self.apps.len() {
            for generation in 0..self.apps[c].generation {
                let session = self.model.session_id(c, generation).0;
                moved |= self.expire_abandoned(c, session, 0).is_ok();
            }
        }
        moved
    }

    /// Follower `server` applies its next committed transaction.
    fn apply_log(&mut self, server: usize) -> Result<(), String> {
        if server == 0 {
            return Err("server 0 leads: it applies each transaction as it commits".to_string());
        }
        self.stepper
            .apply(server)
            .then_some(())
            .ok_or_else(|| format!("server {server} has applied every committed transaction"))
    }

    fn expire(&mut self, c: usize, order: u16) -> Result<(), String> {
        if !self
            .stepper
            .server()
            .is_session_alive(self.stepper.session_id(c))
        {
            return Err("the session already expired".to_string());
        }
        self.stepper.expire_on_server_in_order(c, order);
        self.seen(c, Seen::SessionEnded);
        Ok(())
    }

    /// The server reaps its empty containers, as the model lets it: only
    /// when there is one.
    fn reap(&mut self) -> Result<(), String> {
        if !model::can_reap(self.stepper.server()) {
            return Err("no empty container that had a child to reap".to_string());
        }
        self.stepper.reap();
        Ok(())
    }

    /// The `watch`-th armed watch (data, exist, then child) fires for nothing.
    fn spurious(&mut self, c: usize, watch: usize) -> Result<(), String> {
        let event = self
            .stepper
            .client(c)
            .watches
            .nth_armed_event(watch)
            .ok_or_else(|| format!("no armed watch number {watch}"))?;
        // An injected fault: not a wakeup the herd oracle counts.
        self.stepper.fire_armed_watch(c, event);
        Ok(())
    }

    /// Hands every client's new outcomes to the oracles and its application.
    fn observe_outcomes(&mut self) {
        for c in 0..self.apps.len() {
            for outcome in self.stepper.take_outcomes(c) {
                let observation = outcome.observe();
                self.seen(c, Seen::Outcome(observation.clone()));
                self.answer(c, &observation);
            }
        }
    }

    /// The application side of an outcome (as `crate::app` does it).
    fn answer(&mut self, c: usize, observation: &Observation) {
        let app = &mut self.apps[c];
        let completes_call = match observation {
            Observation::Acquired { .. } => {
                app.holding = true;
                true
            }
            Observation::Released => {
                app.holding = false;
                true
            }
            Observation::Lost => {
                app.holding = false;
                app.pending == Some(true)
            }
            _ => true,
        };
        if completes_call && app.pending.is_some() {
            app.pending = None;
            app.last_call_failed = matches!(
                observation,
                Observation::Failed { .. } | Observation::TimedOut
            );
        }
    }

    fn seen(&mut self, c: usize, seen: Seen) {
        let sessions: Vec<Option<SessionId>> = (0..self.apps.len())
            .map(|k| self.stepper.client(k).session_id)
            .collect();
        let view = View {
            server: self.stepper.server(),
            sessions: &sessions,
        };
        self.oracles.seen(self.now_ns, c, &seen, &view);
        self.diagnose_new();
    }

    /// Attaches a diagnosis to every violation that has none yet, from the
    /// stepper as it is now (the moment of the violation). A client with
    /// no call waiting for its outcome is done: the replay makes no new
    /// calls once the schedule is over.
    fn diagnose_new(&mut self) {
        if !self.oracles.has_undiagnosed() {
            return;
        }
        let done: Vec<bool> = self.apps.iter().map(|app| app.pending.is_none()).collect();
        let model = self.model;
        let scene = self
            .stepper
            .scene(&done, model.oracles.fifo_parent.as_ref());
        diagnose_undiagnosed(self.oracles.violations_mut(), &scene);
    }

    /// Runs without faults and without new calls until nothing moves.
    fn heal(&mut self) {
        for _ in 0..HEAL_ROUNDS_MAX {
            let mut moved = false;
            for follower in 1..self.model.servers {
                while self.stepper.apply(follower) {
                    moved = true;
                }
            }
            moved |= self.expire_abandoned_sessions();
            for c in 0..self.apps.len() {
                moved |= self.heal_client(c);
                self.observe_outcomes();
            }
            if !moved {
                return;
            }
        }
    }

    fn heal_client(&mut self, c: usize) -> bool {
        let alive = self
            .stepper
            .server()
            .is_session_alive(self.stepper.session_id(c));
        match self.stepper.state(c) {
            ConnectionState::Disconnected if alive => {
                self.stepper.reconnect(c);
                true
            }
            ConnectionState::Expired => false,
            _ if !alive => self.learn_expiry(c, None, 0).is_ok(),
            _ => {
                self.send(c, 0).is_ok()
                    || self.deliver(c, 0).is_ok()
                    || self.stepper.fire_next_timer(c)
            }
        }
    }

    /// Liveness and the end-of-run checks.
    fn finish(&mut self) {
        let waiting: Vec<usize> = (0..self.apps.len())
            .filter(|&c| self.apps[c].pending.is_some())
            .collect();
        if !waiting.is_empty() {
            let mut message = String::from("after healing, calls still wait:");
            for &c in &waiting {
                let _ = write!(message, " c{c}");
            }
            self.oracles.report(Violation {
                property: Property::Liveness,
                at_ns: self.now_ns,
                message,
                events: Vec::new(),
                diagnosis: None,
                invariant: None,
            });
            self.diagnose_new();
            return;
        }
        if (0..self.apps.len()).all(|c| self.workload_done(c)) {
            self.reap_containers();
            let server = self.stepper.server().clone();
            self.oracles
                .finish(self.now_ns, &server, &self.initial_paths);
            self.diagnose_new();
        }
    }

    /// Runs the container reaper until it takes nothing more (a parent
    /// container empties once its child containers go), as the simulated
    /// world's periodic reaper would have by the end of a run.
    fn reap_containers(&mut self) {
        loop {
            let before = self.stepper.server().paths().len();
            self.stepper.reap();
            if self.stepper.server().paths().len() == before {
                return;
            }
        }
    }

    /// Every call of the client's workload was made or skipped by its gate.
    fn workload_done(&self, c: usize) -> bool {
        let app = self.apps[c];
        self.model.workload(c)[app.cursor..]
            .iter()
            .all(|step| match step.gate {
                Gate::Always => false,
                Gate::Release => !app.holding,
                Gate::AfterSuccess => app.last_call_failed,
            })
    }
}
