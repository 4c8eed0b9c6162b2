//! A leader latch that starts over after a connection loss: each candidate
//! owns an ephemeral sequential `DIR/<id>-cand-` node; the lowest leads,
//! the others watch the one before theirs. When a request fails with a
//! connection loss, the latch asks what became of its node.
//!
//! Plain application code against the `zookeeper-client` crate.
//!
//! The bug, behind `recreate_after_loss`: after a connection loss the
//! latch believes its node went with the connection and creates a new one.
//! A connection loss does not end the session: the old node stays, ahead
//! of the new one, and the candidate waits behind its own old node for ever
//! (and every later candidate with it). The fixed latch keeps its node
//! while it is there.

use zookeeper_client::{Acls, Client, CreateMode, Error};

pub struct SessionLatch {
    client: Client,
    dir: String,
    prefix: String,
    recreate_after_loss: bool,
    node: Option<String>,
}

impl SessionLatch {
    pub fn new(client: Client, dir: &str, id: &str, recreate_after_loss: bool) -> SessionLatch {
        SessionLatch {
            client,
            dir: dir.to_string(),
            prefix: format!("{id}-cand-"),
            recreate_after_loss,
            node: None,
        }
    }

    /// Waits until this candidate leads; returns its sequence number.
    pub async fn acquire(&mut self) -> Result<i64, Error> {
        self.create_node().await?;
        loop {
            match self.step().await {
                Ok(Some(token)) => return Ok(token),
                Ok(None) => {}
                Err(Error::ConnectionLoss) if self.recreate_after_loss => {
                    self.create_node().await?; // the bug: the old node stays
                }
                Err(Error::ConnectionLoss) => {
                    if self.find_node().await?.is_none() {
                        self.create_node().await?;
                    }
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// One look: leads (its token), or waits for the node before its own.
    async fn step(&self) -> Result<Option<i64>, Error> {
        let me = self.node.clone().unwrap_or_default();
        let mut children = self.client.list_children(&self.dir).await?;
        children.sort_by_key(|name| sequence(name));
        let Some(position) = children.iter().position(|name| *name == me) else {
            return Err(Error::NoNode); // the session expired
        };
        if position == 0 {
            return Ok(Some(sequence(&me)));
        }
        let before = format!("{}/{}", self.dir, children[position - 1]);
        let (stat, watcher) = self.client.check_and_watch_stat(&before).await?;
        if stat.is_some() {
            watcher.changed().await;
        }
        Ok(None)
    }

    /// Creates our node; after a lost reply, finds it by our prefix.
    async fn create_node(&mut self) -> Result<(), Error> {
        let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let path = format!("{}/{}", self.dir, self.prefix);
        loop {
            let name = match self.client.create(&path, b"", &options).await {
                Ok((_, sequence)) => Some(format!("{}{sequence}", self.prefix)),
                Err(Error::ConnectionLoss) => self.find_node().await?,
                Err(error) => return Err(error),
            };
            if name.is_some() {
                self.node = name;
                return Ok(());
            }
        }
    }

    /// Our newest node, if one exists; retried until the connection answers.
    async fn find_node(&self) -> Result<Option<String>, Error> {
        loop {
            match self.client.list_children(&self.dir).await {
                Ok(children) => {
                    let ours = children.into_iter().filter(|n| n.starts_with(&self.prefix));
                    return Ok(ours.max_by_key(|n| sequence(n)));
                }
                Err(Error::ConnectionLoss) => continue,
                Err(error) => return Err(error),
            }
        }
    }

    /// Steps down: deletes our node, retrying a lost request.
    pub async fn release(&mut self) -> Result<(), Error> {
        let Some(name) = self.node.take() else {
            return Ok(());
        };
        let path = format!("{}/{name}", self.dir);
        loop {
            match self.client.delete(&path, None).await {
                Ok(()) | Err(Error::NoNode) | Err(Error::SessionExpired) => return Ok(()),
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
