//! Depth-first search over an explored world's choices, by re-execution.
//!
//! Each execution is a fresh run that follows a prefix of choices and then
//! takes the default at every later point, logging how many alternatives
//! each point had ([`super::Tape`]). The search then backtracks: the next
//! prefix is the deepest logged point's next untried alternative, until no
//! point has one left. Bounds:
//!
//! - a delay bound (order choices that leave the default order), raised by
//!   iterative deepening from 0 up to `max_delays` (unbounded: until an
//!   iteration meets no bound at all, the exhaustive answer), so the first
//!   counterexamples found have the fewest delays; the shortest of those
//!   (fewest choice points) is kept per property;
//! - the fault budget (the tape offers faults while it lasts);
//! - the points of a duration's range tried ([`DurationPoints`]);
//! - most executions and a timeout (the search is then not exhaustive).
//!
//! Pruning: a run that reaches a state the search visited before (same
//! server state and every client's same history of inputs, with no more
//! delays and faults left than then) stops there ([`super::Tape::visit`]).
//!
//! Vacuity: an execution that ran to its end without a violation but in
//! which the workload achieved nothing (`RunReport::vacuous`) is counted
//! apart; it is not a pass. A search whose every complete execution is
//! vacuous has no verdict ([`Summary::all_vacuous`]).

use super::tape::{DurationPoints, FaultAllowance, Memo, Tape};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What bounds a search.
#[derive(Clone, Debug, Default)]
pub struct Bounds {
    pub faults: FaultAllowance,
    /// The points of a duration's range the search tries.
    pub durations: DurationPoints,
    /// Most delays (None: raised until the search is exhaustive).
    pub max_delays: Option<u32>,
    pub max_executions: Option<u64>,
    pub timeout: Option<Duration>,
    /// Keep no memo (every execution runs to its end).
    pub no_memo: bool,
    /// The runtime seeds the world runs under, a whole search each
    /// (`run::explore`; [`search`] itself runs what it is given).
    pub runtime_seeds: super::RuntimeSeeds,
}

/// One execution, as the search needs it: its tape back, the properties
/// it violated (none for a pruned one), and why its pass says nothing, if
/// it ran to its end without a violation while the workload achieved
/// nothing.
pub struct Execution {
    pub tape: Tape,
    pub violated: Vec<String>,
    pub vacuous: Option<String>,
}

/// A counterexample: the choices of a run that violated `property`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub property: String,
    pub choices: Vec<u32>,
    /// Choice points the run met, and how many left the default order.
    pub points: usize,
    pub delays: u32,
    /// The runtime seed the run ran under (set by whoever ran it).
    pub runtime_seed: u64,
}

/// Why a search stopped before it was done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Executions,
    Timeout,
}

/// What a search did.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub executions: u64,
    /// Executions stopped at a visited state.
    pub pruned: u64,
    /// The delay bound of the last iteration.
    pub delay_bound: u32,
    /// Every alternative within the fault budget was explored: no delay
    /// bound, execution limit or timeout cut the last iteration.
    pub exhaustive: bool,
    pub stop: Option<Stop>,
    /// The shortest counterexample of each violated property.
    pub found: Vec<Found>,
    /// Knuth's estimate of the executions the whole tree has.
    pub estimate: Estimate,
    /// Executions that ran to their end without a violation while the
    /// workload achieved nothing (not passes), and the first one's reason.
    pub vacuity: Vacuity,
    /// The runtime seeds whose search ran (to its end or to a stop).
    pub seeds_searched: u64,
}

/// The executions whose pass says nothing (`RunReport::vacuous`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Vacuity {
    pub executions: u64,
    /// Why the first of them says nothing.
    pub first: Option<String>,
}

impl Vacuity {
    /// Counts one execution's vacuity, if it has one.
    pub fn add(&mut self, why: Option<String>) {
        if let Some(why) = why {
            self.executions += 1;
            self.first.get_or_insert(why);
        }
    }
}

impl Summary {
    /// Executions that ran to their end (not pruned).
    pub fn complete(&self) -> u64 {
        self.executions - self.pruned
    }

    /// True when no violation was found and every complete execution was
    /// vacuous: the search has no verdict (the workload achieved nothing).
    pub fn all_vacuous(&self) -> bool {
        self.found.is_empty() && self.complete() > 0 && self.vacuity.executions == self.complete()
    }

    /// Adds the search of one more runtime seed (`seed`) to these: the
    /// whole is exhaustive only if every part was, its counterexamples
    /// carry their seed, its estimate is the sum of the trees'.
    pub fn absorb(&mut self, part: Summary, seed: u64) {
        let first = self.seeds_searched == 0;
        self.executions += part.executions;
        self.pruned += part.pruned;
        self.delay_bound = self.delay_bound.max(part.delay_bound);
        self.exhaustive = (first || self.exhaustive) && part.exhaustive;
        self.stop = self.stop.or(part.stop);
        self.found.extend(part.found.into_iter().map(|found| Found {
            runtime_seed: seed,
            ..found
        }));
        self.estimate.plus(&part.estimate);
        self.vacuity.executions += part.vacuity.executions;
        if self.vacuity.first.is_none() {
            self.vacuity.first = part.vacuity.first;
        }
        self.seeds_searched += 1;
    }
}

/// Knuth's estimator of a tree's size (its executions, under the fault
/// budget, with no delay bound and no memo): along one execution, the
/// product of the alternatives of every choice point it met; averaged
/// over the executions that ran to their end (a pruned one stops short of
/// its leaf). Exact on a uniform tree; the search's executions are not a
/// random sample, so on a lopsided tree it is a rough figure.
#[derive(Clone, Debug, Default)]
pub struct Estimate {
    sum: f64,
    runs: u64,
    /// The estimates of other trees added to this one ([`Estimate::plus`]),
    /// and how many.
    others: f64,
    trees: u64,
}

impl Estimate {
    /// Adds one execution that ran to its end.
    pub fn add(&mut self, tape: &Tape) {
        let product: f64 = tape.log.iter().map(|p| f64::from(p.alternatives)).product();
        self.sum += product;
        self.runs += 1;
    }

    /// Adds another tree's estimate (another runtime seed's search).
    pub fn plus(&mut self, other: &Estimate) {
        if let Some(total) = other.total() {
            self.others += total;
            self.trees += 1;
        }
    }

    /// The estimated number of executions; None before any complete one.
    pub fn total(&self) -> Option<f64> {
        let own = (self.runs > 0).then(|| self.sum / self.runs as f64);
        match (own, self.trees) {
            (None, 0) => None,
            (own, _) => Some(own.unwrap_or(0.0) + self.others),
        }
    }
}

/// The world parted from an earlier run of the same prefix: a run is not
/// a function of its choices (state outliving a run, an unbiased select!).
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("not deterministic: replaying choices {prefix} met a different choice point {index} (the run depends on more than its choices: state outliving a run, or, in a build without `--cfg tokio_unstable`, a `tokio::select!` without `biased;`)")]
    Nondeterministic { prefix: String, index: usize },
    #[error("the run lost its choice tape (it panicked or never built its world)")]
    NoTape,
    #[error("{0}")]
    Run(String),
}

/// Searches with `execute` running one execution per tape.
pub fn search(
    bounds: &Bounds,
    mut execute: impl FnMut(Tape) -> Result<Execution, SearchError>,
) -> Result<Summary, SearchError> {
    let started = Instant::now();
    let mut summary = Summary::default();
    let mut bound = 0;
    loop {
        let limit = bounds.max_delays.map_or(bound, |max| bound.min(max));
        summary.delay_bound = limit;
        let cut = iteration(bounds, limit, started, &mut summary, &mut execute)?;
        summary.exhaustive = !cut && summary.stop.is_none();
        let at_max = bounds.max_delays.is_some_and(|max| limit >= max);
        if !summary.found.is_empty() || summary.stop.is_some() || !cut || at_max {
            return Ok(summary);
        }
        bound += 1;
    }
}

/// One depth-first search under a delay bound; true if the bound cut an
/// alternative.
fn iteration(
    bounds: &Bounds,
    limit: u32,
    started: Instant,
    summary: &mut Summary,
    execute: &mut impl FnMut(Tape) -> Result<Execution, SearchError>,
) -> Result<bool, SearchError> {
    let mut memo = Memo::new();
    let mut prefix: Vec<u32> = Vec::new();
    let mut expected: Vec<u32> = Vec::new();
    let mut cut = false;
    let mut found: BTreeMap<String, Found> = BTreeMap::new();
    let result = loop {
        if let Some(stop) = stopped(bounds, summary.executions, started) {
            summary.stop = Some(stop);
            break Ok(cut);
        }
        let mut tape = Tape::new(prefix.clone(), bounds.faults).with_durations(bounds.durations);
        if !bounds.no_memo {
            tape = tape.with_memo(std::mem::take(&mut memo), Some(limit));
        }
        let mut run = execute(tape)?;
        memo = run.tape.take_memo();
        summary.executions += 1;
        summary.pruned += u64::from(run.tape.pruned);
        if !run.tape.pruned {
            summary.estimate.add(&run.tape);
            summary.vacuity.add(run.vacuous.take());
        }
        check_replayed(&run.tape, &prefix, &expected)?;
        for property in std::mem::take(&mut run.violated) {
            keep_shortest(&mut found, &run.tape, property);
        }
        match next_prefix(&run.tape, limit, &mut cut) {
            Some((next, alternatives)) => (prefix, expected) = (next, alternatives),
            None => break Ok(cut),
        }
    };
    summary.found.extend(found.into_values());
    result
}

fn stopped(bounds: &Bounds, executions: u64, started: Instant) -> Option<Stop> {
    if bounds.max_executions.is_some_and(|max| executions >= max) {
        return Some(Stop::Executions);
    }
    if bounds
        .timeout
        .is_some_and(|timeout| started.elapsed() >= timeout)
    {
        return Some(Stop::Timeout);
    }
    None
}

/// The run followed its prefix through the points its earlier runs met.
fn check_replayed(tape: &Tape, prefix: &[u32], expected: &[u32]) -> Result<(), SearchError> {
    let parted = (0..prefix.len()).find(|&i| {
        tape.log
            .get(i)
            .is_none_or(|point| point.taken != prefix[i] || point.alternatives != expected[i])
    });
    match parted.or(tape.misfit) {
        Some(index) => Err(SearchError::Nondeterministic {
            prefix: super::file::choice_string(prefix),
            index,
        }),
        None => Ok(()),
    }
}

fn keep_shortest(found: &mut BTreeMap<String, Found>, tape: &Tape, property: String) {
    let candidate = Found {
        property: property.clone(),
        choices: tape.taken(),
        points: tape.log.len(),
        delays: tape.log.iter().filter(|p| p.is_delay()).count() as u32,
        runtime_seed: 0,
    };
    let shorter =
        |old: &Found| (candidate.choices.len(), candidate.points) < (old.choices.len(), old.points);
    if found.get(&property).is_none_or(shorter) {
        found.insert(property, candidate);
    }
}

/// The next prefix to run (the deepest point with an untried alternative
/// within the delay bound) and the alternatives of its points; None when
/// every alternative has been tried. Sets `cut` when the bound left one
/// out.
fn next_prefix(tape: &Tape, limit: u32, cut: &mut bool) -> Option<(Vec<u32>, Vec<u32>)> {
    let log = &tape.log;
    let mut delays_before = Vec::with_capacity(log.len());
    let mut delays = 0;
    for point in log {
        delays_before.push(delays);
        delays += u32::from(point.is_delay());
    }
    for index in (0..log.len()).rev() {
        let point = log[index];
        let next = point.taken + 1;
        if next >= point.alternatives {
            continue;
        }
        if point.kind == super::ChoiceKind::Order && delays_before[index] + 1 > limit {
            *cut = true;
            continue;
        }
        let mut prefix: Vec<u32> = log[..index].iter().map(|p| p.taken).collect();
        prefix.push(next);
        let alternatives = log[..=index].iter().map(|p| p.alternatives).collect();
        return Some((prefix, alternatives));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy world: two order points of 2 alternatives, then a fault point
    /// while the budget lasts; it "violates" when it took 1, 1.
    fn toy(mut tape: Tape) -> Result<Execution, SearchError> {
        let a = tape.order(2);
        let b = tape.order(2);
        tape.fault();
        let violated = match (a, b) {
            (1, 1) => vec!["safety".to_string()],
            _ => Vec::new(),
        };
        Ok(Execution {
            tape,
            violated,
            vacuous: None,
        })
    }

    #[test]
    fn explores_every_alternative_and_finds_the_fewest_delays() {
        let bounds = Bounds {
            faults: FaultAllowance {
                connection_loss: 1,
                ..FaultAllowance::default()
            },
            no_memo: true,
            ..Bounds::default()
        };
        let summary = search(&bounds, toy).expect("deterministic");
        // Bound 0: 3 executions (the fault point's alternatives); bound 1:
        // 3 per order pattern with at most one delay (3 of them); bound 2
        // finds (1, 1) and explores all 4 patterns.
        assert_eq!(summary.executions, 3 + 9 + 12);
        assert_eq!(summary.delay_bound, 2);
        assert!(summary.exhaustive);
        assert_eq!(summary.found.len(), 1);
        assert_eq!(summary.found[0].choices, vec![1, 1]);
        assert_eq!(summary.found[0].delays, 2);
        // Every execution meets 2 × 2 × 3 alternatives: the toy's 12 leaves.
        assert_eq!(summary.estimate.total(), Some(12.0));
    }

    #[test]
    fn the_estimate_averages_the_products_of_complete_runs() {
        let mut estimate = Estimate::default();
        assert_eq!(estimate.total(), None);
        let mut short = Tape::new(vec![], FaultAllowance::default());
        short.order(2);
        let mut long = Tape::new(vec![], FaultAllowance::default());
        long.order(2);
        long.order(3);
        estimate.add(&short);
        estimate.add(&long);
        assert_eq!(estimate.total(), Some((2.0 + 6.0) / 2.0));
    }

    #[test]
    fn a_delay_bound_makes_it_not_exhaustive() {
        let bounds = Bounds {
            max_delays: Some(1),
            no_memo: true,
            ..Bounds::default()
        };
        let summary = search(&bounds, toy).expect("deterministic");
        assert!(!summary.exhaustive);
        assert!(summary.found.is_empty());
        assert_eq!(summary.executions, 1 + 3);
    }

    #[test]
    fn a_world_that_parts_from_its_prefix_is_refused() {
        let mut runs = 0;
        let flaky = |mut tape: Tape| {
            runs += 1;
            tape.order(2 + runs % 2);
            tape.order(2);
            Ok(Execution {
                tape,
                violated: Vec::new(),
                vacuous: None,
            })
        };
        let error = search(&Bounds::default(), flaky).unwrap_err();
        assert!(matches!(error, SearchError::Nondeterministic { .. }));
    }
}
