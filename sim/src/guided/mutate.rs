//! Another run near a recorded one: a change to its draw tape
//! ([`crate::world::draws`]). Any word is a legal draw, so every mutant is
//! a run of the same world; a stream cut short draws the rest from its
//! generator, seeded from a fresh stream seed, so the rest differs too.
//!
//! The changes (a campaign picks them by their success: [`super::campaign`]):
//! - **words**: one to four words anywhere on the tape take new values
//!   (a latency, a fault struck or not, a duration, a pick);
//! - **cut**: one stream ends at a word, and what it draws after comes
//!   from its generator (from there on, another timing, other faults);
//! - **splice**: one stream takes another tape's words from a word on;
//! - **runtime**: the runtime seed changes (madsim's task order, an
//!   unbiased `select!`), every word kept;
//! - **strike**: a request's fault draw (a word of the `faults` stream)
//!   becomes one that strikes, so a fault lands at a request where the
//!   parent had none (a random word strikes as rarely as the rates say).
//!   Aimed where the parent's run says its requests drew ([`Aim`]): each
//!   kind of request as likely (a lock's one create per turn as likely
//!   as its many reads), the request or its reply lost as likely; without
//!   an aim, a word of the stream; without the stream, words instead.

use crate::world::coverage::FaultSite;
use crate::world::draws::DrawTape;
use rand::rngs::SmallRng;
use rand::{Rng, RngCore};
use std::collections::BTreeSet;

/// The stream that decides, request by request, whether a fault strikes
/// (`FaultPlan::for_request`: a draw in [0, 1) below the loss rates).
const FAULTS: &str = "faults";

/// A strike's word: a draw below 0.06, so a request's fault strikes
/// whatever the scenario's loss rates (0.01-0.05 in the shipped ones;
/// below the first rate a request is lost, then its reply, else nothing).
const STRIKE_BELOW: u64 = (u64::MAX / 100) * 6;

/// Where a strike lands on a parent's tape: the run's request fault
/// draws ([`crate::world::Coverage::fault_sites`]) and the words that
/// strike there ([`crate::world::Coverage::loss_words`]).
#[derive(Clone, Debug, Default)]
pub struct Aim {
    pub sites: Vec<FaultSite>,
    pub loss_words: [u64; 2],
}

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
    mutate_by(parent, stream_seed, other, change, &Aim::default(), rng)
}

/// A mutant of `parent` by `change` (a tape of no words changes its
/// runtime seed; one without a `faults` stream its words instead of a
/// strike), a strike aimed by `aim`.
pub fn mutate_by(
    parent: &DrawTape,
    stream_seed: u64,
    other: &DrawTape,
    change: Change,
    aim: &Aim,
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
            match aimed_strike(words, aim, rng) {
                Some((index, word)) => words[index] = word,
                None => {
                    let index = rng.gen_range(0..words.len());
                    words[index] = rng.gen_range(0..STRIKE_BELOW);
                }
            }
        }
    }
    Mutant {
        tape,
        stream_seed,
        change,
    }
}

/// An aimed strike on the `faults` stream `words`: a site where nothing
/// struck, of a kind of request drawn first (each kind present as
/// likely), and a word that loses the request or its reply (each as
/// likely when the rates give both). None without such a site.
fn aimed_strike(words: &[u64], aim: &Aim, rng: &mut SmallRng) -> Option<(usize, u64)> {
    let [lose_request, lose_reply] = aim.loss_words;
    if lose_reply == 0 {
        return None;
    }
    let open: Vec<&FaultSite> = aim
        .sites
        .iter()
        .filter(|site| words.get(site.word).is_some_and(|&w| w >= lose_reply))
        .collect();
    if open.is_empty() {
        return None;
    }
    let kinds: BTreeSet<u64> = open.iter().map(|site| site.kind).collect();
    let kind = *kinds
        .iter()
        .nth(rng.gen_range(0..kinds.len()))
        .expect("a kind of an open site");
    let sites: Vec<&FaultSite> = open.into_iter().filter(|s| s.kind == kind).collect();
    let site = sites[rng.gen_range(0..sites.len())];
    let band = match lose_request {
        0 => 0..lose_reply,
        _ if lose_request == lose_reply || rng.gen_bool(0.5) => 0..lose_request,
        _ => lose_request..lose_reply,
    };
    Some((site.word, rng.gen_range(band)))
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
            let mutant = mutate_by(
                &parent,
                7,
                &parent,
                Change::Strike,
                &Aim::default(),
                &mut rng,
            );
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
        let mutant = mutate_by(
            &without,
            7,
            &without,
            Change::Strike,
            &Aim::default(),
            &mut rng,
        );
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

    #[test]
    fn an_aimed_strike_lands_on_each_kind_as_often_and_loses_request_or_reply() {
        let mut rng = SmallRng::seed_from_u64(3);
        let mut parent = tape();
        parent.streams.insert(FAULTS.into(), vec![u64::MAX; 10]);
        // Word 4 already strikes; kind 1 draws at words 0..=4 and 9, kind 2
        // only at word 7 (one create among many reads).
        parent.streams.get_mut(FAULTS).unwrap()[4] = 0;
        let site = |word, kind| FaultSite { word, kind };
        let lose = [1u64 << 60, 2u64 << 60];
        let aim = Aim {
            sites: vec![
                site(0, 1),
                site(1, 1),
                site(2, 1),
                site(3, 1),
                site(4, 1),
                site(9, 1),
                site(7, 2),
            ],
            loss_words: lose,
        };
        let (mut at_seven, mut requests, mut replies) = (0, 0, 0);
        for _ in 0..2_000 {
            let mutant = mutate_by(&parent, 7, &parent, Change::Strike, &aim, &mut rng);
            let faults = &mutant.tape.streams[FAULTS];
            let changed: Vec<usize> = (0..faults.len())
                .filter(|&i| faults[i] != parent.streams[FAULTS][i])
                .collect();
            assert_eq!(changed.len(), 1, "{faults:?}");
            let word = changed[0];
            assert!(
                [0, 1, 2, 3, 9, 7].contains(&word),
                "a site that did not strike: {word}"
            );
            at_seven += usize::from(word == 7);
            match faults[word] {
                w if w < lose[0] => requests += 1,
                w if w < lose[1] => replies += 1,
                w => panic!("{w} does not strike"),
            }
        }
        // Kind 2 is one site in seven but half the strikes.
        assert!((900..1_100).contains(&at_seven), "{at_seven}");
        assert!((900..1_100).contains(&requests), "{requests} {replies}");
        // Rates with no loss of a request: every strike loses a reply.
        let replies_only = Aim {
            loss_words: [0, lose[1]],
            ..aim
        };
        let mutant = mutate_by(&parent, 7, &parent, Change::Strike, &replies_only, &mut rng);
        let struck = mutant.tape.streams[FAULTS]
            .iter()
            .filter(|&&w| w < lose[1])
            .count();
        assert_eq!(struck, 2, "the new strike and word 4");
    }
}
