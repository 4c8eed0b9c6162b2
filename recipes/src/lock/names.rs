//! Lock node names `x-<id>-<sequence>` for the fixed lock: parsing, and the
//! predecessor by sequence number only (creation order, wrap-aware; see
//! [`crate::sequence`]).
//!
//! `<id>` is a decimal u64 (the fixed variant's unique id; the original puts
//! its session id there, so both parse). `<sequence>` is ZooKeeper's `%010d`
//! of the parent's signed 32-bit counter, `-2147483648` after it wraps.

use crate::rename::Renaming;
use crate::sequence::{last_before, parse_decimal, parse_sequence};

/// The prefix a contender with `id` gives its node; the server appends the sequence.
pub fn node_prefix(id: u64) -> String {
    format!("x-{id}-")
}

/// A lock node name (or a create's prefix `x-<id>-`) under `parent` with
/// its id renamed by `id` and its sequence ranked; other names are kept.
pub fn rename_lock_node(
    r: &mut Renaming,
    parent: &str,
    name: &str,
    id: impl Fn(&Renaming, u64) -> u64,
) -> String {
    let Some((owner, sequence)) = name
        .strip_prefix("x-")
        .and_then(|rest| rest.split_once('-'))
    else {
        return name.to_owned();
    };
    let Some(owner) = owner
        .parse::<u64>()
        .ok()
        .filter(|_| owner.bytes().all(|b| b.is_ascii_digit()))
    else {
        return name.to_owned();
    };
    let renamed_owner = id(r, owner);
    if renamed_owner == owner && !r.ranks_sequences() {
        return name.to_owned();
    }
    let mut renamed = String::with_capacity(name.len() + 2);
    renamed.push_str("x-");
    crate::rename::push_decimal(&mut renamed, renamed_owner);
    renamed.push('-');
    let at = renamed.len();
    renamed.push_str(sequence);
    if sequence.is_empty() || !r.ranks_sequences() {
        return renamed;
    }
    r.sequence_suffix(parent, &renamed, at)
}

/// A parsed lock node name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LockNodeName {
    /// The id between `x-` and the sequence.
    pub owner: u64,
    pub sequence: i32,
}

/// Parses `x-<id>-<sequence>`; `None` for any other child name.
pub fn parse_lock_node(name: &str) -> Option<LockNodeName> {
    let rest = name.strip_prefix("x-")?;
    let (owner, sequence) = rest.split_once('-')?;
    Some(LockNodeName {
        owner: parse_decimal(owner, u64::MAX)?,
        sequence: parse_sequence(sequence)?,
    })
}

/// The lock nodes among `children`, each with its sequence number (other
/// names are left out). Each name is parsed once.
pub fn lock_nodes<'a>(children: impl IntoIterator<Item = &'a String>) -> Vec<(&'a String, i32)> {
    children
        .into_iter()
        .filter_map(|child| Some((child, parse_lock_node(child)?.sequence)))
        .collect()
}

/// The lock node that comes immediately before `own` in sequence order, if
/// any: the one to watch.
pub fn predecessor<'a>(own: i32, lock_nodes: &[(&'a String, i32)]) -> Option<&'a String> {
    last_before(own, lock_nodes.iter().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_lock_nodes_only() {
        assert_eq!(
            parse_lock_node("x-42-0000000007"),
            Some(LockNodeName {
                owner: 42,
                sequence: 7
            })
        );
        assert_eq!(
            parse_lock_node("x-42--2147483648"),
            Some(LockNodeName {
                owner: 42,
                sequence: i32::MIN
            })
        );
        assert_eq!(parse_lock_node("x--0000000007"), None);
        assert_eq!(parse_lock_node("x-4a-0000000007"), None);
        assert_eq!(parse_lock_node("lock-0000000007"), None);
        assert_eq!(parse_lock_node("x-42-"), None);
        assert_eq!(
            parse_lock_node(&format!("{}0000000003", node_prefix(9))),
            Some(LockNodeName {
                owner: 9,
                sequence: 3
            })
        );
    }

    #[test]
    fn predecessor_is_the_closest_older_node() {
        let children = names(&[
            "x-5-0000000009",
            "x-1-0000000002",
            "x-9-0000000004",
            "other",
        ]);
        assert_eq!(
            predecessor(9, &lock_nodes(&children)).map(String::as_str),
            Some("x-9-0000000004")
        );
        assert_eq!(predecessor(2, &lock_nodes(&children)), None);
        assert_eq!(
            predecessor(4, &lock_nodes(&children)).map(String::as_str),
            Some("x-1-0000000002")
        );
    }

    #[test]
    fn predecessor_survives_counter_wrap() {
        let children = names(&["x-1-2147483646", "x-2-2147483647", "x-3--2147483648"]);
        assert_eq!(
            predecessor(i32::MIN, &lock_nodes(&children)).map(String::as_str),
            Some("x-2-2147483647")
        );
        assert_eq!(predecessor(i32::MAX - 1, &lock_nodes(&children)), None);
    }
}
