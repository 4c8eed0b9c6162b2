//! Seed ranges (`"A..B"`, B excluded, or one seed `"A"`), walked lazily:
//! a sweep over 10^11 seeds never holds a list of them. Every u64 is a
//! seed, `18446744073709551615` included.

use std::fmt;

/// A non-empty, inclusive range of seeds, optionally cut to one shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeedRange {
    pub first: u64,
    pub last: u64,
}

/// Shard `index` of `count`: the seeds whose offset from the range's first
/// seed is `index` modulo `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl SeedRange {
    /// One seed.
    pub fn single(seed: u64) -> SeedRange {
        SeedRange {
            first: seed,
            last: seed,
        }
    }

    /// `"A..B"` (B excluded, B > A) or `"A"`.
    pub fn parse(text: &str) -> Result<SeedRange, String> {
        let shown = super::error::clip(text);
        let number = |part: &str| {
            part.trim().parse::<u64>().map_err(|_| {
                format!("`{shown}` is not a seed range like `0..1000` (seeds are integers in 0..=18446744073709551615)")
            })
        };
        match text.split_once("..") {
            Some((a, b)) => {
                let (start, end) = (number(a)?, number(b)?);
                if end <= start {
                    return Err(format!(
                        "`{shown}` is empty (the end is excluded: `{start}..{}` runs one seed)",
                        start.saturating_add(1)
                    ));
                }
                Ok(SeedRange {
                    first: start,
                    last: end - 1,
                })
            }
            None => Ok(SeedRange::single(number(text)?)),
        }
    }

    /// How many seeds (up to 2^64).
    pub fn len(&self) -> u128 {
        u128::from(self.last - self.first) + 1
    }

    /// Never empty; here for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// How many seeds of `shard` the range holds.
    pub fn len_in(&self, shard: Option<Shard>) -> u128 {
        match shard {
            None => self.len(),
            Some(Shard { index, count }) => {
                let (len, index, count) = (self.len(), u128::from(index), u128::from(count));
                if index >= len {
                    0
                } else {
                    (len - index).div_ceil(count)
                }
            }
        }
    }

    /// The seeds of `shard` (all of them for `None`), in order, lazily.
    pub fn iter(&self, shard: Option<Shard>) -> impl Iterator<Item = u64> {
        let (index, step) = shard.map_or((0, 1), |s| (s.index, s.count));
        let first = self.first.checked_add(index).filter(|&s| s <= self.last);
        let last = self.last;
        std::iter::successors(first, move |&seed| {
            seed.checked_add(step).filter(|&next| next <= last)
        })
    }
}

impl fmt::Display for SeedRange {
    /// As written in a scenario; a range ending at u64::MAX is shown
    /// inclusive (`A..=18446744073709551615`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.first == self.last, self.last.checked_add(1)) {
            (true, _) => write!(f, "{}", self.first),
            (false, Some(end)) => write!(f, "{}..{end}", self.first),
            (false, None) => write!(f, "{}..={}", self.first, self.last),
        }
    }
}

impl Shard {
    /// `"K/N"` with K < N.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let bad = || format!("`{}`: expected K/N with K < N", super::error::clip(text));
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, count): (u64, u64) = (
            k.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_and_single_seeds_up_to_the_last_u64() {
        assert_eq!(
            SeedRange::parse("0..3")
                .unwrap()
                .iter(None)
                .collect::<Vec<_>>(),
            [0, 1, 2]
        );
        let last = SeedRange::parse("18446744073709551615").unwrap();
        assert_eq!(last.iter(None).collect::<Vec<_>>(), [u64::MAX]);
        assert_eq!(last.len(), 1);
        assert!(SeedRange::parse("5..5").unwrap_err().contains("empty"));
        assert!(SeedRange::parse("9..2").is_err());
        assert!(SeedRange::parse("18446744073709551616").is_err());
        assert!(SeedRange::parse("-1").is_err());
        assert_eq!(
            SeedRange::parse("0..18446744073709551615").unwrap().len(),
            u128::from(u64::MAX)
        );
    }

    #[test]
    fn shards_split_a_range_lazily() {
        let range = SeedRange::parse("10..20").unwrap();
        let shard = Shard::parse("1/3").unwrap();
        assert_eq!(range.iter(Some(shard)).collect::<Vec<_>>(), [11, 14, 17]);
        assert_eq!(range.len_in(Some(shard)), 3);
        let huge = SeedRange::parse("0..100000000000").unwrap();
        assert_eq!(huge.iter(None).nth(5), Some(5));
        let tail = SeedRange {
            first: u64::MAX - 2,
            last: u64::MAX,
        };
        assert_eq!(
            tail.iter(Some(Shard { index: 1, count: 2 }))
                .collect::<Vec<_>>(),
            [u64::MAX - 1]
        );
        assert_eq!(
            SeedRange::single(3).len_in(Some(Shard { index: 1, count: 2 })),
            0
        );
        assert!(Shard::parse("2/2").is_err() && Shard::parse("0/0").is_err());
    }
}
