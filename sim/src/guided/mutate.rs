//! Another run near a recorded one: a change to its draw tape
//! ([`crate::world::draws`]). Any word is a legal draw, so every mutant is
//! a run of the same world; a stream cut short draws the rest from its
//! generator, seeded from a fresh stream seed, so the rest differs too.
//!
//! The changes, each as likely:
//! - **words**: one to four words anywhere on the tape take new values
//!   (a latency, a fault struck or not, a duration, a pick);
//! - **cut**: one stream ends at a word, and what it draws after comes
//!   from its generator (from there on, another timing, other faults);
//! - **splice**: one stream takes another tape's words from a word on;
//! - **runtime**: the runtime seed changes (madsim's task order, an
//!   unbiased `select!`), every word kept.

use crate::world::draws::DrawTape;
use rand::rngs::SmallRng;
use rand::{Rng, RngCore};

/// What a mutant is: its tape, and the seed its streams' generators start
/// from past the tape's words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mutant {
    pub tape: DrawTape,
    pub stream_seed: u64,
    /// Which change made it.
    pub change: Change,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    Words,
    Cut,
    Splice,
    Runtime,
}

/// A mutant of `parent` (`other`: another tape of the corpus, for a
/// splice); `stream_seed`: the parent's.
pub fn mutate(parent: &DrawTape, stream_seed: u64, other: &DrawTape, rng: &mut SmallRng) -> Mutant {
    let mut tape = parent.clone();
    let change = match (rng.gen_range(0..4), tape.words()) {
        (_, 0) | (3, _) => Change::Runtime,
        (0, _) => Change::Words,
        (1, _) => Change::Cut,
        _ => Change::Splice,
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
        assert_eq!(seen.len(), 4, "{seen:?}");
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
