//! The runtime seeds an exploration runs its world under.
//!
//! A choice string does not decide everything in a run: the madsim seed
//! does the rest (the runtime's choice among a client's ready tasks, the
//! branch a `tokio::select!` without `biased;` tries first, a `HashMap`'s
//! keys, and the streams the explorer does not enumerate: getChildren
//! order, session ids, reconnect and new-session delays). An exploration
//! runs its whole search once per seed of a [`RuntimeSeeds`] range, so a
//! verdict names the seeds it holds under (one by default, seed 0). The
//! seeds are a sample of the runtime's choices, not an enumeration of
//! them.

use std::fmt;
use std::ops::Range;

/// Most runtime seeds one exploration takes (each is a whole search).
pub const MAX_RUNTIME_SEEDS: u64 = 1_000;

/// Consecutive runtime seeds: `first`, `first + 1`, ..., `count` of them
/// (at least one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuntimeSeeds {
    pub first: u64,
    pub count: u64,
}

impl Default for RuntimeSeeds {
    /// Seed 0 alone, as every exploration ran before the range existed.
    fn default() -> RuntimeSeeds {
        RuntimeSeeds { first: 0, count: 1 }
    }
}

impl RuntimeSeeds {
    /// One seed.
    pub fn one(seed: u64) -> RuntimeSeeds {
        RuntimeSeeds {
            first: seed,
            count: 1,
        }
    }

    /// `S` (one seed) or `LO..HI` (HI excluded, as a sweep's `--seeds`).
    pub fn parse(text: &str) -> Result<RuntimeSeeds, String> {
        let number = |part: &str| {
            part.trim().parse::<u64>().map_err(|_| {
                format!(
                    "`{}`: give a seed S or a range LO..HI (HI excluded), e.g. 0..8",
                    text.trim()
                )
            })
        };
        let seeds = match text.split_once("..") {
            None => RuntimeSeeds::one(number(text)?),
            Some((low, high)) => {
                let (low, high) = (number(low)?, number(high)?);
                if high <= low {
                    return Err(format!(
                        "`{}`: the range is empty (HI is excluded)",
                        text.trim()
                    ));
                }
                RuntimeSeeds {
                    first: low,
                    count: high - low,
                }
            }
        };
        if seeds.count > MAX_RUNTIME_SEEDS {
            return Err(format!(
                "`{}`: {} seeds; at most {MAX_RUNTIME_SEEDS} (each is a whole search)",
                text.trim(),
                seeds.count
            ));
        }
        Ok(seeds)
    }

    /// The seeds, in order.
    pub fn range(self) -> Range<u64> {
        self.first..self.first.saturating_add(self.count)
    }

    /// The seed of run `run` (0-based) of a sampling that goes round them.
    pub fn of_run(self, run: u64) -> u64 {
        self.first.saturating_add(run % self.count)
    }

    pub fn is_one(self) -> bool {
        self.count == 1
    }
}

impl fmt::Display for RuntimeSeeds {
    /// `7` for one seed, `0..8` for several (as [`RuntimeSeeds::parse`]
    /// reads them).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.is_one() {
            true => write!(f, "{}", self.first),
            false => write!(f, "{}..{}", self.first, self.range().end),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_seed_or_a_range_and_writes_them_back() {
        assert_eq!(RuntimeSeeds::parse("7").unwrap(), RuntimeSeeds::one(7));
        let range = RuntimeSeeds::parse("2..5").unwrap();
        assert_eq!(range.range().collect::<Vec<_>>(), vec![2, 3, 4]);
        assert_eq!(range.to_string(), "2..5");
        assert_eq!(RuntimeSeeds::one(7).to_string(), "7");
        assert_eq!(range.of_run(4), 3);
    }

    #[test]
    fn refuses_an_empty_a_huge_or_a_malformed_range() {
        for bad in ["5..5", "6..2", "0..1001", "x", "1..y", ""] {
            assert!(RuntimeSeeds::parse(bad).is_err(), "{bad}");
        }
    }
}
