//! [`Client::lock`] as the real crate 0.11.2 contends (`create_lock`,
//! `find_lock`, `wait_lock`), built on the simulated client's own calls so
//! that every request goes through the world's session layer, server and
//! faults: an ephemeral sequential node under the prefix, missing ancestors
//! made with the options' ancestor options, the node found again after a
//! ConnectionLoss on its create (by its unique name for Curator's prefix,
//! by its ephemeral owner through a multi-read for the others), then a
//! wait on the predecessor's deletion. Reads and the recovery are retried
//! on ConnectionLoss; the node is deleted by a background (simulated) task
//! when the contention fails or is dropped, as the real crate's guards do.
//!
//! Curator's `{uuid}` is a version-4 UUID drawn from the run, never from
//! the OS: the session id mixed with a run-wide counter of drawn UUIDs, so
//! a run (and its replay) names its lock nodes the same way every time.

use super::client::Client;
use super::lock::{LockClient, LockOptions, LockPrefix, LockPrefixKind};
use super::paths::split_path;
use super::types::{CreateMode, CreateSequence};
use super::{Error, MultiReadResult};
use std::borrow::Cow;
use std::future::Future;

type Result<T, E = Error> = std::result::Result<T, E>;

impl Client {
    /// Contends a lock (leader, latch) with the nodes the prefix names, as
    /// the real crate does: returns once this contender's node is the
    /// first; [`Error::RuntimeInconsistent`] if the node is deleted while
    /// waiting, [`Error::SessionExpired`] if the session expires before.
    /// Dropping the future or the [`LockClient`] deletes the node in the
    /// background.
    pub async fn lock(
        &self,
        prefix: LockPrefix<'_>,
        data: &[u8],
        options: impl Into<LockOptions<'_>>,
    ) -> Result<LockClient<'_>> {
        let options = options.into();
        if options.acls.is_empty() {
            return Err(Error::InvalidAcl);
        }
        let kind = prefix.kind();
        let (lock, sequence_len) = self.create_lock(prefix, data, options).await?;
        let client = LockClient::new(self, Cow::from(lock));
        match self.wait_lock(client.lock_path(), kind, sequence_len).await {
            Err(error @ (Error::RuntimeInconsistent | Error::SessionExpired)) => {
                // The node is gone (or goes with the session): no delete.
                client.disarm();
                Err(error)
            }
            Err(error) => Err(error),
            Ok(()) => Ok(client),
        }
    }

    /// Creates this contender's node: its path and the length of its
    /// sequence suffix.
    async fn create_lock(
        &self,
        prefix: LockPrefix<'_>,
        data: &[u8],
        options: LockOptions<'_>,
    ) -> Result<(String, usize)> {
        let kind = prefix.kind();
        let prefix = prefix.into_path(|| self.lock_uuid());
        self.root.resolve(&prefix, true)?;
        let (parent, _, _) = split_path(&prefix);
        let mut guard = LockingGuard {
            client: self,
            prefix: &prefix,
            unique: kind.is_unique(),
            armed: true,
        };
        let create = CreateMode::EphemeralSequential.with_acls(options.acls);
        loop {
            let mut result = self.create(&prefix, data, &create).await;
            if result == Err(Error::NoNode) {
                if let Some(ancestors) = &options.parent {
                    match retry_on_connection_loss(|| self.mkdir_internally(parent, ancestors))
                        .await
                    {
                        Ok(()) => continue,
                        Err(Error::NoNode) => result = Err(Error::NoNode),
                        Err(error) => return Err(error),
                    }
                }
            }
            let sequence = match result {
                Err(Error::ConnectionLoss) => match self.find_lock(&prefix, kind).await? {
                    Some(sequence) => sequence,
                    None => continue,
                },
                Err(error) => {
                    if has_no_data_change(&error) {
                        guard.armed = false;
                    }
                    return Err(error);
                }
                Ok((_stat, sequence)) => sequence,
            };
            guard.armed = false;
            let path = format!("{prefix}{sequence}");
            let sequence_len = path.len() - prefix.len();
            return Ok((path, sequence_len));
        }
    }

    /// This contender's node, if its create was applied although its reply
    /// was lost: by its unique name (Curator's), else by its ephemeral
    /// owner among the prefix's nodes.
    async fn find_lock(
        &self,
        prefix: &str,
        kind: LockPrefixKind<'_>,
    ) -> Result<Option<CreateSequence>> {
        let (parent, tree, name) = split_path(prefix);
        let mut children = retry_on_connection_loss(|| self.list_children(parent)).await?;
        if kind.is_unique() {
            let Some(mine) = children.iter().find(|child| child.starts_with(name)) else {
                return Ok(None);
            };
            return CreateSequence::parse(mine, name).map(Some);
        }
        children.retain(|child| child.starts_with(name));
        if children.is_empty() {
            return Ok(None);
        }
        for child in children.iter_mut() {
            child.insert_str(0, tree);
        }
        let owned = self.owned_among(&children).await?;
        // As the real crate: the path (with its parent) is parsed against
        // the bare name, which fails ("does not contain prefix path"): a
        // shared or custom lock whose create's reply was lost after apply
        // fails with UnexpectedError (and its node is deleted behind).
        owned
            .map(|i| CreateSequence::parse(&children[i], name))
            .transpose()
    }

    /// The index of the first of `paths` this session owns (one multi-read
    /// of their data, retried on ConnectionLoss); nodes gone are skipped.
    async fn owned_among(&self, paths: &[String]) -> Result<Option<usize>> {
        let results = retry_on_connection_loss(|| {
            let mut reader = self.new_multi_reader();
            let added = paths.iter().try_for_each(|path| reader.add_get_data(path));
            let commit = added.map(|()| reader.commit());
            async move { commit?.await }
        })
        .await?;
        let session = self.session_id().0;
        Ok(results.into_iter().position(|result| {
            // A node gone is a MultiReadResult::Error (NoNode).
            matches!(result, MultiReadResult::Data { stat, .. } if stat.ephemeral_owner == session)
        }))
    }

    /// Waits until `lock` is the first contender: watches its predecessor
    /// until it is deleted, then looks again.
    async fn wait_lock(
        &self,
        lock: &str,
        kind: LockPrefixKind<'_>,
        sequence_len: usize,
    ) -> Result<()> {
        let (parent, tree, this) = split_path(lock);
        let this_sequence = sequence_of(this, sequence_len);
        loop {
            let mut children = retry_on_connection_loss(|| self.list_children(parent)).await?;
            children.retain(|child| {
                kind.filter(child) && sequence_of(child, sequence_len).parse::<i32>().is_ok()
            });
            children.sort_unstable_by(|a, b| {
                sequence_of(a, sequence_len).cmp(sequence_of(b, sequence_len))
            });
            let position = children
                .binary_search_by(|child| sequence_of(child, sequence_len).cmp(this_sequence));
            match position {
                Ok(0) => return Ok(()),
                Ok(i) => {
                    let mut predecessor = children.swap_remove(i - 1);
                    predecessor.insert_str(0, tree);
                    let watched =
                        retry_on_connection_loss(|| self.get_and_watch_data(&predecessor)).await;
                    let watcher = match watched {
                        Err(Error::NoNode) => continue,
                        Err(error) => return Err(error),
                        Ok((_data, _stat, watcher)) => watcher,
                    };
                    watcher.changed().await;
                }
                Err(_) => return Err(Error::RuntimeInconsistent),
            }
        }
    }

    /// Curator's `{uuid}`: a version-4 UUID from the session id and the
    /// run's count of UUIDs drawn so far (deterministic; unique in the run).
    fn lock_uuid(&self) -> String {
        let drawn = self.bridge.app().run_state::<LockUuids>();
        let count = {
            let mut drawn = drawn
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            drawn.count += 1;
            drawn.count
        };
        let high = mix(self.session_id().0 as u64 ^ mix(count));
        let low = mix(high ^ count);
        format_uuid_v4(high, low)
    }

    /// Deletes `path` in the background (retried on ConnectionLoss; any
    /// other error ignored), as the real crate's `delete_background`.
    pub(crate) fn delete_background(self, path: String) {
        let client = self.clone();
        self.spawn_background(async move {
            let _ = retry_on_connection_loss(|| client.delete(&path, None)).await;
        });
    }

    /// Deletes this session's node under `prefix` in the background, as the
    /// real crate's `delete_ephemeral_background`: for a unique prefix the
    /// child it names, else the first such child this session owns.
    fn delete_ephemeral_background(self, prefix: String, unique: bool) {
        let client = self.clone();
        self.spawn_background(async move {
            let _ = client.delete_ephemeral(&prefix, unique).await;
        });
    }

    async fn delete_ephemeral(&self, prefix: &str, unique: bool) -> Result<()> {
        let (parent, tree, name) = split_path(prefix);
        let mut children = retry_on_connection_loss(|| self.list_children(parent)).await?;
        if unique {
            if let Some(mine) = children.iter().find(|child| child.starts_with(name)) {
                // The bare name, as the real crate passes it: a path
                // without its parent fails validation, so nothing is
                // deleted (the node stays until the session ends).
                let _ = retry_on_connection_loss(|| self.delete(mine, None)).await;
            }
            return Ok(());
        }
        children.retain(|child| child.starts_with(name));
        for child in children.iter_mut() {
            child.insert_str(0, tree);
        }
        if let Some(i) = self.owned_among(&children).await? {
            let _ = retry_on_connection_loss(|| self.delete(&children[i], None)).await;
        }
        Ok(())
    }
}

/// The run's count of Curator UUIDs drawn (a run state: it starts at zero
/// in every run).
#[derive(Default)]
struct LockUuids {
    count: u64,
}

/// Deletes the lock node of a contention that ends before it created it
/// for sure (an error that may have left it, or the future dropped).
struct LockingGuard<'a> {
    client: &'a Client,
    prefix: &'a str,
    unique: bool,
    armed: bool,
}

impl Drop for LockingGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.client
                .clone()
                .delete_ephemeral_background(self.prefix.to_string(), self.unique);
        }
    }
}

/// Retries `operation` while it fails with ConnectionLoss, as the real
/// crate's `retry_on_connection_loss` (a request sent while disconnected
/// waits for the reconnect, so this does not spin).
pub(crate) async fn retry_on_connection_loss<T, F>(operation: impl Fn() -> F) -> Result<T>
where
    F: Future<Output = Result<T>>,
{
    loop {
        match operation().await {
            Err(Error::ConnectionLoss) => continue,
            result => return result,
        }
    }
}

/// The real crate's `Error::has_no_data_change` (crate-private there): the
/// errors after which a failed create certainly left no node.
fn has_no_data_change(error: &Error) -> bool {
    matches!(
        error,
        Error::NoNode
            | Error::NoAuth
            | Error::BadVersion
            | Error::NoChildrenForEphemerals
            | Error::NodeExists
            | Error::NotEmpty
            | Error::InvalidAcl
            | Error::AuthFailed
            | Error::SessionMoved
            | Error::NotReadOnly
            | Error::NoWatcher
            | Error::QuotaExceeded
            | Error::Throttled
            | Error::MarshallingError
            | Error::Unimplemented
            | Error::ReconfigDisabled
            | Error::UnexpectedErrorCode(_)
            | Error::SessionExpired
            | Error::ClientClosed
    )
}

/// The last `len` bytes of a node name, its sequence; empty if the name is
/// shorter or would be cut inside a character (the real crate would panic
/// on the latter; such a name is no contender here).
fn sequence_of(name: &str, len: usize) -> &str {
    name.len()
        .checked_sub(len)
        .and_then(|at| name.get(at..))
        .unwrap_or("")
}

/// SplitMix64's finaliser: spreads a counter over 64 bits.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// 128 bits as a version-4 (random) UUID's text, as `uuid::Uuid::new_v4`
/// prints it: lower-case hex, 8-4-4-4-12, version nibble 4, variant 10.
fn format_uuid_v4(high: u64, low: u64) -> String {
    let high = (high & !0xF000) | 0x4000;
    let low = (low & !(0xC << 60)) | (0x8 << 60);
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        high >> 32,
        (high >> 16) & 0xFFFF,
        high & 0xFFFF,
        low >> 48,
        low & 0xFFFF_FFFF_FFFF
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_are_the_last_bytes_or_nothing() {
        assert_eq!(sequence_of("lock-0000000003", 10), "0000000003");
        assert_eq!(sequence_of("short", 10), "");
        assert_eq!(sequence_of("é0000000001", 11), "");
    }

    #[test]
    fn uuids_have_the_v4_shape() {
        let uuid = format_uuid_v4(mix(1), mix(2));
        let groups: Vec<&str> = uuid.split('-').collect();
        let lens: Vec<usize> = groups.iter().map(|group| group.len()).collect();
        assert_eq!(lens, [8, 4, 4, 4, 12], "{uuid}");
        assert!(groups[2].starts_with('4'), "{uuid}");
        assert!(matches!(&groups[3][..1], "8" | "9" | "a" | "b"), "{uuid}");
        assert_ne!(uuid, format_uuid_v4(mix(1), mix(3)));
    }
}
