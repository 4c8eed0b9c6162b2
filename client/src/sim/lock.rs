//! The real crate's lock API. Its prefixes and options are built and
//! checked as the real crate does, but `Client::lock` is not covered (it
//! fails naming the call), so no [`LockClient`] is ever built; its methods
//! exist so that code using them compiles.

use super::client::Client;
use super::multi::{CheckWriter, MultiWriter};
use super::paths::validate;
use super::types::{CreateOptions, CreateSequence};
use super::{Acls, Error, MultiWriteResult, Stat};
use std::borrow::Cow;
use std::future::Future;

type Result<T, E = Error> = std::result::Result<T, E>;

/// Acls for the lock node and options for its missing ancestors.
#[derive(Clone, Debug)]
pub struct LockOptions<'a> {
    acls: Acls<'a>,
    parent: Option<CreateOptions<'a>>,
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
enum LockPrefixKind<'a> {
    Curator { dir: &'a str, name: &'a str },
    Custom { prefix: String, name: &'a str },
    Shared { prefix: &'a str },
}

/// How lock nodes are named.
#[derive(Debug)]
pub struct LockPrefix<'a> {
    kind: LockPrefixKind<'a>,
}

impl<'a> LockPrefix<'a> {
    /// Curator's pattern: `{dir}/_c_{uuid}-{name}{sequence}`.
    pub fn new_curator(dir: &'a str, name: &'a str) -> Result<Self> {
        validate(dir, false)?;
        if name.contains('/') {
            return Err(Error::BadArguments(&"lock name must not contain /"));
        }
        Ok(LockPrefix {
            kind: LockPrefixKind::Curator { dir, name },
        })
    }

    /// A prefix all contenders share: `{prefix}{sequence}`.
    pub fn new_shared(prefix: &'a str) -> Result<Self> {
        validate(prefix, true)?;
        Ok(LockPrefix {
            kind: LockPrefixKind::Shared { prefix },
        })
    }

    /// A prefix of this contender's: `{prefix}{sequence}`; its last segment
    /// must contain `name` (unless empty).
    pub fn new_custom(prefix: String, name: &'a str) -> Result<Self> {
        validate(&prefix, true)?;
        let last_segment = prefix.rsplit('/').next().unwrap_or("");
        if !name.is_empty() && !last_segment.contains(name) {
            return Err(Error::BadArguments(
                &"lock path prefix must contain lock name",
            ));
        }
        Ok(LockPrefix {
            kind: LockPrefixKind::Custom { prefix, name },
        })
    }
}

impl LockPrefix<'_> {
    /// The names the lock nodes would get (for the uncovered-call error).
    fn pattern(&self) -> String {
        match &self.kind {
            LockPrefixKind::Curator { dir, name } => {
                format!("{dir}/_c_{{uuid}}-{name}{{sequence}}")
            }
            LockPrefixKind::Custom { prefix, name } => {
                format!("{prefix}{{sequence}} (name {name:?})")
            }
            LockPrefixKind::Shared { prefix } => format!("{prefix}{{sequence}}"),
        }
    }
}

impl Client {
    /// Not covered by the simulation: fails naming the call (after the real
    /// crate's ACL check).
    pub async fn lock(
        &self,
        prefix: LockPrefix<'_>,
        _data: &[u8],
        options: impl Into<LockOptions<'_>>,
    ) -> Result<LockClient<'_>> {
        let options = options.into();
        if options.acls.is_empty() {
            return Err(Error::InvalidAcl);
        }
        let _ancestors = options.parent;
        Err(Error::UnexpectedError(format!(
            "{} (lock nodes {})",
            super::errors::uncovered_text("lock"),
            prefix.pattern()
        )))
    }
}

/// Writes guarded by an owned lock node (never built: `lock` is not
/// covered).
#[derive(Debug)]
pub struct LockClient<'a> {
    client: &'a Client,
    lock: Cow<'a, str>,
}

impl<'a> LockClient<'a> {
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

    /// An owned version.
    pub fn into_owned(self) -> OwnedLockClient {
        OwnedLockClient {
            client: self.client.clone(),
            lock: self.lock.into_owned(),
        }
    }
}

fn first_result(results: Vec<MultiWriteResult>) -> Result<MultiWriteResult> {
    results
        .into_iter()
        .next()
        .ok_or_else(|| Error::UnexpectedError("expect one write result, got none".to_string()))
}

/// Owned version of [`LockClient`] (never built).
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
