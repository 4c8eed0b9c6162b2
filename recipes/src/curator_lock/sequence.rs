//! Curator 2.x's order of lock nodes (faithful: the text after the marker,
//! compared as a string), next to the creation order the fixed variants use
//! instead, which lives in [`crate::sequence`] and is re-exported here for
//! the curator lock, the semaphore and the shared lock.
//!
//! The string order agrees with creation order only while suffixes have the
//! same width and sign: the node made after `2147483647` inside one multi
//! is `-2147483648` and sorts first, and once the counter sticks at
//! [`STUCK_SEQUENCE`] every later node shares the key, so getChildren's
//! order decides.

pub use crate::sequence::{
    creates_after, last_before, parse_sequence, sequence_after, STUCK_SEQUENCE,
};

/// Curator's `standardFixForSorting`: the text after the last `marker`
/// (`"lock-"`, `"lease-"`), or the whole name if the marker is missing.
/// Curator compares these keys as strings.
pub fn curator_sort_key<'a>(name: &'a str, marker: &str) -> &'a str {
    match name.rfind(marker) {
        Some(at) => &name[at + marker.len()..],
        None => name,
    }
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
}
