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

mod cycle;
mod heal;
mod observe;
mod steps;

pub use cycle::{LassoReplay, LASSO_ROUNDS};

use crate::model::{ModelRecipe, RecipeModel};
use crate::schedule::client_of;
use crate::schedule::Schedule;
use crate::setup::InitialState;
use stateright::Model;
use std::collections::BTreeSet;
use zk_sim::oracles::{OracleConfig, Oracles, Property, Violation};
use zk_sim::stepper::Stepper;

/// Simulated time per schedule step, so violations say at which step.
const STEP_NS: u64 = 1_000_000;

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

    /// The time of the oracles and of the stepper's history.
    fn set_time_ns(&mut self, now_ns: u64) {
        self.now_ns = now_ns;
        self.stepper.set_time_ns(now_ns);
    }
}
