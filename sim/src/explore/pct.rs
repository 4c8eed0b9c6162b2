//! Sampling an explored world's choices at random, for cases too large to
//! search exhaustively: PCT (Burckhardt, Kothari, Musuvathi, Nagarakatte,
//! "A randomized scheduler with probabilistic guarantees of finding bugs",
//! ASPLOS 2010) and, as its baseline, uniform random choices.
//!
//! PCT over the server's picks: every client gets a distinct random
//! initial priority in `depth..depth + clients`; `depth - 1` change points
//! are drawn uniformly over the steps a run is expected to have (the order
//! choice points of the run that takes every default, PCT's `k`); at each
//! pick the waiting client with the highest priority goes, and at the
//! `i`-th change point that client's priority drops to `i`, below every
//! initial one. Each fault of the budget strikes one of the default run's
//! fault opportunities, drawn uniformly: a request (lost before or after
//! it applies, or the session expiring instead) or the start of a drawn
//! duration, between requests (a blip, a partition or a silence for a
//! connection loss, an expiry; a pause strikes only there). A workload's
//! durations and picks take a uniformly drawn alternative (from the run's
//! plan, so every re-execution of a run draws the same). A PCT run needs
//! the waiting clients' names at each pick, which the tape does not get:
//! it is built by re-execution, each run of a traced world fixing the
//! first pick that differs from PCT's (the prefix replays identically).
//!
//! Each run is one choice string: a failing run replays with
//! `zkcheck replay` like a depth-first search's counterexample. The same
//! seed gives the same runs.

use super::run::{execute, vacuity, violated};
use super::search::{Found, SearchError, Stop, Vacuity};
use super::split_mix::SplitMix;
use super::tape::{
    ChoiceKind, ChoicePoint, DurationPoints, FaultAllowance, FaultChoice, StrikeChoice, Tape,
};
use crate::scenario::Runner;
use crate::world::{RunReport, TraceKind};
use std::time::{Duration, Instant};

/// How runs are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// PCT with `depth` (d ≥ 1): d − 1 priority change points.
    Pct { depth: u32 },
    /// A uniformly drawn alternative at every choice point.
    Uniform,
}

/// What a sampling runs.
#[derive(Clone, Debug)]
pub struct Sampling {
    pub strategy: Strategy,
    pub runs: u64,
    pub seed: u64,
    pub faults: FaultAllowance,
    /// The points of a duration's range the runs choose among.
    pub durations: DurationPoints,
    /// Stop at the first failing run (measuring runs to first failure).
    pub stop_at_first: bool,
    pub timeout: Option<Duration>,
    /// The runtime seeds the runs go round (run r under the r-th, modulo
    /// their count; the default run that counts the points under the
    /// first).
    pub runtime_seeds: super::RuntimeSeeds,
}

/// A property's first violation in a sampling: its run (1-based) and the
/// run's choices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sampled {
    pub run: u64,
    pub found: Found,
}

/// What a sampling did.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    /// Runs drawn (each one choice string).
    pub runs: u64,
    /// Executions of the world, with the default run that estimates the
    /// steps and PCT's re-executions.
    pub executions: u64,
    /// Order choice points (PCT's k) and fault choice points of the run
    /// that takes every default.
    pub steps: usize,
    pub fault_points: usize,
    /// Points between requests where a fault may strike, in that run.
    pub strike_points: usize,
    /// Points where an ensemble fault may strike, in that run.
    pub server_fault_points: usize,
    /// The first failing run (1-based).
    pub first_failure: Option<u64>,
    /// Each violated property's first violation, in order of discovery.
    pub found: Vec<Sampled>,
    /// Runs without a violation in which the workload achieved nothing.
    pub vacuity: Vacuity,
    pub stop: Option<Stop>,
    /// A hash of every run's choices, in order (FNV-1a): equal for the
    /// same seed.
    pub digest: u64,
}

impl Samples {
    /// True when no run failed and every run was vacuous: no verdict.
    pub fn all_vacuous(&self) -> bool {
        self.found.is_empty() && self.runs > 0 && self.vacuity.executions == self.runs
    }
}

/// Draws `sampling.runs` runs of `runner`'s world (`clients` clients).
pub fn sample(
    runner: &dyn Runner,
    clients: usize,
    sampling: &Sampling,
) -> Result<Samples, SearchError> {
    let started = Instant::now();
    let tape = |script| Tape::new(script, sampling.faults).with_durations(sampling.durations);
    let first_seed = sampling.runtime_seeds.first;
    let (default, _) =
        execute(runner, first_seed, tape(Vec::new()), false).map_err(SearchError::Run)?;
    let count = |kind| default.log.iter().filter(|p| p.kind == kind).count();
    let mut samples = Samples {
        executions: 1,
        digest: FNV_OFFSET,
        steps: count(ChoiceKind::Order),
        fault_points: count(ChoiceKind::Fault),
        strike_points: count(ChoiceKind::Strike),
        server_fault_points: count(ChoiceKind::ServerFault),
        ..Samples::default()
    };
    for run in 0..sampling.runs {
        if sampling.timeout.is_some_and(|t| started.elapsed() >= t) {
            samples.stop = Some(Stop::Timeout);
            break;
        }
        let mut rng = run_rng(sampling.seed, run);
        let seed = sampling.runtime_seeds.of_run(run);
        let (tape, report, executions) = match sampling.strategy {
            Strategy::Pct { depth } => {
                let plan = Plan::draw(&mut rng, clients, depth, &samples, sampling.faults);
                pct_run(runner, seed, &plan, &tape)?
            }
            Strategy::Uniform => {
                uniform_run(runner, seed, tape(Vec::new()).drawing(rng.next_u64()))?
            }
        };
        samples.runs += 1;
        samples.executions += executions;
        if record(&mut samples, (run + 1, seed), &tape, &report) && sampling.stop_at_first {
            break;
        }
    }
    Ok(samples)
}

/// The generator of run `run` (0-based) of a sampling seeded `seed`.
fn run_rng(seed: u64, run: u64) -> SplitMix {
    let mut mixer = SplitMix::new(seed ^ run.wrapping_mul(0xD1B5_4A32_D192_ED03));
    SplitMix::new(mixer.next_u64())
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// Adds a run's choices to a digest (FNV-1a over the choice string).
fn digest(hash: u64, choices: &[u32]) -> u64 {
    let text = super::file::choice_string(choices) + "\n";
    text.bytes().fold(hash, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Adds a run's verdict (`run`: its number, 1-based, and its runtime
/// seed); true if it failed.
fn record(samples: &mut Samples, run: (u64, u64), tape: &Tape, report: &RunReport) -> bool {
    let (run, runtime_seed) = run;
    samples.digest = digest(samples.digest, &tape.taken());
    let properties = violated(report);
    for property in &properties {
        if samples.found.iter().any(|s| &s.found.property == property) {
            continue;
        }
        let found = Found {
            property: property.clone(),
            choices: tape.taken(),
            points: tape.log.len(),
            delays: tape.log.iter().filter(|p| p.is_delay()).count() as u32,
            runtime_seed,
        };
        samples.found.push(Sampled { run, found });
    }
    samples.vacuity.add(vacuity(report));
    let failed = !properties.is_empty();
    if failed {
        samples.first_failure.get_or_insert(run);
    }
    failed
}

/// One uniformly drawn run (`tape`: a drawing one) under runtime seed
/// `seed`.
fn uniform_run(
    runner: &dyn Runner,
    seed: u64,
    tape: Tape,
) -> Result<(Tape, RunReport, u64), SearchError> {
    let (tape, report) = execute(runner, seed, tape, false).map_err(SearchError::Run)?;
    Ok((tape, report, 1))
}

/// One PCT run's random draws.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Each client's initial priority (higher goes first).
    pub priorities: Vec<u32>,
    /// The order steps (0-based) at which priorities change, the i-th
    /// change (0-based) lowering to i + 1.
    pub changes: Vec<usize>,
    /// The fault choice points (0-based) a fault strikes, and which.
    pub faults: Vec<(usize, FaultChoice)>,
    /// The strike points (0-based) a fault strikes between requests, and
    /// which.
    pub strikes: Vec<(usize, StrikeChoice)>,
    /// The ensemble-fault points (0-based) an ensemble fault strikes at,
    /// and a word that picks which of those offered there.
    pub server_faults: Vec<(usize, u64)>,
    /// The fault budget the run's tape offers.
    pub budget: FaultAllowance,
    /// Seeds the alternatives of the run's durations and picks.
    pub draws: u64,
}

impl Plan {
    /// Draws a plan for `clients` at `depth`, over the steps and fault
    /// points of the default run in `samples`, with the fault budget.
    fn draw(
        rng: &mut SplitMix,
        clients: usize,
        depth: u32,
        samples: &Samples,
        budget: FaultAllowance,
    ) -> Plan {
        let mut priorities: Vec<u32> = (0..clients as u32).map(|i| depth + i).collect();
        for i in (1..priorities.len()).rev() {
            priorities.swap(i, rng.below_usize(i + 1));
        }
        let wanted = (depth.saturating_sub(1) as usize).min(samples.steps);
        let mut changes = Vec::with_capacity(wanted);
        while changes.len() < wanted {
            let step = rng.below_usize(samples.steps);
            if !changes.contains(&step) {
                changes.push(step);
            }
        }
        let (mut faults, mut strikes) = (Vec::new(), Vec::new());
        // Opportunities are numbered requests first, then strike points
        // (a world without strike points draws as it did before them).
        let points = samples.fault_points;
        let opportunities = points + samples.strike_points;
        if opportunities > 0 {
            for _ in 0..budget.connection_loss {
                let kind = match rng.below(2) {
                    0 => FaultChoice::LoseBeforeApply,
                    _ => FaultChoice::LoseAfterApply,
                };
                match rng.below_usize(opportunities) {
                    at if at < points => faults.push((at, kind)),
                    at => {
                        let cut = StrikeChoice::CONNECTION_LOSSES;
                        strikes.push((at - points, cut[rng.below_usize(cut.len())]));
                    }
                }
            }
            for _ in 0..budget.expiry {
                match rng.below_usize(opportunities) {
                    at if at < points => faults.push((at, FaultChoice::Expire)),
                    at => strikes.push((at - points, StrikeChoice::Expire)),
                }
            }
            if samples.strike_points > 0 {
                for _ in 0..budget.pause {
                    let at = rng.below_usize(samples.strike_points);
                    strikes.push((at, StrikeChoice::Pause));
                }
            }
        }
        let mut server_faults = Vec::new();
        if samples.server_fault_points > 0 {
            let ensemble = budget.lag_spike
                + budget.server_crash
                + budget.server_partition
                + budget.leader_change
                + budget.server_freeze;
            for _ in 0..ensemble {
                let at = rng.below_usize(samples.server_fault_points);
                server_faults.push((at, rng.next_u64()));
            }
        }
        Plan {
            priorities,
            changes,
            faults,
            strikes,
            server_faults,
            budget,
            draws: rng.next_u64(),
        }
    }
}

/// PCT's decisions along a run's choice points.
struct Decider<'a> {
    plan: &'a Plan,
    priorities: Vec<u32>,
    step: usize,
    fault_point: usize,
    strike_point: usize,
    server_fault_point: usize,
    /// The faults the tape still offers after this run's decisions.
    left: FaultAllowance,
    /// Durations and picks decided so far.
    drawn: u64,
}

impl<'a> Decider<'a> {
    fn new(plan: &'a Plan) -> Decider<'a> {
        Decider {
            plan,
            priorities: plan.priorities.clone(),
            step: 0,
            fault_point: 0,
            strike_point: 0,
            server_fault_point: 0,
            left: plan.budget,
            drawn: 0,
        }
    }

    /// The alternative PCT takes at `point` (`waiting`: the clients in the
    /// order the alternatives name them, for an order point).
    fn decide(&mut self, point: &ChoicePoint, waiting: &[usize]) -> u32 {
        match point.kind {
            ChoiceKind::Order => self.pick(waiting),
            ChoiceKind::Fault => self.fault(point.alternatives),
            ChoiceKind::Duration | ChoiceKind::Pick | ChoiceKind::Server => {
                self.draw(point.alternatives)
            }
            ChoiceKind::Strike => self.strike(),
            ChoiceKind::ServerFault => self.server_fault(point.alternatives),
        }
    }

    /// The planned strike at this strike point, if the tape offers it.
    fn strike(&mut self) -> u32 {
        let offered = StrikeChoice::offered(&self.left);
        let here = self.strike_point;
        self.strike_point += 1;
        let planned = self.plan.strikes.iter().filter(|(at, _)| *at == here);
        let taken = planned
            .filter_map(|(_, kind)| offered.iter().position(|k| k == kind))
            .next()
            .unwrap_or(0);
        offered[taken].spend(&mut self.left);
        taken as u32
    }

    /// The planned ensemble fault at this point, if any: one of the
    /// `alternatives` other than none (the tape spends the budget, so
    /// the alternatives shrink as it goes).
    fn server_fault(&mut self, alternatives: u32) -> u32 {
        let here = self.server_fault_point;
        self.server_fault_point += 1;
        let planned = self.plan.server_faults.iter().find(|(at, _)| *at == here);
        match planned {
            Some((_, word)) if alternatives > 1 => 1 + (word % u64::from(alternatives - 1)) as u32,
            _ => 0,
        }
    }

    /// A duration's or a pick's alternative: uniform, the same for the
    /// same point of every re-execution of the run.
    fn draw(&mut self, alternatives: u32) -> u32 {
        let mut rng = SplitMix::new(self.plan.draws ^ self.drawn.wrapping_mul(0x9E37_79B9));
        self.drawn += 1;
        rng.below(alternatives)
    }

    fn pick(&mut self, waiting: &[usize]) -> u32 {
        if waiting.is_empty() {
            return 0;
        }
        let highest = |priorities: &[u32]| {
            (0..waiting.len())
                .max_by_key(|&i| priorities.get(waiting[i]).copied().unwrap_or(0))
                .unwrap_or(0)
        };
        let mut best = highest(&self.priorities);
        if let Some(change) = self.plan.changes.iter().position(|&s| s == self.step) {
            if let Some(priority) = self.priorities.get_mut(waiting[best]) {
                *priority = change as u32 + 1;
            }
            best = highest(&self.priorities);
        }
        self.step += 1;
        best as u32
    }

    /// The planned fault at this fault point, if the tape offers it (the
    /// alternatives say which kinds are left: see [`Tape::fault`]).
    fn fault(&mut self, alternatives: u32) -> u32 {
        let offered: &[FaultChoice] = match alternatives {
            4 => &[
                FaultChoice::None,
                FaultChoice::LoseBeforeApply,
                FaultChoice::LoseAfterApply,
                FaultChoice::Expire,
            ],
            3 => &[
                FaultChoice::None,
                FaultChoice::LoseBeforeApply,
                FaultChoice::LoseAfterApply,
            ],
            _ => &[FaultChoice::None, FaultChoice::Expire],
        };
        let here = self.fault_point;
        self.fault_point += 1;
        let taken = self
            .plan
            .faults
            .iter()
            .filter(|(at, _)| *at == here)
            .find_map(|(_, kind)| offered.iter().position(|k| k == kind))
            .unwrap_or(0);
        match offered[taken] {
            FaultChoice::LoseBeforeApply | FaultChoice::LoseAfterApply => {
                self.left.connection_loss = self.left.connection_loss.saturating_sub(1)
            }
            FaultChoice::Expire => self.left.expiry = self.left.expiry.saturating_sub(1),
            FaultChoice::None => {}
        }
        taken as u32
    }
}

/// One PCT run by re-execution: each traced execution follows the choices
/// fixed so far, and the first point where PCT decides otherwise than the
/// run took is fixed next, until they agree everywhere. The run's tape,
/// report and the executions it took.
fn pct_run(
    runner: &dyn Runner,
    seed: u64,
    plan: &Plan,
    tape_of: &dyn Fn(Vec<u32>) -> Tape,
) -> Result<(Tape, RunReport, u64), SearchError> {
    let mut script: Vec<u32> = Vec::new();
    let mut executions = 0;
    loop {
        let (tape, report) =
            execute(runner, seed, tape_of(script.clone()), true).map_err(SearchError::Run)?;
        executions += 1;
        let waiting = waiting_lists(&report)?;
        let Some((index, choice)) = disagreement(plan, &tape.log, &waiting)? else {
            return Ok((tape, report, executions));
        };
        if index < script.len() || tape.misfit.is_some() {
            return Err(SearchError::Nondeterministic {
                prefix: super::file::choice_string(&script),
                index,
            });
        }
        script = tape.log[..index].iter().map(|p| p.taken).collect();
        script.push(choice);
    }
}

/// The first point of `log` where PCT takes another alternative, and that
/// alternative.
fn disagreement(
    plan: &Plan,
    log: &[ChoicePoint],
    waiting: &[Vec<usize>],
) -> Result<Option<(usize, u32)>, SearchError> {
    let orders = log.iter().filter(|p| p.kind == ChoiceKind::Order).count();
    if orders != waiting.len() {
        return Err(SearchError::Run(format!(
            "the trace names the waiting clients of {} picks, the tape has {orders} order choices",
            waiting.len()
        )));
    }
    let mut decider = Decider::new(plan);
    let mut waits = waiting.iter();
    for (index, point) in log.iter().enumerate() {
        let here: &[usize] = match point.kind {
            ChoiceKind::Order => waits.next().map_or(&[], Vec::as_slice),
            _ => &[],
        };
        let choice = decider.decide(point, here);
        if choice != point.taken {
            return Ok(Some((index, choice)));
        }
    }
    Ok(None)
}

/// The waiting clients of each order choice of a traced run, in the
/// order its alternatives name them (the world's `choice:` lines).
fn waiting_lists(report: &RunReport) -> Result<Vec<Vec<usize>>, SearchError> {
    report
        .trace
        .lines
        .iter()
        .filter(|line| line.kind == TraceKind::Apply && line.text.starts_with("choice: "))
        .map(|line| {
            parse_waiting(&line.text).ok_or_else(|| {
                SearchError::Run(format!(
                    "a choice line without its waiting clients: {}",
                    line.text
                ))
            })
        })
        .collect()
}

/// `… (waiting: c0, c2)` → `[0, 2]`.
fn parse_waiting(text: &str) -> Option<Vec<usize>> {
    let (_, list) = text.rsplit_once("(waiting: ")?;
    list.strip_suffix(')')?
        .split(", ")
        .map(|name| name.strip_prefix('c')?.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(kind: ChoiceKind, alternatives: u32, taken: u32) -> ChoicePoint {
        ChoicePoint {
            kind,
            alternatives,
            taken,
        }
    }

    #[test]
    fn the_generator_is_the_same_for_the_same_seed() {
        let draws = |seed| {
            let mut rng = SplitMix::new(seed);
            (0..5).map(|_| rng.below(10)).collect::<Vec<_>>()
        };
        assert_eq!(draws(7), draws(7));
        assert_ne!(draws(7), draws(8));
        assert!(draws(7).iter().all(|&n| n < 10));
    }

    #[test]
    fn the_highest_priority_goes_and_a_change_point_lowers_it() {
        let plan = Plan {
            priorities: vec![3, 4, 2],
            changes: vec![1],
            faults: Vec::new(),
            strikes: Vec::new(),
            server_faults: Vec::new(),
            budget: FaultAllowance::default(),
            draws: 0,
        };
        let mut decider = Decider::new(&plan);
        let order = point(ChoiceKind::Order, 3, 0);
        assert_eq!(decider.decide(&order, &[0, 1, 2]), 1, "c1 has 4");
        // Step 1 is the change point: c1 drops to 1, c0 (3) goes.
        assert_eq!(decider.decide(&order, &[2, 1, 0]), 2);
        assert_eq!(decider.decide(&order, &[1, 2]), 1, "c2 (2) over c1 (1)");
    }

    #[test]
    fn a_planned_fault_strikes_its_point_if_offered() {
        let plan = Plan {
            priorities: vec![2, 3],
            changes: Vec::new(),
            faults: vec![(1, FaultChoice::LoseAfterApply), (2, FaultChoice::Expire)],
            strikes: Vec::new(),
            server_faults: Vec::new(),
            budget: FaultAllowance {
                connection_loss: 1,
                ..FaultAllowance::default()
            },
            draws: 0,
        };
        let mut decider = Decider::new(&plan);
        let fault = |alternatives| point(ChoiceKind::Fault, alternatives, 0);
        assert_eq!(decider.decide(&fault(3), &[]), 0);
        assert_eq!(decider.decide(&fault(3), &[]), 2, "lost after apply");
        assert_eq!(decider.decide(&fault(3), &[]), 0, "no expiry offered");
    }

    #[test]
    fn a_planned_strike_lands_between_requests_and_spends_the_budget() {
        let budget = FaultAllowance {
            connection_loss: 1,
            expiry: 0,
            pause: 1,
            ..FaultAllowance::default()
        };
        let plan = Plan {
            priorities: vec![2, 3],
            changes: Vec::new(),
            faults: Vec::new(),
            strikes: vec![(1, StrikeChoice::Silent), (2, StrikeChoice::Pause)],
            server_faults: Vec::new(),
            budget,
            draws: 0,
        };
        let mut decider = Decider::new(&plan);
        let strike = |alternatives| point(ChoiceKind::Strike, alternatives, 0);
        // none, blip, partition, silent, outage, pause
        assert_eq!(decider.decide(&strike(6), &[]), 0);
        assert_eq!(decider.decide(&strike(6), &[]), 3, "the silence");
        // The connection loss is spent: none, pause.
        assert_eq!(decider.decide(&strike(2), &[]), 1, "the pause");
        let fault = |alternatives| point(ChoiceKind::Fault, alternatives, 0);
        assert_eq!(decider.decide(&fault(1), &[]), 0);
    }

    #[test]
    fn a_plan_spreads_faults_over_requests_and_strike_points() {
        let samples = Samples {
            steps: 5,
            fault_points: 2,
            strike_points: 6,
            ..Samples::default()
        };
        let budget = FaultAllowance {
            connection_loss: 3,
            expiry: 3,
            pause: 2,
            ..FaultAllowance::default()
        };
        let plans: Vec<Plan> = (0..20)
            .map(|seed| Plan::draw(&mut SplitMix::new(seed), 2, 2, &samples, budget))
            .collect();
        for plan in &plans {
            assert_eq!(plan.faults.len() + plan.strikes.len(), 8, "{plan:?}");
            assert!(plan.faults.iter().all(|(at, _)| *at < 2), "{plan:?}");
            assert!(plan.strikes.iter().all(|(at, _)| *at < 6), "{plan:?}");
        }
        let struck = |kind| {
            let mut all = plans.iter().flat_map(|plan| &plan.strikes);
            all.any(|(_, k)| *k == kind)
        };
        for kind in [
            StrikeChoice::Silent,
            StrikeChoice::Outage,
            StrikeChoice::Expire,
            StrikeChoice::Pause,
        ] {
            assert!(struck(kind), "{kind:?} never planned");
        }
    }

    #[test]
    fn a_plan_has_distinct_priorities_and_change_points() {
        let samples = Samples {
            steps: 5,
            fault_points: 4,
            ..Samples::default()
        };
        let budget = FaultAllowance {
            connection_loss: 1,
            expiry: 1,
            pause: 0,
            ..FaultAllowance::default()
        };
        let plan = Plan::draw(&mut SplitMix::new(3), 3, 3, &samples, budget);
        let mut priorities = plan.priorities.clone();
        priorities.sort_unstable();
        assert_eq!(priorities, vec![3, 4, 5]);
        assert_eq!(plan.changes.len(), 2);
        assert_ne!(plan.changes[0], plan.changes[1]);
        assert!(plan.changes.iter().all(|&s| s < 5));
        assert_eq!(plan.faults.len(), 2);
        assert_eq!(plan.faults[1].1, FaultChoice::Expire);
        assert_eq!(
            plan,
            Plan::draw(&mut SplitMix::new(3), 3, 3, &samples, budget)
        );
    }

    #[test]
    fn waiting_clients_are_read_from_a_choice_line() {
        let text = "choice: the server applies c2's request next (waiting: c0, c2)";
        assert_eq!(parse_waiting(text), Some(vec![0, 2]));
        assert_eq!(parse_waiting("choice: (waiting: x)"), None);
    }
}
