//! The server's successful answers; failures are [`super::ZkError`].

use super::{Acls, AuthId, Path, Stat, ZkError};
use serde::{Deserialize, Serialize};

/// A successful reply, one variant per request kind.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Reply {
    /// The actual path created (with the sequence suffix) and its stat.
    Created {
        path: Path,
        stat: Stat,
    },
    Deleted,
    /// `None` when the node does not exist (an exists watch is then armed
    /// for NodeCreated).
    Exists(Option<Stat>),
    Data {
        data: Vec<u8>,
        stat: Stat,
    },
    DataSet(Stat),
    /// Child names (not full paths) in an order the server chose: sort them.
    Children(Vec<String>),
    Children2 {
        children: Vec<String>,
        stat: Stat,
    },
    Checked,
    /// One result per op, in order; only returned when every op succeeded.
    Multi(Vec<OpResult>),
    Synced {
        path: Path,
    },
    /// addWatch: the watch is armed.
    WatchAdded,
    /// One result per read of a multi-read, in order (a failed read does
    /// not fail the others).
    MultiRead(Vec<ReadResult>),
    /// getEphemerals: full paths, in an order the server chose.
    Ephemerals(Vec<Path>),
    /// getAllChildrenNumber.
    AllChildrenNumber(u32),
    /// getACL: the node's ACL and stat.
    Acl {
        acl: Acls,
        stat: Stat,
    },
    /// setACL: the node's new stat.
    AclSet(Stat),
    /// addAuth: the session is authenticated.
    AuthAdded,
    /// whoAmI: the session's identities, in the order it gained them.
    AuthIds(Vec<AuthId>),
}

/// The result of one read of a multi-read.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReadResult {
    Data {
        data: Vec<u8>,
        stat: Stat,
    },
    /// Child names in an order the server chose, as [`Reply::Children`].
    Children(Vec<String>),
    Error(ZkError),
}

/// The result of one op of a successful multi.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OpResult {
    /// Note: ZooKeeper 3.8.0 returns an invalid stat for creates inside a
    /// multi (ZOOKEEPER-4026); compare the path only.
    Created {
        path: Path,
        stat: Stat,
    },
    Deleted,
    DataSet(Stat),
    Checked,
}
