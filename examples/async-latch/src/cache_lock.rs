//! A lock whose contenders learn the queue from a [`ChildrenCache`]
//! instead of a watch on their predecessor: each creates an ephemeral
//! sequential node under the lock's directory and holds once its node has
//! the lowest sequence the cache knows. A node is named after its
//! contention (`<id>-lock-<sequence>`), so that a create whose reply was
//! lost is found again instead of made twice.
//!
//! This file is plain application code against the real crate: it knows
//! nothing of zkcheck and builds without it.
//!
//! With a cache that trusts its watch through a connection loss
//! ([`Staleness::Trusted`]), a holder's node deleted while a contender was
//! disconnected stays in that contender's cache: it waits for ever behind
//! a holder that left.

use crate::cache::{ChildrenCache, Staleness};
use zookeeper_client::{Acls, Client, CreateMode, Error};

/// One contention for the lock.
pub struct CacheLock {
    client: Client,
    dir: String,
    /// This contention's name (unique among the lock's contentions).
    id: String,
    staleness: Staleness,
    /// Our node's path, once created.
    node: Option<String>,
}

impl CacheLock {
    pub fn new(client: Client, dir: &str, id: &str, staleness: Staleness) -> CacheLock {
        CacheLock {
            client,
            dir: dir.to_string(),
            id: id.to_string(),
            staleness,
            node: None,
        }
    }

    /// Waits until this contender holds the lock; returns its sequence
    /// number (a fencing token: every later holder's is higher).
    pub async fn acquire(&mut self) -> Result<i64, Error> {
        let mut cache =
            ChildrenCache::start(self.client.clone(), &self.dir, self.staleness).await?;
        let name = self.create_node().await?;
        self.node = Some(format!("{}/{name}", self.dir));
        loop {
            let first = cache.children().iter().min_by_key(|child| sequence(child));
            match first {
                Some(first) if *first == name => return Ok(sequence(&name)),
                _ => cache.changed().await?,
            }
        }
    }

    /// Deletes our node, if we made one (retried while the connection is
    /// lost; gone already is released).
    pub async fn release(&mut self) -> Result<(), Error> {
        let Some(node) = self.node.take() else {
            return Ok(());
        };
        loop {
            match self.client.delete(&node, None).await {
                Ok(()) | Err(Error::NoNode) => return Ok(()),
                Err(Error::ConnectionLoss) => continue,
                Err(error) => return Err(error),
            }
        }
    }

    /// Creates our node; after a lost reply, looks for it before creating
    /// again. Returns its name.
    async fn create_node(&self) -> Result<String, Error> {
        let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let mine = format!("{}-lock-", self.id);
        let prefix = format!("{}/{mine}", self.dir);
        loop {
            match self.client.create(&prefix, b"", &options).await {
                // The sequence prints as the server names it (ten digits).
                Ok((_, sequence)) => return Ok(format!("{mine}{sequence}")),
                Err(Error::ConnectionLoss) => {}
                Err(error) => return Err(error),
            }
            let children = loop {
                match self.client.list_children(&self.dir).await {
                    Ok(children) => break children,
                    Err(Error::ConnectionLoss) => continue,
                    Err(error) => return Err(error),
                }
            };
            if let Some(made) = children.into_iter().find(|child| child.starts_with(&mine)) {
                return Ok(made);
            }
        }
    }
}

/// A node's sequence: its name's last ten digits.
fn sequence(name: &str) -> i64 {
    let digits = name.len().saturating_sub(10);
    name[digits..].parse().unwrap_or(i64::MAX)
}
