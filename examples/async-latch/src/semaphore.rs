//! A semaphore on ZooKeeper: at most `leases` holders at once. Every holder
//! owns an ephemeral sequential node under the semaphore's directory; the
//! `leases` lowest nodes hold.
//!
//! This file is plain application code against the real crate: it knows
//! nothing of zkcheck and builds without it.
//!
//! `count_then_create` keeps a check-then-act mistake: it counts the
//! directory's children and creates its node when it sees room. Counting
//! and creating are two requests, so clients that count the same
//! directory all see room and all create: more holders than leases.

use zookeeper_client::{Acls, Client, CreateMode, Error};

/// A semaphore's directory and its number of leases.
pub struct Semaphore {
    client: Client,
    dir: String,
    leases: usize,
    count_then_create: bool,
}

/// A lease held: its node, and its sequence number (a fencing token).
pub struct Lease {
    pub node: String,
    pub sequence: i64,
}

impl Semaphore {
    pub fn new(client: Client, dir: &str, leases: usize) -> Semaphore {
        Semaphore {
            client,
            dir: dir.to_string(),
            leases,
            count_then_create: false,
        }
    }

    /// The mistake (see the module's doc): count, then create.
    pub fn count_then_create(mut self) -> Semaphore {
        self.count_then_create = true;
        self
    }

    /// Waits for a lease.
    pub async fn acquire(&self) -> Result<Lease, Error> {
        if self.count_then_create {
            return self.acquire_when_counted().await;
        }
        let (mine, sequence) = self.create_node().await?;
        let name = &mine[self.dir.len() + 1..];
        loop {
            let (mut children, watcher) = self.client.list_and_watch_children(&self.dir).await?;
            // Sequence numbers have ten digits: the names sort as numbers.
            children.sort();
            match children.iter().position(|child| child == name) {
                Some(position) if position < self.leases => {
                    return Ok(Lease {
                        node: mine,
                        sequence,
                    })
                }
                Some(_) => {
                    watcher.changed().await;
                }
                None => return Err(Error::NoNode),
            }
        }
    }

    /// Gives a lease back.
    pub async fn release(&self, lease: Lease) -> Result<(), Error> {
        self.client.delete(&lease.node, None).await
    }

    /// The buggy acquire: creates its node once it has counted room.
    async fn acquire_when_counted(&self) -> Result<Lease, Error> {
        loop {
            let (children, watcher) = self.client.list_and_watch_children(&self.dir).await?;
            if children.len() < self.leases {
                let (node, sequence) = self.create_node().await?;
                return Ok(Lease { node, sequence });
            }
            watcher.changed().await;
        }
    }

    /// Creates this holder's node: its path and its sequence number.
    async fn create_node(&self) -> Result<(String, i64), Error> {
        let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let prefix = format!("{}/lease-", self.dir);
        let (_, sequence) = self.client.create(&prefix, b"", &options).await?;
        // The sequence prints as the server names it (ten digits).
        Ok((format!("{prefix}{sequence}"), sequence.into_i64()))
    }
}
