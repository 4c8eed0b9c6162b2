//! How a znode is created: ZooKeeper 3.8's `CreateMode`.

use serde::{Deserialize, Serialize};

/// The kind of node a create makes.
///
/// TTL modes need the server's `extendedTypesEnabled=true` (otherwise the
/// server answers `Unimplemented`); a TTL must be in `1..=2^40-1` ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum CreateMode {
    Persistent,
    Ephemeral,
    PersistentSequential,
    EphemeralSequential,
    /// Reaped by the server once it has had a child and has none left.
    Container,
    /// Reaped once it has no children and was not modified for `ttl_ms`.
    PersistentWithTtl {
        ttl_ms: i64,
    },
    PersistentSequentialWithTtl {
        ttl_ms: i64,
    },
}

impl CreateMode {
    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential
                | CreateMode::EphemeralSequential
                | CreateMode::PersistentSequentialWithTtl { .. }
        )
    }

    pub fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }

    pub fn is_container(self) -> bool {
        matches!(self, CreateMode::Container)
    }

    /// The TTL of a TTL mode.
    pub fn ttl_ms(self) -> Option<i64> {
        match self {
            CreateMode::PersistentWithTtl { ttl_ms }
            | CreateMode::PersistentSequentialWithTtl { ttl_ms } => Some(ttl_ms),
            _ => None,
        }
    }
}
