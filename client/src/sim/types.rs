//! The real crate's value types that cannot be built from outside it,
//! rebuilt with the same names, methods and rules: [`CreateMode`],
//! [`CreateOptions`], [`CreateSequence`] and [`SessionInfo`].

use std::time::Duration;
use upstream::{Acls, Error, SessionId};
use zk_recipes::zk::CreateMode as ZkCreateMode;

/// The kind of node a create makes; TTL nodes through
/// [`CreateOptions::with_ttl`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateMode {
    Persistent,
    PersistentSequential,
    Ephemeral,
    EphemeralSequential,
    Container,
}

impl CreateMode {
    /// Options with this mode and these ACLs.
    pub const fn with_acls(self, acls: Acls<'_>) -> CreateOptions<'_> {
        CreateOptions {
            mode: self,
            acls,
            ttl: None,
        }
    }

    pub(crate) fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential | CreateMode::EphemeralSequential
        )
    }

    fn is_persistent(self) -> bool {
        matches!(
            self,
            CreateMode::Persistent | CreateMode::PersistentSequential
        )
    }

    fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }
}

/// The largest TTL the server takes, in ms (five bytes).
const TTL_MAX_MS: u128 = 0x00FF_FFFF_FFFF;

/// How a node is created: mode, ACLs and TTL.
#[derive(Clone, Debug)]
pub struct CreateOptions<'a> {
    mode: CreateMode,
    acls: Acls<'a>,
    ttl: Option<Duration>,
}

impl CreateOptions<'_> {
    /// A TTL, for persistent nodes.
    pub const fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// The real crate's checks before sending a create.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        if let Some(ttl) = self.ttl {
            if !self.mode.is_persistent() {
                return Err(Error::BadArguments(
                    &"ttl can only be specified with persistent node",
                ));
            } else if ttl.is_zero() {
                return Err(Error::BadArguments(&"ttl is zero"));
            } else if ttl.as_millis() > TTL_MAX_MS {
                return Err(Error::BadArguments(&"ttl cannot larger than 1099511627775"));
            }
        }
        if self.acls.is_empty() {
            return Err(Error::InvalidAcl);
        }
        Ok(())
    }

    /// The checks for the directories `mkdir` and locks create.
    pub(crate) fn validate_as_directory(&self) -> Result<(), Error> {
        self.validate()?;
        if self.mode.is_ephemeral() {
            return Err(Error::BadArguments(&"directory node must not be ephemeral"));
        } else if self.mode.is_sequential() {
            return Err(Error::BadArguments(
                &"directory node must not be sequential",
            ));
        }
        Ok(())
    }

    pub(crate) fn is_sequential(&self) -> bool {
        self.mode.is_sequential()
    }

    /// The simulated server's ACL for the node.
    pub(crate) fn zk_acl(&self) -> zk_recipes::zk::Acls {
        super::convert::acls_to_zk(&self.acls)
    }

    /// The simulated server's create mode (call after `validate`).
    pub(crate) fn zk_mode(&self) -> ZkCreateMode {
        let ttl_ms = self
            .ttl
            .map(|ttl| i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX));
        match (self.mode, ttl_ms) {
            (CreateMode::Persistent, Some(ttl_ms)) => ZkCreateMode::PersistentWithTtl { ttl_ms },
            (CreateMode::PersistentSequential, Some(ttl_ms)) => {
                ZkCreateMode::PersistentSequentialWithTtl { ttl_ms }
            }
            (CreateMode::Persistent, None) => ZkCreateMode::Persistent,
            (CreateMode::PersistentSequential, None) => ZkCreateMode::PersistentSequential,
            (CreateMode::Ephemeral, _) => ZkCreateMode::Ephemeral,
            (CreateMode::EphemeralSequential, _) => ZkCreateMode::EphemeralSequential,
            (CreateMode::Container, _) => ZkCreateMode::Container,
        }
    }
}

/// A sequential node's sequence number; -1 for other nodes. Prints in ten
/// digits (nineteen past `i32::MAX`), zero-padded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CreateSequence(pub(crate) i64);

impl std::fmt::Display for CreateSequence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0 <= i32::MAX.into() {
            write!(f, "{:010}", self.0)
        } else {
            write!(f, "{:019}", self.0)
        }
    }
}

impl CreateSequence {
    pub fn into_i64(self) -> i64 {
        self.0
    }

    /// The sequence a created path carries after the prefix the client
    /// asked for.
    pub(crate) fn parse(client_path: &str, prefix: &str) -> Result<CreateSequence, Error> {
        let Some(digits) = client_path.strip_prefix(prefix) else {
            return Err(Error::UnexpectedError(format!(
                "sequential path {client_path} does not contain prefix path {prefix}"
            )));
        };
        digits.parse::<i64>().map(CreateSequence).map_err(|_| {
            Error::UnexpectedError(format!("sequential node get no i32 path {client_path}"))
        })
    }
}

/// A session's identity.
#[derive(Clone, Debug)]
pub struct SessionInfo {
    pub(crate) id: SessionId,
    pub(crate) readonly: bool,
}

impl SessionInfo {
    /// Session id.
    pub fn id(&self) -> SessionId {
        self.id
    }

    /// Whether the session is read-only (never, in the simulation).
    pub fn is_readonly(&self) -> bool {
        self.readonly
    }

    pub(crate) fn zk_id(&self) -> zk_recipes::zk::SessionId {
        zk_recipes::zk::SessionId(self.id.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_print_in_ten_digits_then_nineteen() {
        assert_eq!(CreateSequence(5).to_string(), "0000000005");
        assert_eq!(
            CreateSequence(i64::from(i32::MAX)).to_string(),
            "2147483647"
        );
        assert_eq!(
            CreateSequence(i64::from(i32::MAX) + 1).to_string(),
            "0000000002147483648"
        );
        assert_eq!(
            CreateSequence::parse("/a/n-0000000007", "/a/n-"),
            Ok(CreateSequence(7))
        );
        assert!(CreateSequence::parse("/b/n-1", "/a/n-").is_err());
    }

    #[test]
    fn options_are_checked_as_the_real_crate_does() {
        let acls = Acls::anyone_all();
        let ttl =
            |mode: CreateMode, ms: u64| mode.with_acls(acls).with_ttl(Duration::from_millis(ms));
        assert_eq!(
            ttl(CreateMode::Ephemeral, 1_000).validate(),
            Err(Error::BadArguments(
                &"ttl can only be specified with persistent node"
            ))
        );
        assert_eq!(
            ttl(CreateMode::Persistent, 0).validate(),
            Err(Error::BadArguments(&"ttl is zero"))
        );
        assert!(ttl(CreateMode::Persistent, 0x01FF_FFFF_FFFF)
            .validate()
            .is_err());
        assert_eq!(
            ttl(CreateMode::PersistentSequential, 5).zk_mode(),
            ZkCreateMode::PersistentSequentialWithTtl { ttl_ms: 5 }
        );
        assert_eq!(
            CreateMode::Persistent.with_acls(Acls::new(&[])).validate(),
            Err(Error::InvalidAcl)
        );
        assert_eq!(
            CreateMode::Ephemeral
                .with_acls(acls)
                .validate_as_directory(),
            Err(Error::BadArguments(&"directory node must not be ephemeral"))
        );
    }
}
