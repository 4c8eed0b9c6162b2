//! A mutex on ZooKeeper in the shape of ZooKeeper's own `WriteLock`
//! recipe: every contender creates an ephemeral sequential node named
//! `x-<session id>-<sequence>` under the lock's directory; the lowest
//! sequence holds; the others each watch the node just below theirs.
//!
//! This file is plain application code against the real crate: it knows
//! nothing of zkcheck and builds without it.
//!
//! [`Mistakes`] keeps three of the original recipe's bugs behind flags:
//! - `sort_by_name`: the contenders are ordered by their whole name, so the
//!   session id decides before the sequence does. A contender whose session
//!   id sorts lower believes it is first while an earlier one holds: two
//!   holders.
//! - `blind_retry`: a create whose reply was lost is sent again without
//!   looking whether the first one was applied. The first node stays (the
//!   session lives), nobody owns it, and the contender waits on it for
//!   ever: it is its own predecessor.
//! - `release_once`: a delete whose request was lost is not retried; the
//!   application is told the lock is released while its node stays, and
//!   every other contender waits until the session ends.

use zookeeper_client::{Acls, Client, CreateMode, Error};

/// Which of the original recipe's bugs a [`Mutex`] keeps.
#[derive(Clone, Copy, Debug, Default)]
pub struct Mistakes {
    pub sort_by_name: bool,
    pub blind_retry: bool,
    pub release_once: bool,
}

/// One contention for the lock.
pub struct Mutex {
    client: Client,
    dir: String,
    /// Our node's name (in the directory), once created.
    node: Option<String>,
    mistakes: Mistakes,
}

impl Mutex {
    pub fn new(client: Client, dir: &str, mistakes: Mistakes) -> Mutex {
        Mutex {
            client,
            dir: dir.to_string(),
            node: None,
            mistakes,
        }
    }

    /// Waits until this contender holds the lock; returns its sequence
    /// number (a fencing token: every later holder's is higher).
    pub async fn acquire(&mut self) -> Result<i64, Error> {
        let me = self.create_node().await?;
        loop {
            let mut children = self.client.list_children(&self.dir).await?;
            match self.mistakes.sort_by_name {
                true => children.sort(),
                false => children.sort_by_key(|name| sequence(name)),
            }
            let Some(position) = children.iter().position(|name| *name == me) else {
                return Err(Error::NoNode); // our node is gone: the session expired
            };
            if position == 0 {
                return Ok(sequence(&me));
            }
            let predecessor = format!("{}/{}", self.dir, children[position - 1]);
            tracing::debug!(node = %me, "waiting for {predecessor} to go");
            let (stat, watcher) = self.client.check_and_watch_stat(&predecessor).await?;
            if stat.is_some() {
                watcher.changed().await;
            }
        }
    }

    /// Releases the lock (or gives up the contention): deletes our node,
    /// retrying a lost request.
    pub async fn release(&mut self) -> Result<(), Error> {
        let Some(name) = self.node.take() else {
            return Ok(());
        };
        let path = format!("{}/{name}", self.dir);
        loop {
            match self.client.delete(&path, None).await {
                Ok(()) | Err(Error::NoNode) | Err(Error::SessionExpired) => return Ok(()),
                // The bug: the node may still be there.
                Err(Error::ConnectionLoss) if self.mistakes.release_once => return Ok(()),
                Err(Error::ConnectionLoss) => continue,
                Err(error) => return Err(error),
            }
        }
    }

    /// Creates our node; after a lost reply, looks for it by our prefix
    /// (the session id: one node per session at a time) and creates it
    /// again only if the lost create was never applied.
    async fn create_node(&mut self) -> Result<String, Error> {
        let prefix = format!("x-{}-", self.client.session_id().0);
        let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let path = format!("{}/{prefix}", self.dir);
        loop {
            let name = match self.client.create(&path, b"", &options).await {
                Ok((_, sequence)) => Some(format!("{prefix}{sequence}")),
                // The bug: create again, whatever became of the first.
                Err(Error::ConnectionLoss) if self.mistakes.blind_retry => None,
                Err(Error::ConnectionLoss) => self.find_node(&prefix).await?,
                Err(error) => return Err(error),
            };
            if let Some(name) = name {
                self.node = Some(name.clone());
                return Ok(name);
            }
        }
    }

    /// Our node, if it exists; retried until the connection answers.
    async fn find_node(&self, prefix: &str) -> Result<Option<String>, Error> {
        loop {
            let found = match self.client.sync(&self.dir).await {
                Ok(()) => self.client.list_children(&self.dir).await,
                Err(error) => Err(error),
            };
            match found {
                Ok(children) => return Ok(children.into_iter().find(|n| n.starts_with(prefix))),
                Err(Error::ConnectionLoss) => continue,
                Err(error) => return Err(error),
            }
        }
    }
}

/// The sequence number a node's name ends with.
fn sequence(name: &str) -> i64 {
    let digits = name.rsplit('-').next().unwrap_or("");
    digits.parse().unwrap_or(i64::MAX)
}
