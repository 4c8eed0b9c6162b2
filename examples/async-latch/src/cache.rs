//! A small cache of a directory's children, kept by a persistent recursive
//! watch (ZooKeeper 3.6+, `addWatch`): the watch reports every child
//! created or deleted under the directory, so the cache follows it without
//! reading the directory again.
//!
//! This file is plain application code against the real crate: it knows
//! nothing of zkcheck and builds without it.
//!
//! A connection loss breaks a persistent watch twice over: the crate
//! (0.11.2) does not set it again after a reconnect (its watcher then hears
//! only session states; measured on a real 3.8), and ZooKeeper would not
//! replay the events of what changed meanwhile anyway (ZOOKEEPER-4698; the
//! crate's `PersistentWatcher::changed` says so). After `Disconnected` and
//! the next `SyncConnected` a cache must watch again and read the
//! directory again. [`Staleness::Trusted`] keeps the mistake of trusting
//! the watch: whatever changes after the first reconnect never reaches the
//! cache.

use std::collections::BTreeSet;
use zookeeper_client::{AddWatchMode, Client, Error, EventType, PersistentWatcher, SessionState};

/// What the cache does after a connection loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Staleness {
    /// Watches and reads the directory again once reconnected (Curator's
    /// caches read again too).
    Rebuilt,
    /// Trusts the watch to have told it everything (the mistake).
    Trusted,
}

/// The children of one directory, as the watch last told them.
pub struct ChildrenCache {
    client: Client,
    dir: String,
    watcher: PersistentWatcher,
    children: BTreeSet<String>,
    staleness: Staleness,
    /// Disconnected since the last read of the directory.
    disconnected: bool,
}

impl ChildrenCache {
    /// Watches `dir` (first, so that nothing between the read and the
    /// watch is missed), then reads its children.
    pub async fn start(
        client: Client,
        dir: &str,
        staleness: Staleness,
    ) -> Result<ChildrenCache, Error> {
        let watcher = client.watch(dir, AddWatchMode::PersistentRecursive).await?;
        let mut cache = ChildrenCache {
            client,
            dir: dir.to_string(),
            watcher,
            children: BTreeSet::new(),
            staleness,
            disconnected: false,
        };
        cache.read().await?;
        Ok(cache)
    }

    /// The children, sorted by name.
    pub fn children(&self) -> &BTreeSet<String> {
        &self.children
    }

    /// Waits for the watch's next event and applies it. Fails once the
    /// session expired (the watch is gone with it).
    pub async fn changed(&mut self) -> Result<(), Error> {
        let event = self.watcher.changed().await;
        match event.event_type {
            EventType::NodeCreated => {
                if let Some(name) = self.child_name(&event.path) {
                    self.children.insert(name);
                }
            }
            EventType::NodeDeleted => {
                if let Some(name) = self.child_name(&event.path) {
                    self.children.remove(&name);
                }
            }
            EventType::Session => match event.session_state {
                SessionState::Disconnected => self.disconnected = true,
                SessionState::SyncConnected if self.disconnected => {
                    if self.staleness == Staleness::Rebuilt {
                        // The new watch first (the old one is dropped
                        // after it), then the read: nothing falls between.
                        self.watcher = self.watch().await?;
                        self.read().await?;
                    }
                    self.disconnected = false;
                }
                state if state.is_terminated() => return Err(Error::SessionExpired),
                _ => {}
            },
            EventType::NodeDataChanged | EventType::NodeChildrenChanged => {}
        }
        Ok(())
    }

    /// A new persistent recursive watch on the directory.
    async fn watch(&self) -> Result<PersistentWatcher, Error> {
        self.client
            .watch(&self.dir, AddWatchMode::PersistentRecursive)
            .await
    }

    /// Reads the directory's children into the cache.
    async fn read(&mut self) -> Result<(), Error> {
        let children = self.client.list_children(&self.dir).await?;
        self.children = children.into_iter().collect();
        self.disconnected = false;
        Ok(())
    }

    /// The name of the directory's child at `path`; None for the directory
    /// itself and deeper nodes.
    fn child_name(&self, path: &str) -> Option<String> {
        let name = path.strip_prefix(&self.dir)?.strip_prefix('/')?;
        (!name.is_empty() && !name.contains('/')).then(|| name.to_string())
    }
}
