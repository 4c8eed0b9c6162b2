//! Seed 000's `ZNodeName` as upstream ZooKeeper shipped it before
//! ZOOKEEPER-2931: a lock node name split at its last `-` into a prefix and a
//! sequence number, ordered by the prefix FIRST and the sequence second.
//!
//! The blog's author prints a patched copy that compares sequences only and
//! explains why: with names `x-<sessionId>-<seq>` the upstream order puts a
//! smaller session id (as a string) first even when it arrived later (known
//! bug 1). The original lock keeps the upstream order on purpose; the fixed
//! lock orders by sequence only, with [`crate::sequence`].

use std::cmp::Ordering;

/// A znode name with its prefix and sequence (`-1` when there is none).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ZNodeName {
    name: String,
    prefix: String,
    sequence: i32,
}

impl ZNodeName {
    /// seed 000 `ZNodeName(String name)`: split at the last `-`; a suffix
    /// that is not an `int` leaves the sequence at -1 (the Java code logs the
    /// NumberFormatException and goes on).
    pub fn new(name: &str) -> ZNodeName {
        let (prefix, sequence) = match name.rfind('-') {
            Some(idx) => (&name[..idx], name[idx + 1..].parse::<i32>().unwrap_or(-1)),
            None => (name, -1),
        };
        ZNodeName {
            name: name.to_string(),
            prefix: prefix.to_string(),
            sequence,
        }
    }

    /// `getName()`: the name as given (a full path or a bare child name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `getPrefix()`: the text before the last `-`.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// `getZNodeName()`: the sequence number, or -1.
    pub fn sequence(&self) -> i32 {
        self.sequence
    }

    /// Upstream `compareTo`: prefix first (String.compareTo), then the
    /// sequence (`s1 - s2` in Java int arithmetic, so it can overflow); a
    /// name without sequence sorts after one with.
    pub fn upstream_cmp(&self, that: &ZNodeName) -> Ordering {
        let by_prefix = self.prefix.cmp(&that.prefix);
        if by_prefix != Ordering::Equal {
            return by_prefix;
        }
        match (self.sequence, that.sequence) {
            (-1, -1) => self.name.cmp(&that.name),
            (-1, _) => Ordering::Greater,
            (_, -1) => Ordering::Less,
            (s1, s2) => s1.wrapping_sub(s2).cmp(&0),
        }
    }
}

/// `new TreeSet<ZNodeName>()` filled with `names`: sorted by
/// [`ZNodeName::upstream_cmp`], names comparing equal kept once.
pub(crate) fn upstream_tree_set(names: impl IntoIterator<Item = ZNodeName>) -> Vec<ZNodeName> {
    let mut sorted: Vec<ZNodeName> = Vec::new();
    for name in names {
        if let Err(at) = sorted.binary_search_by(|probe| probe.upstream_cmp(&name)) {
            sorted.insert(at, name);
        }
    }
    sorted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_prefix_and_sequence() {
        let n = ZNodeName::new("/locks/x-100-0000000007");
        assert_eq!(n.prefix(), "/locks/x-100");
        assert_eq!(n.sequence(), 7);
        assert_eq!(ZNodeName::new("plain").sequence(), -1);
        assert_eq!(ZNodeName::new("x-1-abc").sequence(), -1);
        // A wrapped counter writes "-2147483648": the last '-' leaves
        // "2147483648", which is no int.
        assert_eq!(ZNodeName::new("x-1--2147483648").sequence(), -1);
    }

    #[test]
    fn upstream_order_puts_prefix_before_sequence() {
        let holder = ZNodeName::new("/locks/x-200-0000000000");
        let newcomer = ZNodeName::new("/locks/x-100-0000000001");
        assert_eq!(
            newcomer.upstream_cmp(&holder),
            Ordering::Less,
            "the smaller session id wins"
        );
        let sorted = upstream_tree_set([holder.clone(), newcomer.clone()]);
        assert_eq!(sorted, vec![newcomer, holder]);
    }

    #[test]
    fn bare_name_sorts_after_every_full_path() {
        // '/' < 'x': a bare id compares greater than any full path.
        let bare = ZNodeName::new("x-100-0000000000");
        let full = ZNodeName::new("/locks/x-900-0000000009");
        assert_eq!(full.upstream_cmp(&bare), Ordering::Less);
    }
}
