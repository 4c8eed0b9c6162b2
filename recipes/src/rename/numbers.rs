//! The zxids and sequence numbers a value holds ([`Numbers`]), as a
//! collecting renaming gathers them, and the test that they are already
//! their own ranks ([`Numbers::are_dense`]); and the numbers a renaming
//! has seen, sorted into ranks ([`Ranked`]).

use crate::zk::Zxid;
use std::borrow::Borrow;

/// The zxids and sequence numbers a value holds, as a collecting
/// [`Renaming`](super::Renaming) sees them
/// ([`Renaming::collected`](super::Renaming::collected)): what the rank
/// abstraction ranks. A model collects them once per part of a state and
/// merges them per state ([`Renaming::collect`](super::Renaming::collect)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Numbers {
    /// Sorted, without repeats.
    pub(super) zxids: Vec<Zxid>,
    /// By parent (sorted by parent); each parent's numbers sorted, without
    /// repeats.
    pub(super) sequences: Vec<(String, Vec<i32>)>,
    /// `zxids` as a set of bits, for [`Numbers::are_dense`].
    zxid_bits: Bits,
    /// Each parent's sequence numbers as a set of bits, in the order of
    /// `sequences`.
    sequence_bits: Vec<Bits>,
}

impl Numbers {
    pub(super) fn new(zxids: Vec<Zxid>, sequences: Vec<(String, Vec<i32>)>) -> Numbers {
        Numbers {
            zxid_bits: Bits::of(&zxids),
            sequence_bits: sequences
                .iter()
                .map(|(_, values)| Bits::of(values))
                .collect(),
            zxids,
            sequences,
        }
    }

    /// The bits of the sequence numbers under `parent`, if there are any.
    fn sequence_bits_of(&self, parent: &str) -> Option<&Bits> {
        let at = self.sequences.iter().position(|(p, _)| p == parent)?;
        Some(&self.sequence_bits[at])
    }

    /// True when the numbers of `parts` together are already their own
    /// ranks: the zxids, with 0, are 0, 1, 2, ... up to the highest, and so
    /// are each parent's sequence numbers. (Numbers from 256 on
    /// are answered `false`, which is always safe: they are then ranked.)
    /// Each part brings its numbers as sets of bits, so this is a few
    /// unions of words, whatever the parts hold.
    pub fn are_dense<P: Borrow<Numbers>>(parts: &[P]) -> bool {
        let mut zxids = Bits::default();
        for part in parts {
            zxids.union(&part.borrow().zxid_bits);
        }
        if !zxids.is_dense() {
            return false;
        }
        // Each parent once, at the first part that has it.
        parts.iter().enumerate().all(|(at, part)| {
            let part = part.borrow();
            part.sequences
                .iter()
                .zip(&part.sequence_bits)
                .all(|((parent, _), bits)| {
                    parent_is_dense(parent, bits, &parts[..at], &parts[at + 1..])
                })
        })
    }
}

/// True when `parent`'s sequence numbers are dense over all parts: `bits`
/// from the first part that has the parent, `earlier` and `later` the
/// parts before and after it (judged already when an earlier part has it).
fn parent_is_dense<P: Borrow<Numbers>>(
    parent: &str,
    bits: &Bits,
    earlier: &[P],
    later: &[P],
) -> bool {
    if earlier
        .iter()
        .any(|part| part.borrow().sequence_bits_of(parent).is_some())
    {
        return true;
    }
    let mut union = bits.clone();
    for part in later {
        if let Some(bits) = part.borrow().sequence_bits_of(parent) {
            union.union(bits);
        }
    }
    union.is_dense()
}

/// A set of numbers below [`DENSE_BITS`], or the mark that a number was
/// outside them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Bits {
    words: [u64; DENSE_BITS / 64],
    out_of_range: bool,
}

impl Bits {
    /// The set of `values` (below 0 or from [`DENSE_BITS`] on: out of range).
    fn of<T: Copy>(values: &[T]) -> Bits
    where
        u64: TryFrom<T>,
    {
        let mut bits = Bits::default();
        for value in values {
            match u64::try_from(*value)
                .ok()
                .filter(|at| *at < DENSE_BITS as u64)
            {
                Some(at) => bits.words[at as usize / 64] |= 1 << (at % 64),
                None => bits.out_of_range = true,
            }
        }
        bits
    }

    fn union(&mut self, other: &Bits) {
        for (word, other) in self.words.iter_mut().zip(&other.words) {
            *word |= other;
        }
        self.out_of_range |= other.out_of_range;
    }

    /// True when the set, with 0, is 0, 1, 2, ... up to its highest.
    fn is_dense(&self) -> bool {
        if self.out_of_range {
            return false;
        }
        let mut words = self.words;
        words[0] |= 1;
        let top = words.iter().rposition(|word| *word != 0).expect("0 is in");
        let highest = top as u32 * 64 + 63 - words[top].leading_zeros();
        let count: u32 = words[..=top].iter().map(|word| word.count_ones()).sum();
        count == highest + 1
    }
}

/// The values [`Numbers::are_dense`] can judge dense (larger ones are ranked).
pub(super) const DENSE_BITS: usize = 256;

/// Numbers seen while collecting (in any order, repeated), then sorted
/// once: a number's rank is its place counted from 0's (0 is always there,
/// and stays 0).
#[derive(Clone, Debug, Default)]
pub(super) struct Ranked<T> {
    pub(super) values: Vec<T>,
    /// Where 0 is, once ranked.
    zero: usize,
}

impl<T: Copy + Ord + Default + TryFrom<i64>> Ranked<T> {
    pub(super) fn rank(&mut self) {
        self.values.push(T::default());
        self.values.sort_unstable();
        self.values.dedup();
        self.zero = self
            .values
            .binary_search(&T::default())
            .expect("0 was pushed");
    }

    pub(super) fn rank_of(&self, value: T) -> Option<T> {
        let at = self.values.binary_search(&value).ok()?;
        T::try_from(at as i64 - self.zero as i64).ok()
    }

    /// Every value is its own rank: the values are 0, 1, 2, ... (ranked).
    pub(super) fn is_identity(&self) -> bool {
        self.zero == 0
            && self
                .values
                .iter()
                .enumerate()
                .all(|(at, value)| T::try_from(at as i64).is_ok_and(|at| at == *value))
    }

    /// The values seen, sorted, each once.
    pub(super) fn seen(&self) -> Vec<T> {
        let mut seen = self.values.clone();
        seen.sort_unstable();
        seen.dedup();
        seen
    }
}
