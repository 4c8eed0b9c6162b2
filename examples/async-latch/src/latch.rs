//! A leader latch on ZooKeeper, written the way the `zookeeper-client`
//! crate's documentation writes one: every candidate creates an ephemeral
//! sequential node under the latch's directory; the lowest node leads; the
//! others each watch the node just below theirs.
//!
//! This file is plain application code against the real crate: it knows
//! nothing of zkcheck and builds without it.
//!
//! `buggy` keeps a mistake newcomers make: when the predecessor is already
//! gone by the time `check_and_watch_stat` looks (it released between our
//! `list_children` and our check), the code waits on the watch anyway. The
//! watch only fires if that node is created again, which never happens:
//! the candidate sleeps forever.
//!
//! `keep_leading_while_disconnected` keeps another: a leader that stops
//! only when its session is *known* gone (`Expired`, `Closed`), not when
//! it is in doubt (`Disconnected`). Cut off from the servers for longer than
//! its session, it goes on leading while the servers have expired its
//! session, deleted its node and let the next candidate lead.

use zookeeper_client::{Acls, Client, CreateMode, Error, SessionState};

/// One candidacy.
pub struct LeaderLatch {
    client: Client,
    dir: String,
    /// Prefixes our node's name, so a lost create reply can be recovered.
    id: String,
    node: Option<String>,
    buggy: bool,
    keeps_leading_while_disconnected: bool,
}

impl LeaderLatch {
    pub fn new(client: Client, dir: &str, id: &str, buggy: bool) -> LeaderLatch {
        let (dir, id) = (dir.to_string(), id.to_string());
        LeaderLatch {
            client,
            dir,
            id,
            node: None,
            buggy,
            keeps_leading_while_disconnected: false,
        }
    }

    /// The second mistake (see the module's doc): stop leading only once
    /// the session is known to be gone.
    pub fn keep_leading_while_disconnected(mut self) -> LeaderLatch {
        self.keeps_leading_while_disconnected = true;
        self
    }

    /// Waits until this candidate leads; returns its sequence number (a
    /// fencing token: every later leader's is higher).
    pub async fn acquire(&mut self) -> Result<i64, Error> {
        let me = self.create_node().await?;
        loop {
            let mut children = self.client.list_children(&self.dir).await?;
            children.sort_by_key(|name| sequence(name));
            let Some(position) = children.iter().position(|name| *name == me) else {
                return Err(Error::NoNode); // our node is gone: the session expired
            };
            if position == 0 {
                return Ok(sequence(&me));
            }
            let predecessor = format!("{}/{}", self.dir, children[position - 1]);
            tracing::debug!(node = %me, "waiting for {predecessor} to go");
            let (stat, watcher) = self.client.check_and_watch_stat(&predecessor).await?;
            if stat.is_some() || self.buggy {
                watcher.changed().await;
            }
        }
    }

    /// Creates our node; after a lost reply, looks for it by our prefix
    /// (syncing first: the server we reconnected to may lag) and creates it
    /// again only if the lost create was never applied.
    async fn create_node(&mut self) -> Result<String, Error> {
        let prefix = format!("{}-latch-", self.id);
        let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let path = format!("{}/{prefix}", self.dir);
        loop {
            let name = match self.client.create(&path, b"", &options).await {
                Ok((_, sequence)) => Some(format!("{prefix}{sequence}")),
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

    /// Returns once the session is no longer surely connected: a leader
    /// must stop acting as one then (with the second mistake: once it is
    /// known to be gone).
    pub async fn suspended(&self) {
        let mut states = self.client.state_watcher();
        while self.still_leads(states.peek_state()) {
            states.changed().await;
        }
    }

    fn still_leads(&self, state: SessionState) -> bool {
        match self.keeps_leading_while_disconnected {
            true => !matches!(state, SessionState::Expired | SessionState::Closed),
            false => state == SessionState::SyncConnected,
        }
    }

    /// Gives up the candidacy (or the leadership): deletes our node.
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
