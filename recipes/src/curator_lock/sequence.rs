//! Sequence suffixes of sequential node names, and the two ways to order by
//! them: Curator 2.x's string order (faithful) and creation order with
//! wrap-around (serial) arithmetic.
//!
//! ZooKeeper appends `%010d` of the parent's signed 32-bit counter:
//! `0000000004`. Between requests the counter sticks at `i32::MAX` (every
//! later child is `...2147483647`, see the server's module doc); only inside
//! one multi does it wrap to `-2147483648`. A node numbered
//! [`STUCK_SEQUENCE`] therefore cannot be ordered against its peers.
//! Shared by the curator lock, the semaphore and the shared lock.

/// The number ZooKeeper gives every child once a parent's counter is used up.
pub const STUCK_SEQUENCE: i32 = i32::MAX;

/// Curator's `standardFixForSorting`: the text after the last `marker`
/// (`"lock-"`, `"lease-"`), or the whole name if the marker is missing.
/// Curator compares these keys as strings.
pub fn curator_sort_key<'a>(name: &'a str, marker: &str) -> &'a str {
    match name.rfind(marker) {
        Some(at) => &name[at + marker.len()..],
        None => name,
    }
}

/// The sequence number after the last `marker`, if it is one.
pub fn sequence_after(name: &str, marker: &str) -> Option<i32> {
    parse_sequence(&name[name.rfind(marker)? + marker.len()..])
}

/// Parses a sequence suffix: digits, or a minus sign and digits.
pub fn parse_sequence(suffix: &str) -> Option<i32> {
    let digits = suffix.strip_prefix('-').unwrap_or(suffix);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    suffix.parse().ok()
}

/// How many creates `other` was made after `own` (negative: before), across
/// the counter's wrap (RFC 1982 serial arithmetic). Exact while the live
/// nodes of one parent span fewer than 2^31 creates, which makes it a total
/// order around `own`.
pub fn creates_after(own: i32, other: i32) -> i32 {
    other.wrapping_sub(own)
}

/// Among `candidates` (name, sequence), the one created last before `own`.
pub fn last_before<'a>(
    own: i32,
    candidates: impl IntoIterator<Item = (&'a str, i32)>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|(name, sequence)| (creates_after(own, sequence), name))
        .filter(|(after, _)| *after < 0)
        .max_by_key(|(after, _)| *after)
        .map(|(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curator_key_is_the_text_after_the_last_marker() {
        assert_eq!(
            curator_sort_key("_c_7_1-lock-0000000004", "lock-"),
            "0000000004"
        );
        assert_eq!(
            curator_sort_key("_c_7_1-lock--2147483648", "lock-"),
            "-2147483648"
        );
        assert_eq!(curator_sort_key("other", "lock-"), "other");
    }

    #[test]
    fn curator_string_order_breaks_at_the_wrap() {
        // Inside a multi, the node made after 2147483647 sorts first.
        assert!(
            curator_sort_key("x-lock--2147483648", "lock-")
                < curator_sort_key("x-lock-2147483647", "lock-")
        );
    }

    #[test]
    fn parses_padded_and_wrapped_sequences() {
        assert_eq!(sequence_after("_c_1-lock-0000000004", "lock-"), Some(4));
        assert_eq!(
            sequence_after("_c_1-lock--2147483648", "lock-"),
            Some(i32::MIN)
        );
        assert_eq!(sequence_after("_c_1-lock-", "lock-"), None);
        assert_eq!(sequence_after("nothing", "lock-"), None);
        assert_eq!(parse_sequence("-000000005"), Some(-5));
        assert_eq!(parse_sequence("+5"), None);
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
    }
}
