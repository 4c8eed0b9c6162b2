//! The text of a [`Path`](super::Path): up to [`INLINE`] bytes kept in
//! place, a longer text shared behind an `Arc<str>`.
//!
//! The model checker clones every path of every state it generates, on two
//! threads. Cloning or dropping a shared `Arc` is an atomic operation on a
//! count every clone shares, and the hot paths (a recipe's root, its
//! nodes) are in nearly every state, so the two cores took turns owning
//! those counts: a tenth of the 3-client barrier's time. A short path is
//! copied instead, which no other thread sees.

use std::sync::Arc;

/// The longest text kept in place: a `PathText` is then 32 bytes.
const INLINE: usize = 30;

#[derive(Clone)]
pub(crate) enum PathText {
    Inline { len: u8, bytes: [u8; INLINE] },
    Shared(Arc<str>),
}

impl PathText {
    pub(crate) fn new(text: &str) -> PathText {
        match u8::try_from(text.len()) {
            Ok(len) if text.len() <= INLINE => {
                let mut bytes = [0; INLINE];
                bytes[..text.len()].copy_from_slice(text.as_bytes());
                PathText::Inline { len, bytes }
            }
            _ => PathText::Shared(Arc::from(text)),
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        match self {
            PathText::Inline { len, bytes } => {
                let bytes = &bytes[..usize::from(*len)];
                // SAFETY: `bytes` is a copy of a whole `&str` (`new` is the
                // only constructor of `Inline`, and its fields are never
                // written afterwards), so it is valid UTF-8.
                unsafe { std::str::from_utf8_unchecked(bytes) }
            }
            PathText::Shared(text) => text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_texts_are_inline_and_long_ones_shared() {
        for text in ["/", "/a/b", "/barrier/m-0000000000000001", &"/é".repeat(10)] {
            let stored = PathText::new(text);
            assert_eq!(stored.as_str(), text);
            let inline = matches!(stored, PathText::Inline { .. });
            assert_eq!(inline, text.len() <= INLINE, "{text}");
        }
        assert_eq!(std::mem::size_of::<PathText>(), 32);
    }
}
