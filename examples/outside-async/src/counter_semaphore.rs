//! A semaphore kept in one counter: the persistent node `DIR/count` holds
//! how many leases are out. An acquire reads it with a watch and, while it
//! is below the number of leases, writes it one higher; a release writes it
//! one lower. The token is the counter's modification zxid.
//!
//! Plain application code against the `zookeeper-client` crate.
//!
//! The bug, behind `unversioned`: the counter is written without the
//! version it was read at, so two clients that read the same count both
//! write count + 1 (or count - 1): one update is lost. A lost increment
//! lets one holder too many in; a lost decrement keeps a lease counted
//! that nobody holds. The fixed semaphore writes with the version it read
//! and reads again when another write came first (BadVersion).

use zookeeper_client::{Acls, Client, CreateMode, Error};

pub struct CounterSemaphore {
    client: Client,
    count: String,
    leases: u64,
    unversioned: bool,
}

impl CounterSemaphore {
    pub fn new(client: Client, dir: &str, leases: u64, unversioned: bool) -> CounterSemaphore {
        let count = format!("{dir}/count");
        CounterSemaphore {
            client,
            count,
            leases,
            unversioned,
        }
    }

    /// Creates the counter at 0 unless it exists.
    pub async fn prepare(&self) -> Result<(), Error> {
        let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
        match self.client.create(&self.count, b"0", &options).await {
            Ok(_) | Err(Error::NodeExists) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Waits for a lease; returns its token.
    pub async fn acquire(&self) -> Result<i64, Error> {
        loop {
            let (data, stat, watcher) = self.client.get_and_watch_data(&self.count).await?;
            let count = parse(&data);
            if count >= self.leases {
                watcher.changed().await;
                continue;
            }
            if let Some(token) = self.write(count + 1, stat.version).await? {
                return Ok(token);
            }
        }
    }

    /// Gives a lease back.
    pub async fn release(&self) -> Result<(), Error> {
        loop {
            let (data, stat) = self.client.get_data(&self.count).await?;
            let count = parse(&data).saturating_sub(1);
            if self.write(count, stat.version).await?.is_some() {
                return Ok(());
            }
        }
    }

    /// Writes `count`; None when another write came first.
    async fn write(&self, count: u64, version: i32) -> Result<Option<i64>, Error> {
        let expected = (!self.unversioned).then_some(version);
        let data = count.to_string();
        match self
            .client
            .set_data(&self.count, data.as_bytes(), expected)
            .await
        {
            Ok(stat) => Ok(Some(stat.mzxid)),
            Err(Error::BadVersion) => Ok(None),
            Err(error) => Err(error),
        }
    }
}

fn parse(data: &[u8]) -> u64 {
    String::from_utf8_lossy(data).parse().unwrap_or(0)
}
