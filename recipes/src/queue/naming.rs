//! How each queue variant orders the children it gets from getChildren
//! (which arrive in no particular order): the seed code's two ways, bugs
//! included ([`java_long_order`] for seed 000, [`tutorial_min_child`] for
//! seed 001), and the fixed one ([`fifo_order`], on [`crate::sequence`]).
//!
//! ZooKeeper appends the parent's sequence counter, a signed 32-bit integer
//! printed with `%010d`, to a sequential node's name. The counter does not
//! wrap between requests (ZooKeeper 3.8 keeps it at `i32::MAX`, so further
//! sequential creates collide with NodeExists), and every offer creates one
//! item per request, so sorting by the numeric suffix is FIFO.

use crate::sequence::prefixed_sequence;
use std::collections::BTreeMap;

/// A child name the seed code cannot parse.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[error("malformed child name {0:?}")]
pub struct NameError(pub String);

/// Seed 000's order, `DistributedQueue.orderedChildren`: names that do not start with
/// `prefix` or whose suffix is not a Java `Long` are skipped (logged as
/// "improper"); the rest go into a `TreeMap<Long, String>` keyed by the
/// suffix, so two names with the same numeric suffix (`qn-1`, `qn-01`) keep
/// only the one listed last.
pub fn java_long_order(names: &[String], prefix: &str) -> Vec<String> {
    let mut ordered = BTreeMap::new();
    for name in names {
        let Some(suffix) = name.strip_prefix(prefix) else {
            continue;
        };
        if let Ok(id) = suffix.parse::<i64>() {
            ordered.insert(id, name.clone());
        }
    }
    ordered.into_values().collect()
}

/// Seed 001's order, tutorial `Queue.consume`: every name's `substring(7)` (the part
/// after `element`) is parsed as a Java `Integer`, and the first name with
/// the smallest value wins. Any name that does not parse throws, so the whole
/// consume fails. `Ok(None)` for an empty list.
pub fn tutorial_min_child(names: &[String]) -> Result<Option<String>, NameError> {
    const ELEMENT_LEN: usize = "element".len();
    let mut min: Option<(i32, &String)> = None;
    for name in names {
        let value = name
            .get(ELEMENT_LEN..)
            .and_then(|suffix| suffix.parse::<i32>().ok())
            .ok_or_else(|| NameError(name.clone()))?;
        if min.is_none_or(|(smallest, _)| value < smallest) {
            min = Some((value, name));
        }
    }
    Ok(min.map(|(_, name)| name.clone()))
}

/// The fixed order: the names of the form `<prefix><sequence>` (others are
/// not items and are ignored), by sequence number, oldest first.
pub fn fifo_order(names: &[String], prefix: &str) -> Vec<String> {
    let mut items: Vec<(i32, &String)> = names
        .iter()
        .filter_map(|name| Some((prefixed_sequence(name, prefix)?, name)))
        .collect();
    items.sort();
    items.into_iter().map(|(_, name)| name.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn java_long_order_sorts_skips_and_overwrites() {
        let children = names(&["qn-0000000010", "x-1", "qn-0000000002", "qn-abc", "qn-2"]);
        assert_eq!(
            java_long_order(&children, "qn-"),
            names(&["qn-2", "qn-0000000010"])
        );
    }

    #[test]
    fn tutorial_min_child_takes_the_smallest_and_fails_on_foreign_names() {
        let children = names(&[
            "element0000000003",
            "element0000000001",
            "element0000000002",
        ]);
        assert_eq!(
            tutorial_min_child(&children),
            Ok(Some("element0000000001".to_string()))
        );
        assert_eq!(tutorial_min_child(&[]), Ok(None));
        let foreign = names(&["element0000000001", "lock"]);
        assert_eq!(
            tutorial_min_child(&foreign),
            Err(NameError("lock".to_string()))
        );
    }

    #[test]
    fn fifo_order_sorts_by_sequence_and_ignores_other_names() {
        let children = names(&[
            "qn-0000000010",
            "other",
            "qn-0000000002",
            "qn-x",
            "qn-0000000007",
        ]);
        assert_eq!(
            fifo_order(&children, "qn-"),
            names(&["qn-0000000002", "qn-0000000007", "qn-0000000010"])
        );
    }
}
