//! [`Shared`]: one part of the server (its tree, watch tables or session
//! table) shared copy-on-write between clones of the server, with its hash
//! computed when first asked for and kept until the part changes.
//!
//! The model checker clones the server for every successor, hashes every
//! successor, and most steps change one part of the server at most (a
//! dropped connection only its watches, a read only a watch). Cloning the
//! server is then three reference counts, a changed part is copied alone,
//! and hashing reuses the hashes of the parts that did not change. A
//! simulation owns its one server: writing through [`Shared`] there costs a
//! reference-count check, and nothing is hashed.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Fixed seeds: a part hashes the same in every process and on every run.
fn hash_of<T: Hash>(value: &T) -> u64 {
    ahash::RandomState::with_seeds(
        0x5eed_0000_5e4e_0001,
        0x5eed_0000_5e4e_0002,
        0x5eed_0000_5e4e_0003,
        0x5eed_0000_5e4e_0004,
    )
    .hash_one(value)
}

struct Inner<T> {
    value: T,
    /// The value's hash once computed, [`UNKNOWN`] before. An atomic, not
    /// a `OnceLock`: cloning a `OnceLock` goes through its `Once` (2% of
    /// the 3-client barrier's time, which copies a part for nearly every
    /// successor). Two threads that compute it at once store the same.
    hash: AtomicU64,
}

/// No hash computed yet. A value whose hash is this is kept as [`KNOWN_ZERO`].
const UNKNOWN: u64 = 0;
const KNOWN_ZERO: u64 = 1;

impl<T: Clone> Clone for Inner<T> {
    fn clone(&self) -> Self {
        Inner {
            value: self.value.clone(),
            hash: AtomicU64::new(self.hash.load(Ordering::Relaxed)),
        }
    }
}

/// A value shared copy-on-write: [`DerefMut`] copies it if another clone
/// shares it and forgets its hash. Equal values hash equal whatever their
/// history; equality compares values (or the pointer, when shared).
pub(crate) struct Shared<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Shared<T> {
    pub fn new(value: T) -> Self {
        Shared {
            inner: Arc::new(Inner {
                value,
                hash: AtomicU64::new(UNKNOWN),
            }),
        }
    }
}

impl<T: Hash> Shared<T> {
    /// The value's hash, computed once per change.
    fn hash_value(&self) -> u64 {
        match self.inner.hash.load(Ordering::Relaxed) {
            UNKNOWN => {
                let hash = match hash_of(&self.inner.value) {
                    UNKNOWN => KNOWN_ZERO,
                    hash => hash,
                };
                self.inner.hash.store(hash, Ordering::Relaxed);
                hash
            }
            hash => hash,
        }
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner.value
    }
}

impl<T: Clone> DerefMut for Shared<T> {
    fn deref_mut(&mut self) -> &mut T {
        let inner = Arc::make_mut(&mut self.inner);
        *inner.hash.get_mut() = UNKNOWN;
        &mut inner.value
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T: Hash> Hash for Shared<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash_value());
    }
}

impl<T: PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner) || self.inner.value == other.inner.value
    }
}

impl<T: Eq> Eq for Shared<T> {}

impl<T: fmt::Debug> fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.value.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash<T: Hash>(value: &T) -> u64 {
        hash_of(value)
    }

    #[test]
    fn a_write_copies_a_shared_value_and_forgets_its_hash() {
        let mut a = Shared::new(vec![1, 2]);
        let b = a.clone();
        let before = hash(&a);
        a.push(3);
        assert_eq!(*a, vec![1, 2, 3]);
        assert_eq!(*b, vec![1, 2]);
        assert_eq!(hash(&b), before);
        assert_ne!(hash(&a), before);
        assert_eq!(hash(&a), hash(&Shared::new(vec![1, 2, 3])));
        assert_eq!(a, Shared::new(vec![1, 2, 3]));
        assert_ne!(a, b);
    }

    #[test]
    fn equal_values_hash_equal_whatever_their_history() {
        let mut a = Shared::new(vec![1]);
        let _ = hash(&a);
        a.push(2);
        a.pop();
        assert_eq!(hash(&a), hash(&Shared::new(vec![1])));
    }
}
