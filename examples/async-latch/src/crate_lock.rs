//! A mutex from the `zookeeper-client` crate's own lock (`Client::lock`
//! with Curator's prefix: `{dir}/_c_{uuid}-lock-{sequence}`): the crate
//! creates the contender's node, finds it again after a lost create reply,
//! waits on its predecessor, and deletes the node in the background when
//! the `LockClient` (or the unfinished contention) is dropped.
//!
//! This file is plain application code against the real crate: it knows
//! nothing of zkcheck and builds without it.
//!
//! [`CrateLock::acquire_unless`] gives a contention up by dropping it
//! (when a timer fires, say), which the crate documents as cancellation
//! safe. It is not quite: in zookeeper-client 0.11.2 a contention dropped
//! while its create's reply is still awaited has its node deleted in the
//! background by the node's bare name (no directory), which is not a valid
//! path; the delete fails, the error is dropped and the node stays for as
//! long as the session lives, first in line, so every later contender
//! waits behind it.

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::task::Poll;
use zookeeper_client::{Acls, Client, Error, LockClient, LockPrefix};

/// One application's handle on the lock.
pub struct CrateLock {
    client: Client,
    dir: String,
}

/// Why a contention ended without the lock.
#[derive(Debug)]
pub enum NotAcquired {
    /// The caller gave it up (its `give_up` future completed first).
    GaveUp,
    /// The crate's error.
    Failed(Error),
}

impl CrateLock {
    pub fn new(client: Client, dir: &str) -> CrateLock {
        CrateLock {
            client,
            dir: dir.to_string(),
        }
    }

    /// Waits until this contender holds the lock. Dropping the returned
    /// guard releases it (the crate deletes the node in the background).
    pub async fn acquire(&self) -> Result<LockClient<'_>, NotAcquired> {
        self.acquire_unless(std::future::pending()).await
    }

    /// As [`CrateLock::acquire`], but the contention is given up (dropped)
    /// as soon as `give_up` completes first, e.g.
    /// `tokio::time::sleep(patience)`.
    pub async fn acquire_unless(
        &self,
        give_up: impl Future<Output = ()>,
    ) -> Result<LockClient<'_>, NotAcquired> {
        let prefix = LockPrefix::new_curator(&self.dir, "lock-").map_err(NotAcquired::Failed)?;
        let mut contention = pin!(self.client.lock(prefix, b"", Acls::anyone_all()));
        let mut give_up = pin!(give_up);
        poll_fn(|cx| {
            if let Poll::Ready(held) = contention.as_mut().poll(cx) {
                return Poll::Ready(held.map_err(NotAcquired::Failed));
            }
            give_up.as_mut().poll(cx).map(|()| Err(NotAcquired::GaveUp))
        })
        .await
    }
}

/// The holder's fencing token: its node's sequence number (every later
/// holder's is higher).
pub fn token(lock: &LockClient<'_>) -> i64 {
    let path = lock.lock_path();
    let digits = &path[path.len().saturating_sub(10)..];
    digits
        .parse()
        .expect("a sequential node ends in ten digits")
}
