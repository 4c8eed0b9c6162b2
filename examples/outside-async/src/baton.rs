//! A lock kept in the data of one persistent node, `DIR/baton`: empty
//! when free, the holder's id when taken. An acquire reads the baton; when
//! it is free it writes its id at the version it read (another writer
//! first: read again); when it is taken it waits for the baton to change.
//! A release writes it empty. The token is the baton's modification zxid.
//!
//! Plain application code against the `zookeeper-client` crate.
//!
//! The bug, behind `read_then_watch`: the read and the watch are two
//! requests. A release between them is missed: the watch is set on a
//! baton that is already free and waits for a change nobody makes once
//! the others are done. The fixed lock reads and watches in one request.

use zookeeper_client::{Acls, Client, CreateMode, Error};

pub struct Baton {
    client: Client,
    path: String,
    id: Vec<u8>,
    read_then_watch: bool,
}

impl Baton {
    pub fn new(client: Client, dir: &str, id: &str, read_then_watch: bool) -> Baton {
        Baton {
            client,
            path: format!("{dir}/baton"),
            id: id.as_bytes().to_vec(),
            read_then_watch,
        }
    }

    /// Creates the baton, free, unless it exists.
    pub async fn prepare(&self) -> Result<(), Error> {
        let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
        match self.client.create(&self.path, b"", &options).await {
            Ok(_) | Err(Error::NodeExists) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Waits until this client holds the baton; returns its token.
    pub async fn acquire(&self) -> Result<i64, Error> {
        loop {
            if self.read_then_watch {
                let (data, stat) = self.client.get_data(&self.path).await?;
                if !data.is_empty() {
                    // The bug: the baton may be free again by now.
                    let (_, watcher) = self.client.check_and_watch_stat(&self.path).await?;
                    watcher.changed().await;
                    continue;
                }
                if let Some(token) = self.take(stat.version).await? {
                    return Ok(token);
                }
                continue;
            }
            let (data, stat, watcher) = self.client.get_and_watch_data(&self.path).await?;
            if !data.is_empty() {
                watcher.changed().await;
                continue;
            }
            if let Some(token) = self.take(stat.version).await? {
                return Ok(token);
            }
        }
    }

    /// Writes our id at `version`; None when another writer came first.
    async fn take(&self, version: i32) -> Result<Option<i64>, Error> {
        match self
            .client
            .set_data(&self.path, &self.id, Some(version))
            .await
        {
            Ok(stat) => Ok(Some(stat.mzxid)),
            Err(Error::BadVersion) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Gives the baton back.
    pub async fn release(&self) -> Result<(), Error> {
        self.client
            .set_data(&self.path, b"", None)
            .await
            .map(|_| ())
    }
}
