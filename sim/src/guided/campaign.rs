//! A search guided by coverage (`zkcheck fuzz`): a corpus of draw tapes
//! that each reached a client feature no run before them had (a client's
//! own abstract state with the tree as it sees it:
//! [`crate::world::coverage`]),
//! mutated ([`super::mutate`]) and run again, until a run breaks a
//! property or the budget is spent.
//!
//! The campaign starts from the scenario's first seeds (each run recorded,
//! its tape in the corpus if it reached anything new); every later run is
//! made by a move picked by its success so far (the runs it made that
//! reached something new): a change to a corpus entry's tape (the newest
//! entry half of the time: what was just found is where new ground is
//! likeliest), or the scenario's next seed. Where fresh runs still find
//! more than mutants do (a large world, far from covered) the campaign
//! runs more seeds; where mutants pay, it makes more of them. One
//! campaign seed draws every pick and mutation on one thread: the same
//! seed and scenario give the same runs. A run that breaks a property
//! hands back its recorded tape, which `zkcheck replay` runs again alone
//! with the full trace.

use super::mutate::{mutate_by, Aim, Change};
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
    /// next seed rather than a mutant (0: mutants only); None: the next
    /// seed is one more move, picked by its success like the changes.
    pub fresh_seeds: Option<f64>,
}

/// A corpus entry: a run's tape, the seed its streams started from, and
/// where its request faults were drawn.
#[derive(Clone, Debug)]
struct Entry {
    tape: DrawTape,
    stream_seed: u64,
    aim: Aim,
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
    /// The runs each move made after the first seeds, and how many reached
    /// something new: the changes (words, cut, splice, runtime, strike),
    /// then the scenario's next seed ([`MOVES`]).
    pub moves: [(u64, u64); MOVES.len()],
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
        let first = outcome.runs < campaign.initial_seeds || corpus.is_empty();
        let next = match first {
            true => None,
            false => Some(pick_move(&outcome.moves, campaign.fresh_seeds, &mut rng)),
        };
        let (seed, stream_seed, made_by) = match next {
            None | Some(FRESH) => {
                let seed = campaign.first_seed.wrapping_add(outcome.seeds);
                outcome.seeds += 1;
                draws::install(recording(DrawTape::empty(seed), seed));
                (seed, seed, next)
            }
            Some(change) => {
                let parent = pick(&corpus, &mut rng);
                let other = &corpus[rng.gen_range(0..corpus.len())];
                let mutant = mutate_by(
                    &parent.tape,
                    parent.stream_seed,
                    &other.tape,
                    Change::ALL[change],
                    &parent.aim,
                    &mut rng,
                );
                let seed = mutant.tape.seed;
                draws::install(recording(mutant.tape, mutant.stream_seed));
                (seed, mutant.stream_seed, Some(mutant.change as usize))
            }
        };
        let mut report = runner.run(seed, false);
        let tape = draws::collect().expect("a recording run hands its tape back");
        outcome.runs += 1;
        let run = outcome.runs;
        let (added, aim) = match report.coverage.take() {
            Some(coverage) => (
                outcome.reached.add(run, &coverage),
                Aim {
                    sites: coverage.fault_sites,
                    loss_words: coverage.loss_words,
                },
            ),
            None => (Added::default(), Aim::default()),
        };
        if let Some(made_by) = made_by {
            let slot = &mut outcome.moves[made_by];
            slot.0 += 1;
            slot.1 += u64::from(added.features > 0);
        }
        if added.features > 0 {
            corpus.push(Entry {
                tape: tape.clone(),
                stream_seed,
                aim,
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

/// The moves after the first seeds: the changes in [`Change::ALL`]'s
/// order, then the scenario's next seed.
pub const MOVES: [&str; 6] = ["words", "cut", "splice", "runtime", "strike", "fresh seed"];

/// The index of the scenario's next seed among the [`MOVES`].
pub const FRESH: usize = Change::ALL.len();

/// The next move (an index into [`MOVES`]). With a fixed share of fresh
/// seeds, a fresh seed that often, else a change; without one, any move.
/// Each move is picked with a weight of its success so far (runs that
/// reached something new, plus one, over runs made, plus two), so the
/// moves that pay in this world are made more often and none is dropped.
fn pick_move(
    made: &[(u64, u64); MOVES.len()],
    fresh_seeds: Option<f64>,
    rng: &mut SmallRng,
) -> usize {
    let moves = match fresh_seeds {
        None => &made[..],
        Some(share) if share > 0.0 && rng.gen_bool(share) => return FRESH,
        Some(_) => &made[..FRESH],
    };
    let weights: Vec<f64> = moves
        .iter()
        .map(|(runs, new)| (*new as f64 + 1.0) / (*runs as f64 + 2.0))
        .collect();
    let mut at = rng.gen::<f64>() * weights.iter().sum::<f64>();
    for (index, weight) in weights.iter().enumerate() {
        if at < *weight {
            return index;
        }
        at -= weight;
    }
    moves.len() - 1
}

/// The entry to mutate: the newest half of the time, else any.
fn pick<'a>(corpus: &'a [Entry], rng: &mut SmallRng) -> &'a Entry {
    match rng.gen_bool(0.5) {
        true => corpus.last().expect("a corpus entry"),
        false => &corpus[rng.gen_range(0..corpus.len())],
    }
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
    fn a_move_that_pays_is_picked_more_and_none_is_dropped() {
        let mut rng = SmallRng::seed_from_u64(4);
        // Strike reached something new in half its runs, the others never.
        let made = [(100, 0), (100, 0), (100, 0), (100, 0), (100, 50), (100, 0)];
        let mut picked = [0u32; MOVES.len()];
        for _ in 0..10_000 {
            picked[pick_move(&made, None, &mut rng)] += 1;
        }
        assert!(picked[4] > 8_000, "{picked:?}");
        assert!(picked.iter().all(|&n| n > 50), "{picked:?}");
        // Fresh seeds that pay are picked more in their turn.
        let made = [(100, 0), (100, 0), (100, 0), (100, 0), (100, 0), (100, 50)];
        let fresh = (0..1_000)
            .filter(|_| pick_move(&made, None, &mut rng) == FRESH)
            .count();
        assert!(fresh > 800, "{fresh}");
    }

    #[test]
    fn a_fixed_share_of_fresh_seeds_is_kept() {
        let mut rng = SmallRng::seed_from_u64(5);
        let made = [(100, 50); MOVES.len()];
        let fresh = |share, rng: &mut SmallRng| {
            (0..10_000)
                .filter(|_| pick_move(&made, Some(share), rng) == FRESH)
                .count()
        };
        assert_eq!(fresh(0.0, &mut rng), 0, "mutants only");
        let half = fresh(0.5, &mut rng);
        assert!((4_700..5_300).contains(&half), "{half}");
    }
}
