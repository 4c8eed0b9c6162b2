//! Another run near a recorded one: a change to its draw tape
//! ([`crate::world::draws`]). Any word is a legal draw, so every mutant is
//! a run of the same world; a stream cut short draws the rest from its
//! generator, seeded from a fresh stream seed, so the rest differs too.
//!
//! The changes, each as likely (one mutant in five):
//! - **words**: one to four words anywhere on the tape take new values
//!   (a latency, a fault struck or not, a duration, a pick);
//! - **cut**: one stream ends at a word, and what it draws after comes
//!   from its generator (from there on, another timing, other faults);
//! - **splice**: one stream takes another tape's words from a word on;
//! - **runtime**: the runtime seed changes (madsim's task order, an
//!   unbiased `select!`), every word kept;
//! - **strike**: a word of the `faults` stream (one request's draw: is it
//!   lost, or its reply?) becomes one that strikes, so a fault lands at
//!   a request where the parent had none (a random word strikes as rarely
//!   as the rates say); when the tape has no such stream, words instead.

use crate::world::draws::DrawTape;
use rand::rngs::SmallRng;
use rand::{Rng, RngCore};

/// The stream that decides, request by request, whether a fault strikes
/// (`FaultPlan::for_request`: a draw in [0, 1) below the loss rates).
const FAULTS: &str = "faults";

/// A strike's word: a draw below 0.06, so a request's fault strikes
/// whatever the scenario's loss rates (0.01-0.05 in the shipped ones;
/// below the first rate a request is lost, then its reply, else nothing).
const STRIKE_BELOW: u64 = (u64::MAX / 100) * 6;

/// What a mutant is: its tape, and the seed its streams' generators start
/// from past the tape's words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mutant {
    pub tape: DrawTape,
    pub stream_seed: u64,
    /// Which change made it.
    pub change: Change,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Change {
    Words,
    Cut,
    Splice,
    Runtime,
    Strike,
}

impl Change {
    /// Every change, in `Change as usize` order.
    pub const ALL: [Change; 5] = [
        Change::Words,
        Change::Cut,
        Change::Splice,
        Change::Runtime,
        Change::Strike,
    ];
}

/// A mutant of `parent` by a change drawn uniformly (`other`: another tape of the corpus, for a
/// splice); `stream_seed`: the parent's.
pub fn mutate(parent: &DrawTape, stream_seed: u64, other: &DrawTape, rng: &mut SmallRng) -> Mutant {
    let change = Change::ALL[rng.gen_range(0..Change::ALL.len())];
    mutate_by(parent, stream_seed, other, change, rng)
}

/// A mutant of `parent` by `change` (a tape of no words changes its
/// runtime seed; one without a `faults` stream its words instead of a
/// strike).
pub fn mutate_by(
    parent: &DrawTape,
    stream_seed: u64,
    other: &DrawTape,
    change: Change,
    rng: &mut SmallRng,
) -> Mutant {
    let mut tape = parent.clone();
    let faults = tape.streams.get(FAULTS).map_or(0, Vec::len);
    let change = match (change, tape.words()) {
        (_, 0) => Change::Runtime,
        (Change::Strike, _) if faults == 0 => Change::Words,
        (change, _) => change,
    };
    let mut stream_seed = stream_seed;
    match change {
        Change::Words => {
            for _ in 0..rng.gen_range(1..=4) {
                let (stream, index) = some_word(&tape, rng);
                let words = tape.streams.get_mut(&stream).expect("a stream of the tape");
                words[index] = rng.next_u64();
            }
        }
        Change::Cut => {
            let (stream, index) = some_word(&tape, rng);
            tape.streams
                .get_mut(&stream)
                .expect("a stream")
                .truncate(index);
            stream_seed = rng.next_u64();
        }
        Change::Splice => {
            let (stream, index) = some_word(&tape, rng);
            let theirs = other.streams.get(&stream).map_or(&[][..], Vec::as_slice);
            let words = tape.streams.get_mut(&stream).expect("a stream");
            words.truncate(index);
            words.extend(theirs.iter().skip(index));
            stream_seed = rng.next_u64();
        }
        Change::Runtime => tape.seed = rng.next_u64(),
        Change::Strike => {
            let words = tape.streams.get_mut(FAULTS).expect("a faults stream");
            let index = rng.gen_range(0..words.len());
            words[index] = rng.gen_range(0..STRIKE_BELOW);
        }
    }
    Mutant {
        tape,
        stream_seed,
        change,
    }
}

/// A word of the tape, each as likely: its stream and its index.
fn some_word(tape: &DrawTape, rng: &mut SmallRng) -> (String, usize) {
    let mut index = rng.gen_range(0..tape.words());
    for (name, words) in &tape.streams {
        if index < words.len() {
            return (name.clone(), index);
        }
        index -= words.len();
    }
    unreachable!("an index below the tape's words falls in a stream")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn tape() -> DrawTape {
        let mut tape = DrawTape {
            seed: 3,
            ..DrawTape::default()
        };
        tape.streams.insert("net".into(), vec![1, 2, 3, 4]);
        tape.streams.insert("faults".into(), vec![5, 6]);
        tape
    }

    #[test]
    fn every_change_keeps_the_world_and_changes_the_run() {
        let mut rng = SmallRng::seed_from_u64(1);
        let other = DrawTape {
            seed: 9,
            streams: [("net".to_string(), vec![10, 20, 30, 40, 50])].into(),
        };
        let mut seen = Vec::new();
        for _ in 0..200 {
            let mutant = mutate(&tape(), 7, &other, &mut rng);
            assert!(
                mutant.tape != tape() || mutant.stream_seed != 7,
                "{mutant:?}"
            );
            let names: Vec<&String> = mutant.tape.streams.keys().collect();
            assert_eq!(names, vec!["faults", "net"], "no stream appears");
            if !seen.contains(&mutant.change) {
                seen.push(mutant.change);
            }
        }
        assert_eq!(seen.len(), 5, "{seen:?}");
    }

    #[test]
    fn a_strike_makes_one_request_draw_a_fault() {
        let mut rng = SmallRng::seed_from_u64(2);
        let mut parent = tape();
        parent.streams.insert(FAULTS.into(), vec![u64::MAX; 6]);
        for _ in 0..50 {
            let mutant = mutate_by(&parent, 7, &parent, Change::Strike, &mut rng);
            assert_eq!(mutant.change, Change::Strike);
            assert_eq!(mutant.tape.streams["net"], parent.streams["net"]);
            let faults = &mutant.tape.streams[FAULTS];
            let struck: Vec<&u64> = faults.iter().filter(|&&w| w < STRIKE_BELOW).collect();
            assert_eq!(struck.len(), 1, "{faults:?}");
            // As the world reads it: a draw in [0, 1) below 0.06.
            let draw = (*struck[0] >> 11) as f64 / (1u64 << 53) as f64;
            assert!(draw < 0.06, "{draw}");
        }
        let without = DrawTape {
            seed: 1,
            streams: [("net".to_string(), vec![1, 2])].into(),
        };
        let mutant = mutate_by(&without, 7, &without, Change::Strike, &mut rng);
        assert_eq!(
            mutant.change,
            Change::Words,
            "no faults stream: words instead"
        );
    }

    #[test]
    fn the_same_generator_makes_the_same_mutants() {
        let make = || {
            let mut rng = SmallRng::seed_from_u64(5);
            (0..20)
                .map(|_| mutate(&tape(), 7, &tape(), &mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(make(), make());
    }
}
