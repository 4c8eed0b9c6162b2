//! A campaign's coverage (`sweep --coverage`, `fuzz`): every abstract
//! state and step its runs reached ([`crate::world::coverage`]), each with
//! the lowest seed (or run number) that reached it, and from that the
//! curve of new states per block of seeds: where it flattens, more seeds
//! of the same world find little that is new. Seeds finish in any order on
//! several workers; the lowest seed makes the tally the same whatever the
//! order (and whichever shard ran it, so shards merge by taking the lowest
//! again).

use crate::world::Coverage;
use serde::{Deserialize, Serialize, Serializer};
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

/// What the abstract state keeps, for the summary line.
pub const ABSTRACTION: &str = "a state: the tree with sequence numbers by rank and owners by client, each client's connection, session, last call and requests in flight, not a recipe's own state; a client feature: one client's part with the tree as it sees it";

/// Each state (a 64-bit hash) with the lowest seed or run that reached
/// it: a hash map keyed by the hash itself (a sweep adds a million states
/// to it, where a B-tree cost a fifth of the sweep), written in key order,
/// so that a file is the same whatever order the runs came in.
pub type FirstReached = HashMap<u64, u64, BuildHasherDefault<KeyIsItsHash>>;

/// The hasher of [`FirstReached`]: its keys are uniform hashes already.
#[derive(Default)]
pub struct KeyIsItsHash(u64);

impl Hasher for KeyIsItsHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, key: u64) {
        self.0 = key;
    }
}

/// Writes a [`FirstReached`] in key order.
fn in_key_order<S: Serializer>(map: &FirstReached, serializer: S) -> Result<S::Ok, S::Error> {
    map.iter()
        .collect::<BTreeMap<&u64, &u64>>()
        .serialize(serializer)
}

/// Each state and step reached, with the lowest seed that reached it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoverageTally {
    #[serde(serialize_with = "in_key_order")]
    pub states: FirstReached,
    #[serde(serialize_with = "in_key_order")]
    pub transitions: FirstReached,
    /// Each client's feature (its own state with the tree as it sees it).
    #[serde(default, serialize_with = "in_key_order")]
    pub features: FirstReached,
    /// The states of the shared abstraction ([`crate::abstraction`]).
    #[serde(default, serialize_with = "in_key_order")]
    pub shared: FirstReached,
}

/// What a run added to a tally: the states and steps none before it
/// reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Added {
    pub states: usize,
    pub transitions: usize,
    pub features: usize,
    pub shared: usize,
}

/// One block of seeds on the curve: its first seed, and the states and
/// steps first reached in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CurveBlock {
    pub first_seed: u64,
    pub new_states: u64,
    pub new_transitions: u64,
}

impl CoverageTally {
    /// Adds run `seed`'s coverage; what it reached first.
    pub fn add(&mut self, seed: u64, run: &Coverage) -> Added {
        let lowest = |map: &mut FirstReached, key: u64| {
            let before = map.len();
            let first = map.entry(key).or_insert(seed);
            *first = (*first).min(seed);
            usize::from(map.len() > before)
        };
        Added {
            states: run
                .states
                .iter()
                .map(|&s| lowest(&mut self.states, s))
                .sum(),
            transitions: run
                .transitions
                .iter()
                .map(|&t| lowest(&mut self.transitions, t))
                .sum(),
            features: run
                .features
                .iter()
                .map(|&f| lowest(&mut self.features, f))
                .sum(),
            shared: run
                .shared
                .iter()
                .map(|&s| lowest(&mut self.shared, s))
                .sum(),
        }
    }

    /// Adds another tally (another shard's).
    pub fn merge(&mut self, other: &CoverageTally) {
        for (map, theirs) in [
            (&mut self.states, &other.states),
            (&mut self.transitions, &other.transitions),
            (&mut self.features, &other.features),
            (&mut self.shared, &other.shared),
        ] {
            for (&key, &seed) in theirs {
                let first = map.entry(key).or_insert(seed);
                *first = (*first).min(seed);
            }
        }
    }

    /// The curve over `seeds` seeds from `first`, in blocks of `block`.
    pub fn curve(&self, first: u64, seeds: u64, block: u64) -> Vec<CurveBlock> {
        assert!(block > 0, "a block of seeds has at least one");
        let blocks = seeds.div_ceil(block);
        let mut curve: Vec<CurveBlock> = (0..blocks)
            .map(|index| CurveBlock {
                first_seed: first + index * block,
                new_states: 0,
                new_transitions: 0,
            })
            .collect();
        let index = |seed: u64| usize::try_from((seed - first) / block).unwrap_or(usize::MAX);
        for &seed in self.states.values() {
            if let Some(block) = curve.get_mut(index(seed)) {
                block.new_states += 1;
            }
        }
        for &seed in self.transitions.values() {
            if let Some(block) = curve.get_mut(index(seed)) {
                block.new_transitions += 1;
            }
        }
        curve
    }
}

/// The block a curve over `seeds` seeds counts in: 1,000 seeds, or a
/// tenth of a shorter range (at least one).
pub fn block_for(seeds: u64) -> u64 {
    match seeds {
        10_000.. => 1_000,
        _ => seeds.div_ceil(10).max(1),
    }
}

/// The coverage lines of a sweep's summary.
/// `unit`: what the curve counts in blocks of (`seeds` for a sweep, `runs`
/// for a guided campaign).
pub fn summary_lines(
    tally: &CoverageTally,
    curve: &[CurveBlock],
    block: u64,
    unit: &str,
) -> Vec<String> {
    let news: Vec<String> = curve.iter().map(|b| b.new_states.to_string()).collect();
    let mut lines = vec![format!(
        "coverage: {} abstract states, {} steps between them, {} client features ({ABSTRACTION})",
        tally.states.len(),
        tally.transitions.len(),
        tally.features.len()
    )];
    lines.push(format!(
        "  new states per {block} {unit}: {}",
        news.join(", ")
    ));
    if let Some(last) = curve.last() {
        lines.push(format!(
            "  the last block ({unit} from {}): {} new states, {} new steps",
            last.first_seed, last.new_states, last.new_transitions
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(states: &[u64], transitions: &[u64]) -> Coverage {
        let mut coverage = Coverage::default();
        coverage.states.extend(states);
        coverage.transitions.extend(transitions);
        coverage
    }

    #[test]
    fn the_lowest_seed_counts_whatever_the_order() {
        let mut forward = CoverageTally::default();
        let added = forward.add(0, &run(&[1, 2], &[10]));
        assert_eq!((added.states, added.transitions), (2, 1));
        let added = forward.add(1, &run(&[2, 3], &[10, 11]));
        assert_eq!(
            (added.states, added.transitions),
            (1, 1),
            "only what is new"
        );
        let mut backward = CoverageTally::default();
        backward.add(1, &run(&[2, 3], &[10, 11]));
        backward.add(0, &run(&[1, 2], &[10]));
        assert_eq!(forward, backward);
        let curve = forward.curve(0, 2, 1);
        assert_eq!(forward.curve(0, 3, 2).len(), 2, "a last block cut short");
        let news: Vec<(u64, u64)> = curve
            .iter()
            .map(|b| (b.new_states, b.new_transitions))
            .collect();
        assert_eq!(news, vec![(2, 1), (1, 1)]);
    }

    #[test]
    fn shards_merge_to_the_whole() {
        let mut whole = CoverageTally::default();
        let (mut even, mut odd) = (CoverageTally::default(), CoverageTally::default());
        for seed in 0..6 {
            let coverage = run(&[seed % 3, 7], &[seed % 2]);
            whole.add(seed, &coverage);
            let _ = match seed % 2 {
                0 => even.add(seed, &coverage),
                _ => odd.add(seed, &coverage),
            };
        }
        odd.merge(&even);
        assert_eq!(odd, whole);
    }

    #[test]
    fn blocks_are_a_thousand_seeds_or_a_tenth() {
        assert_eq!(block_for(100_000), 1_000);
        assert_eq!(block_for(1_000), 100);
        assert_eq!(block_for(5), 1);
    }
}
