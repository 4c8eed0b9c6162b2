//! A mutex on one ephemeral, non-sequential node, `DIR/lease`, whose data
//! is the holder's id: create it; when it exists, watch it and try again
//! when it goes. A create whose reply was lost is recovered by reading the
//! node's data. The token is the node's creation zxid.
//!
//! Plain application code against the `zookeeper-client` crate. The
//! mutex's [`LeaseMutex::suspended`] resolves when the session is in doubt
//! (no longer connected): an application that holds while it has not
//! resolved holds only what the server still grants. The bug lives in the
//! glue (`check.rs`, variant `ignores_session`): the holder never asks, and
//! holds on through a disconnect long enough for its session to expire
//! while another client takes the mutex.

use zookeeper_client::{Acls, Client, CreateMode, Error, SessionState};

pub struct LeaseMutex {
    client: Client,
    node: String,
    id: Vec<u8>,
    held: bool,
}

impl LeaseMutex {
    pub fn new(client: Client, dir: &str, id: &str) -> LeaseMutex {
        LeaseMutex {
            client,
            node: format!("{dir}/lease"),
            id: id.as_bytes().to_vec(),
            held: false,
        }
    }

    /// Waits until this client holds the mutex; returns its token.
    pub async fn acquire(&mut self) -> Result<i64, Error> {
        let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
        loop {
            let created = match self.client.create(&self.node, &self.id, &options).await {
                Ok((stat, _)) => Some(stat.czxid),
                Err(Error::NodeExists) | Err(Error::ConnectionLoss) => self.ours().await?,
                Err(error) => return Err(error),
            };
            if let Some(token) = created {
                self.held = true;
                return Ok(token);
            }
            let (stat, watcher) = match self.client.check_and_watch_stat(&self.node).await {
                Err(Error::ConnectionLoss) => continue,
                other => other?,
            };
            if stat.is_some() {
                watcher.changed().await;
            }
        }
    }

    /// The node's creation zxid when it is ours.
    async fn ours(&self) -> Result<Option<i64>, Error> {
        loop {
            match self.client.get_data(&self.node).await {
                Ok((data, stat)) if data == self.id => return Ok(Some(stat.czxid)),
                Ok(_) | Err(Error::NoNode) => return Ok(None),
                Err(Error::ConnectionLoss) => continue,
                Err(error) => return Err(error),
            }
        }
    }

    /// Resolves when the session is no longer connected.
    pub async fn suspended(&self) {
        let mut states = self.client.state_watcher();
        while states.peek_state() == SessionState::SyncConnected {
            states.changed().await;
        }
    }

    /// Releases the mutex: deletes the node while it is ours.
    pub async fn release(&mut self) -> Result<(), Error> {
        if !std::mem::take(&mut self.held) {
            return Ok(());
        }
        loop {
            match self.client.delete(&self.node, None).await {
                Ok(()) | Err(Error::NoNode) | Err(Error::SessionExpired) => return Ok(()),
                Err(Error::ConnectionLoss) => continue,
                Err(error) => return Err(error),
            }
        }
    }
}
