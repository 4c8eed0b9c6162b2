//! The set of fingerprints a search has visited, shared by its threads.
//!
//! Many shards, each a plain hash set behind its own lock: with two threads
//! and 256 shards the threads rarely want the same lock at once, and a
//! lock's cache line rarely moves between the cores (stateright's DashSet
//! has eight shards, whose locks the two threads took from each other for
//! nearly every generated state).
//!
//! Tried and dropped: one lock-free table of atomic slots (linear probing,
//! doubled between blocks of work). Its inserts were cheaper while it was
//! small, but the 3-client barrier took 167 s instead of 145 s, and 176 s
//! with a lower fill limit: probing one large table of 8-byte slots missed
//! the cache and the TLB more than a hash set's one-byte tags do.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Mutex, PoisonError};

/// log2 of the number of shards.
const SHARD_BITS: u32 = 8;

/// One shard: fingerprints hashed as themselves.
type Shard = Mutex<HashSet<u64, BuildHasherDefault<Identity>>>;

/// Fingerprints already seen.
pub struct Visited {
    shards: Box<[Shard]>,
}

impl Visited {
    pub fn new() -> Visited {
        Visited {
            shards: (0..1 << SHARD_BITS).map(|_| Shard::default()).collect(),
        }
    }

    /// Adds `fingerprint`; false when it was there already.
    pub fn insert(&self, fingerprint: u64) -> bool {
        self.shards[shard(fingerprint)]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(fingerprint)
    }

    /// How many fingerprints the set holds.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| shard.lock().unwrap_or_else(PoisonError::into_inner).len())
            .sum()
    }
}

/// The shard of a fingerprint: the bits just below the top seven, which
/// the hash set inside a shard uses as its tags (and its low bits for the
/// bucket), so no bit does two jobs.
fn shard(fingerprint: u64) -> usize {
    (fingerprint >> (64 - 7 - SHARD_BITS)) as usize & ((1 << SHARD_BITS) - 1)
}

/// A fingerprint is already a uniform hash: a set of them hashes nothing.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn write(&mut self, _bytes: &[u8]) {
        unreachable!("only u64 fingerprints are hashed")
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` distinct, well-spread fingerprints.
    fn fingerprints(count: u64) -> Vec<u64> {
        (0..count)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect()
    }

    #[test]
    fn a_fingerprint_is_new_once() {
        let visited = Visited::new();
        let fingerprints = fingerprints(100_000);
        assert!(fingerprints.iter().all(|f| visited.insert(*f)));
        assert!(fingerprints.iter().all(|f| !visited.insert(*f)));
        assert_eq!(visited.len(), fingerprints.len());
    }

    #[test]
    fn threads_agree_on_which_insert_was_first() {
        let visited = Visited::new();
        let fingerprints = fingerprints(200_000);
        let firsts: usize = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..2)
                .map(|_| {
                    scope.spawn(|| fingerprints.iter().filter(|f| visited.insert(**f)).count())
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(firsts, fingerprints.len());
    }

    #[test]
    fn shards_cover_every_index() {
        let mut seen = vec![false; 1 << SHARD_BITS];
        for top in 0..1u64 << (7 + SHARD_BITS) {
            seen[shard(top << (64 - 7 - SHARD_BITS))] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }
}
