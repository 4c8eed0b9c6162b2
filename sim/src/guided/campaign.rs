//! A search guided by coverage (`zkcheck fuzz`): a corpus of draw tapes
//! that each reached a client feature no run before them had (a client's
//! own abstract state with the tree as it sees it:
//! [`crate::world::coverage`]),
//! mutated ([`super::mutate`]) and run again, until a run breaks a
//! property or the budget is spent.
//!
//! The campaign starts from the scenario's first seeds (each run recorded,
//! its tape in the corpus if it reached anything new); every later run
//! picks a corpus entry (the newest half of the time: what was just found
//! is where new ground is likeliest), mutates its tape and runs it. One
//! campaign seed draws every pick and mutation on one thread: the same
//! seed and scenario give the same runs. A run that breaks a property
//! hands back its recorded tape, which `zkcheck replay` runs again alone
//! with the full trace.

use super::mutate::{mutate_by, Change};
use super::tally::{Added, CoverageTally};
use crate::scenario::Runner;
use crate::world::draws::{self, DrawRequest, DrawTape};
use crate::world::RunReport;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::time::{Duration, Instant};

/// What a campaign runs.
#[derive(Clone, Debug)]
pub struct Campaign {
    /// Draws every pick and mutation.
    pub seed: u64,
    /// Most runs, the first seeds' included.
    pub runs: u64,
    pub timeout: Option<Duration>,
    /// The scenario's seeds the corpus starts from: `first_seed`, ...
    pub first_seed: u64,
    pub initial_seeds: u64,
    /// After the first seeds, the share of runs that are the scenario's
    /// next seed rather than a mutant (0: mutants only).
    pub fresh_seeds: f64,
}

/// A corpus entry: a run's tape and the seed its streams started from.
#[derive(Clone, Debug)]
struct Entry {
    tape: DrawTape,
    stream_seed: u64,
}

/// A run that broke a property: its number (1-based), its tape, and its
/// report.
#[derive(Debug)]
pub struct Failing {
    pub run: u64,
    pub tape: DrawTape,
    pub report: RunReport,
}

/// What a campaign did.
#[derive(Debug, Default)]
pub struct Outcome {
    pub runs: u64,
    /// Runs that were the scenario's own seeds (the first ones, and the
    /// fresh ones after them).
    pub seeds: u64,
    /// Tapes kept for reaching something new.
    pub corpus: usize,
    /// Every state and step reached, with the first run (1-based) that
    /// reached it.
    pub reached: CoverageTally,
    /// The runs each kind of change made, and how many reached something
    /// new: words, cut, splice, runtime, strike.
    pub changes: [(u64, u64); 5],
    pub first_failure: Option<Failing>,
    /// The budget's end was the timeout.
    pub timed_out: bool,
}

/// Runs `campaign` on `runner`'s world; `progress` hears of every run.
pub fn fuzz(
    runner: &dyn Runner,
    campaign: &Campaign,
    mut progress: impl FnMut(&Outcome),
) -> Outcome {
    let started = Instant::now();
    let mut rng = SmallRng::seed_from_u64(campaign.seed);
    let mut corpus: Vec<Entry> = Vec::new();
    let mut outcome = Outcome::default();
    while outcome.runs < campaign.runs {
        if campaign.timeout.is_some_and(|t| started.elapsed() >= t) {
            outcome.timed_out = true;
            break;
        }
        let fresh = outcome.runs < campaign.initial_seeds
            || corpus.is_empty()
            || (campaign.fresh_seeds > 0.0 && rng.gen_bool(campaign.fresh_seeds));
        let (seed, stream_seed, change) = match fresh {
            true => {
                let seed = campaign.first_seed.wrapping_add(outcome.seeds);
                outcome.seeds += 1;
                draws::install(recording(DrawTape::empty(seed), seed));
                (seed, seed, None)
            }
            false => {
                let parent = pick(&corpus, &mut rng);
                let other = &corpus[rng.gen_range(0..corpus.len())];
                let change = pick_change(&outcome.changes, &mut rng);
                let mutant = mutate_by(
                    &parent.tape,
                    parent.stream_seed,
                    &other.tape,
                    change,
                    &mut rng,
                );
                let seed = mutant.tape.seed;
                draws::install(recording(mutant.tape, mutant.stream_seed));
                (seed, mutant.stream_seed, Some(mutant.change))
            }
        };
        let mut report = runner.run(seed, false);
        let tape = draws::collect().expect("a recording run hands its tape back");
        outcome.runs += 1;
        let run = outcome.runs;
        let added = match report.coverage.take() {
            Some(coverage) => outcome.reached.add(run, &coverage),
            None => Added::default(),
        };
        if let Some(change) = change {
            let slot = &mut outcome.changes[change as usize];
            slot.0 += 1;
            slot.1 += u64::from(added.features > 0);
        }
        if added.features > 0 {
            corpus.push(Entry {
                tape: tape.clone(),
                stream_seed,
            });
            outcome.corpus = corpus.len();
        }
        if !report.passed() {
            outcome.first_failure = Some(Failing { run, tape, report });
            progress(&outcome);
            break;
        }
        progress(&outcome);
    }
    outcome
}

/// A run of `tape` (its streams' generators seeded from `stream_seed`
/// past its words), recorded, with its coverage.
fn recording(tape: DrawTape, stream_seed: u64) -> DrawRequest {
    DrawRequest {
        script: Some(tape),
        record: true,
        stream_seed: Some(stream_seed),
        coverage: true,
    }
}

/// The change to make: each with a weight of its success so far (runs
/// that reached something new, plus one, over runs made, plus two), so
/// the changes that pay in this world are made more often and none is
/// dropped.
fn pick_change(changes: &[(u64, u64); 5], rng: &mut SmallRng) -> Change {
    let weights = changes.map(|(runs, new)| (new as f64 + 1.0) / (runs as f64 + 2.0));
    let mut at = rng.gen::<f64>() * weights.iter().sum::<f64>();
    for (change, weight) in Change::ALL.iter().zip(weights) {
        if at < weight {
            return *change;
        }
        at -= weight;
    }
    Change::ALL[Change::ALL.len() - 1]
}

/// The entry to mutate: the newest half of the time, else any.
fn pick<'a>(corpus: &'a [Entry], rng: &mut SmallRng) -> &'a Entry {
    match rng.gen_bool(0.5) {
        true => corpus.last().expect("a corpus entry"),
        false => &corpus[rng.gen_range(0..corpus.len())],
    }
}

impl Change {
    /// The names of the changes, in `Outcome::changes`' order.
    pub const NAMES: [&'static str; 5] = ["words", "cut", "splice", "runtime", "strike"];
}

/// The coverage of the scenario's own seeds `first_seed..first_seed +
/// runs`, run in order on this thread: what a campaign of `runs` runs is
/// compared with (`fuzz --against-seeds`), each state with the 1-based
/// run that first reached it, as a campaign counts.
pub fn seeded(runner: &dyn Runner, first_seed: u64, runs: u64) -> CoverageTally {
    let mut tally = CoverageTally::default();
    for run in 1..=runs {
        draws::install(DrawRequest {
            coverage: true,
            ..Default::default()
        });
        let mut report = runner.run(first_seed.wrapping_add(run - 1), false);
        if let Some(coverage) = report.coverage.take() {
            tally.add(run, &coverage);
        }
    }
    tally
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_that_pays_is_picked_more_and_none_is_dropped() {
        let mut rng = SmallRng::seed_from_u64(4);
        // Strike reached something new in half its runs, the others never.
        let changes = [(100, 0), (100, 0), (100, 0), (100, 0), (100, 50)];
        let mut picked = [0u32; 5];
        for _ in 0..10_000 {
            picked[pick_change(&changes, &mut rng) as usize] += 1;
        }
        assert!(picked[4] > 8_000, "{picked:?}");
        assert!(picked[..4].iter().all(|&n| n > 50), "{picked:?}");
    }
}
