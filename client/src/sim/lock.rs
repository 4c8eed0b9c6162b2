//! The real crate's lock types: [`LockPrefix`] and [`LockOptions`], built
//! and checked as the real crate does, and [`LockClient`] /
//! [`OwnedLockClient`], the writes guarded by an owned lock node, which is
//! deleted in the background when they drop. The contention itself
//! (`Client::lock`) is in `locking`.

use super::client::Client;
use super::multi::{CheckWriter, MultiWriter};
use super::paths::split_path;
use super::paths::validate;
use super::types::{CreateOptions, CreateSequence};
use super::{Acls, Error, MultiWriteResult, Stat};
use std::borrow::Cow;
use std::fmt;
use std::future::Future;

type Result<T, E = Error> = std::result::Result<T, E>;

/// Acls for the lock node and options for its missing ancestors.
#[derive(Clone, Debug)]
pub struct LockOptions<'a> {
    pub(crate) acls: Acls<'a>,
    pub(crate) parent: Option<CreateOptions<'a>>,
}

impl<'a> LockOptions<'a> {
    pub fn new(acls: Acls<'a>) -> Self {
        LockOptions { acls, parent: None }
    }

    /// Creates missing ancestors with these options (not ephemeral nor
    /// sequential).
    pub fn with_ancestor_options(mut self, options: CreateOptions<'a>) -> Result<Self> {
        options.validate_as_directory()?;
        self.parent = Some(options);
        Ok(self)
    }
}

impl<'a> From<Acls<'a>> for LockOptions<'a> {
    fn from(acls: Acls<'a>) -> Self {
        LockOptions::new(acls)
    }
}

#[derive(Debug)]
enum LockPrefixInner<'a> {
    Curator { dir: &'a str, name: &'a str },
    Custom { prefix: String, name: &'a str },
    Shared { prefix: &'a str },
}

/// How lock nodes are named.
#[derive(Debug)]
pub struct LockPrefix<'a> {
    inner: LockPrefixInner<'a>,
}

impl<'a> LockPrefix<'a> {
    /// Curator's pattern: `{dir}/_c_{uuid}-{name}{sequence}`.
    pub fn new_curator(dir: &'a str, name: &'a str) -> Result<Self> {
        validate(dir, false)?;
        if name.contains('/') {
            return Err(Error::BadArguments(&"lock name must not contain /"));
        }
        Ok(LockPrefix {
            inner: LockPrefixInner::Curator { dir, name },
        })
    }

    /// A prefix all contenders share: `{prefix}{sequence}`.
    pub fn new_shared(prefix: &'a str) -> Result<Self> {
        validate(prefix, true)?;
        Ok(LockPrefix {
            inner: LockPrefixInner::Shared { prefix },
        })
    }

    /// A prefix of this contender's: `{prefix}{sequence}`; its last segment
    /// must contain `name` (unless empty).
    pub fn new_custom(prefix: String, name: &'a str) -> Result<Self> {
        validate(&prefix, true)?;
        if !name.is_empty() && !split_path(&prefix).2.contains(name) {
            return Err(Error::BadArguments(
                &"lock path prefix must contain lock name",
            ));
        }
        Ok(LockPrefix {
            inner: LockPrefixInner::Custom { prefix, name },
        })
    }

    /// How contenders' names are recognised.
    pub(crate) fn kind(&self) -> LockPrefixKind<'a> {
        match &self.inner {
            LockPrefixInner::Curator { name, .. } => LockPrefixKind::Curator { lock_name: name },
            LockPrefixInner::Shared { prefix } => LockPrefixKind::Shared {
                prefix: split_path(prefix).2,
            },
            LockPrefixInner::Custom { name, .. } => LockPrefixKind::Custom { lock_name: name },
        }
    }

    /// The path prefix of this contender's node; Curator's takes a UUID.
    pub(crate) fn into_path(self, uuid: impl FnOnce() -> String) -> String {
        match self.inner {
            LockPrefixInner::Curator { dir, name } => format!("{dir}/_c_{}-{name}", uuid()),
            LockPrefixInner::Shared { prefix } => prefix.to_string(),
            LockPrefixInner::Custom { prefix, .. } => prefix,
        }
    }
}

/// How a lock recognises its contenders among the parent's children.
#[derive(Clone, Copy, Debug)]
pub(crate) enum LockPrefixKind<'a> {
    Curator { lock_name: &'a str },
    Custom { lock_name: &'a str },
    Shared { prefix: &'a str },
}

impl LockPrefixKind<'_> {
    /// Whether `name` is a contender's node.
    pub(crate) fn filter(&self, name: &str) -> bool {
        match self {
            Self::Curator { lock_name } | Self::Custom { lock_name } => name.contains(lock_name),
            Self::Shared { prefix } => name.starts_with(prefix),
        }
    }

    /// Whether the prefix names this contender's node alone (Curator's).
    pub(crate) fn is_unique(&self) -> bool {
        matches!(self, Self::Curator { .. })
    }
}

/// Writes guarded by an owned lock node: each fails with
/// [`Error::RuntimeInconsistent`] once the node is gone. Dropping it
/// deletes the node in the background.
pub struct LockClient<'a> {
    client: &'a Client,
    lock: Cow<'a, str>,
    /// Whether dropping it deletes the node: not for a view of an
    /// [`OwnedLockClient`]'s, nor once the node is known to be gone.
    deletes_on_drop: bool,
}

impl<'a> LockClient<'a> {
    pub(crate) fn new(client: &'a Client, lock: Cow<'a, str>) -> LockClient<'a> {
        LockClient {
            client,
            lock,
            deletes_on_drop: true,
        }
    }

    /// Drops it without deleting the node.
    pub(crate) fn disarm(mut self) {
        self.deletes_on_drop = false;
    }

    /// Underlying client.
    pub fn client(&self) -> &'a Client {
        self.client
    }

    /// The lock node's path.
    pub fn lock_path(&self) -> &str {
        &self.lock
    }

    /// A check writer guarded by the lock node.
    pub fn new_check_writer(&self) -> CheckWriter<'a> {
        let mut writer = MultiWriter::new(self.client);
        // The lock path was checked when the lock was taken; were it not
        // valid, the commit would fail with "expect path check".
        let _ = writer.add_check_version(&self.lock, -1);
        CheckWriter::new(writer)
    }

    /// [`Client::create`] guarded by the lock.
    pub fn create(
        &self,
        path: &str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> impl Future<Output = Result<(Stat, CreateSequence)>> + Send + 'a {
        let mut writer = self.new_check_writer();
        let added = writer
            .add_create(path, data, options)
            .map(|()| writer.commit());
        let path_len = path.len();
        async move {
            let result = first_result(added?.await?)?;
            let MultiWriteResult::Create { path, stat } = result else {
                return Err(Error::UnexpectedError(format!(
                    "expect MultiWriteResult::Create, got {result:?}"
                )));
            };
            let sequence = if path.len() <= path_len {
                CreateSequence(-1)
            } else {
                CreateSequence::parse(&path, &path[..path_len])?
            };
            Ok((stat, sequence))
        }
    }

    /// [`Client::set_data`] guarded by the lock.
    pub fn set_data(
        &self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + 'a {
        let mut writer = self.new_check_writer();
        let added = writer
            .add_set_data(path, data, expected_version)
            .map(|()| writer.commit());
        async move {
            match first_result(added?.await?)? {
                MultiWriteResult::SetData { stat } => Ok(stat),
                other => Err(Error::UnexpectedError(format!(
                    "expect MultiWriteResult::SetData, got {other:?}"
                ))),
            }
        }
    }

    /// [`Client::delete`] guarded by the lock.
    pub fn delete(
        &self,
        path: &str,
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<()>> + Send + 'a {
        let mut writer = self.new_check_writer();
        let added = writer
            .add_delete(path, expected_version)
            .map(|()| writer.commit());
        async move {
            match first_result(added?.await?)? {
                MultiWriteResult::Delete => Ok(()),
                other => Err(Error::UnexpectedError(format!(
                    "expect MultiWriteResult::Delete, got {other:?}"
                ))),
            }
        }
    }

    /// An owned version (which deletes the node when it drops).
    pub fn into_owned(mut self) -> OwnedLockClient {
        self.deletes_on_drop = false;
        OwnedLockClient {
            client: self.client.clone(),
            lock: std::mem::take(self.lock.to_mut()),
        }
    }
}

/// Deletes the lock node in the background.
impl Drop for LockClient<'_> {
    fn drop(&mut self) {
        if self.deletes_on_drop {
            let path = std::mem::take(self.lock.to_mut());
            self.client.clone().delete_background(path);
        }
    }
}

impl fmt::Debug for LockClient<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockClient")
            .field("client", self.client)
            .field("lock", &self.lock)
            .finish()
    }
}

fn first_result(results: Vec<MultiWriteResult>) -> Result<MultiWriteResult> {
    results
        .into_iter()
        .next()
        .ok_or_else(|| Error::UnexpectedError("expect one write result, got none".to_string()))
}

/// Owned version of [`LockClient`]; dropping it (or any clone) deletes the
/// node in the background, as the real crate's.
#[derive(Clone, Debug)]
pub struct OwnedLockClient {
    client: Client,
    lock: String,
}

impl OwnedLockClient {
    fn lock_client(&self) -> LockClient<'_> {
        LockClient {
            client: &self.client,
            lock: Cow::from(self.lock.as_str()),
            deletes_on_drop: false,
        }
    }

    /// Underlying client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The lock node's path.
    pub fn lock_path(&self) -> &str {
        &self.lock
    }

    /// Same as [`LockClient::create`].
    pub fn create<'a: 'f, 'b: 'f, 'f>(
        &'a self,
        path: &'b str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> impl Future<Output = Result<(Stat, CreateSequence)>> + Send + 'f {
        self.lock_client().create(path, data, options)
    }

    /// Same as [`LockClient::set_data`].
    pub fn set_data(
        &self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + '_ {
        self.lock_client().set_data(path, data, expected_version)
    }

    /// Same as [`LockClient::delete`].
    pub fn delete(
        &self,
        path: &str,
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<()>> + Send + '_ {
        self.lock_client().delete(path, expected_version)
    }

    /// Same as [`LockClient::new_check_writer`].
    pub fn new_check_writer(&self) -> CheckWriter<'_> {
        self.lock_client().new_check_writer()
    }
}

/// Deletes the lock node in the background.
impl Drop for OwnedLockClient {
    fn drop(&mut self) {
        let path = std::mem::take(&mut self.lock);
        self.client.clone().delete_background(path);
    }
}
