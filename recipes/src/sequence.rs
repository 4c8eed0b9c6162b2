//! Sequence suffixes of sequential znode names: parsing the number ZooKeeper
//! appends, and ordering nodes by creation. One implementation for every
//! recipe that orders by the suffix (the fixed variants, and the originals
//! whose code parses it the same way).
//!
//! ZooKeeper appends `%010d` of the parent's signed 32-bit counter to the
//! requested name: `lock-0000000004`, or `lock--2147483648` once the counter
//! wraps. ZooKeeper 3.8 wraps it only inside one multi; between requests it
//! sticks at `i32::MAX` ([`STUCK_SEQUENCE`]) and every later child gets that
//! number, so equal numbers say nothing about creation order. Creation order
//! across the wrap is serial number arithmetic (RFC 1982), exact while the
//! live nodes of one parent span fewer than 2^31 creates.
//!
//! The seeds' own, different parsings and orders stay with their recipes and
//! are named as the seed's: seed 000's `ZNodeName` (prefix before sequence,
//! `lock::ZNodeName::upstream_cmp`), seed 000's `DistributedQueue` and seed
//! 001's tutorial `Queue` (`queue::java_long_order`,
//! `queue::tutorial_min_child`), Curator 2.x's string order
//! (`curator_lock::sequence::curator_sort_key`).

use std::cmp::Ordering;

/// The number ZooKeeper 3.8 gives every child once a parent's counter is
/// used up.
pub const STUCK_SEQUENCE: i32 = i32::MAX;

/// Parses a sequence suffix as ZooKeeper writes it: digits, or a minus sign
/// and digits (no `+`, no blanks).
pub fn parse_sequence(suffix: &str) -> Option<i32> {
    let (negative, digits) = match suffix.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, suffix),
    };
    let magnitude = parse_decimal(digits, u64::from(i32::MAX.unsigned_abs()) + 1)?;
    let value = if negative {
        -(magnitude as i64)
    } else {
        magnitude as i64
    };
    i32::try_from(value).ok()
}

/// Parses ASCII decimal digits (at least one, nothing else) no larger than
/// `max`. One pass over the bytes: a lock scan parses every child's name.
pub fn parse_decimal(digits: &str, max: u64) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.bytes().try_fold(0u64, |value, byte| {
        let digit = byte.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        value
            .checked_mul(10)?
            .checked_add(u64::from(digit))
            .filter(|&v| v <= max)
    })
}

/// The sequence of a name made of `prefix` and a sequence suffix.
pub fn prefixed_sequence(name: &str, prefix: &str) -> Option<i32> {
    parse_sequence(name.strip_prefix(prefix)?)
}

/// The sequence after the last `marker` in `name` (names that carry an id
/// before the marker: `_c_7-lock-0000000004`).
pub fn sequence_after(name: &str, marker: &str) -> Option<i32> {
    parse_sequence(&name[name.rfind(marker)? + marker.len()..])
}

/// How many creates `other` was made after `own` (negative: before), across
/// the counter's wrap.
pub fn creates_after(own: i32, other: i32) -> i32 {
    other.wrapping_sub(own)
}

/// Orders two sequence numbers of one parent by creation, across the wrap
/// from `i32::MAX` to `i32::MIN`: `a` comes first when `b` was made less
/// than 2^31 creates after it.
pub fn serial_order(a: i32, b: i32) -> Ordering {
    creates_after(a, b).cmp(&0).reverse()
}

/// Among `candidates` (item, sequence), the one created last before `own`:
/// the predecessor to wait for. Equal numbers are not before.
pub fn last_before<T>(own: i32, candidates: impl IntoIterator<Item = (T, i32)>) -> Option<T> {
    candidates
        .into_iter()
        .map(|(item, sequence)| (creates_after(own, sequence), item))
        .filter(|(after, _)| *after < 0)
        .max_by_key(|(after, _)| *after)
        .map(|(_, item)| item)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_padded_and_wrapped_sequences() {
        assert_eq!(parse_sequence("0000000004"), Some(4));
        assert_eq!(parse_sequence("2147483647"), Some(i32::MAX));
        assert_eq!(parse_sequence("-2147483648"), Some(i32::MIN));
        assert_eq!(parse_sequence("-000000005"), Some(-5));
        assert_eq!(parse_sequence(""), None);
        assert_eq!(parse_sequence("-"), None);
        assert_eq!(parse_sequence("+5"), None);
        assert_eq!(parse_sequence("+12"), None);
        assert_eq!(parse_sequence("12a"), None);
        assert_eq!(sequence_after("_c_1-lock-0000000004", "lock-"), Some(4));
        assert_eq!(
            sequence_after("_c_1-lock--2147483648", "lock-"),
            Some(i32::MIN)
        );
        assert_eq!(sequence_after("_c_1-lock-", "lock-"), None);
        assert_eq!(sequence_after("nothing", "lock-"), None);
        assert_eq!(prefixed_sequence("qn-0000000010", "qn-"), Some(10));
        assert_eq!(
            prefixed_sequence("read--2147483648", "read-"),
            Some(i32::MIN)
        );
        assert_eq!(prefixed_sequence("xqn-0000000010", "qn-"), None);
        assert_eq!(prefixed_sequence("qn-x", "qn-"), None);
    }

    /// The one-pass parse agrees with the standard library's on every
    /// shape a suffix can take.
    #[test]
    fn one_pass_parse_agrees_with_str_parse() {
        fn reference(suffix: &str) -> Option<i32> {
            let digits = suffix.strip_prefix('-').unwrap_or(suffix);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            suffix.parse().ok()
        }
        let mut cases: Vec<String> = [
            "",
            "-",
            "--1",
            "+1",
            " 1",
            "1 ",
            "0",
            "-0",
            "00000000000000000000042",
            "2147483647",
            "2147483648",
            "-2147483648",
            "-2147483649",
            "4294967296",
            "99999999999999999999999",
            "-99999999999999999999999",
            "1a",
            "a1",
            "１",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for n in [0i64, 1, 9, 10, 99, 12345, i32::MAX as i64, i32::MIN as i64] {
            cases.push(format!("{n:010}"));
            cases.push(format!("{n}"));
            cases.push(format!("{}", n + 1));
            cases.push(format!("{}", n - 1));
        }
        for case in &cases {
            assert_eq!(parse_sequence(case), reference(case), "{case:?}");
        }
        assert_eq!(
            parse_decimal("18446744073709551615", u64::MAX),
            Some(u64::MAX)
        );
        assert_eq!(parse_decimal("18446744073709551616", u64::MAX), None);
    }

    #[test]
    fn serial_order_survives_wrap_around() {
        assert_eq!(serial_order(3, 4), Ordering::Less);
        assert_eq!(serial_order(4, 3), Ordering::Greater);
        assert_eq!(serial_order(7, 7), Ordering::Equal);
        assert_eq!(serial_order(i32::MAX, i32::MIN), Ordering::Less);
        assert_eq!(serial_order(i32::MIN, i32::MAX), Ordering::Greater);
        assert_eq!(serial_order(i32::MAX - 1, i32::MIN + 1), Ordering::Less);
        assert_eq!(creates_after(i32::MAX, i32::MIN), 1);
    }

    #[test]
    fn last_before_follows_creation_order_across_the_wrap() {
        let nodes = [
            ("a", i32::MAX - 1),
            ("b", i32::MAX),
            ("c", i32::MIN),
            ("d", i32::MIN + 1),
        ];
        assert_eq!(last_before(i32::MIN, nodes), Some("b"));
        assert_eq!(last_before(i32::MIN + 1, nodes), Some("c"));
        assert_eq!(last_before(i32::MAX - 1, nodes), None);
        assert_eq!(last_before(5, [("x", 3), ("y", 4), ("z", 9)]), Some("y"));
        assert_eq!(last_before(5, [("same", 5)]), None, "equal is not before");
    }
}
