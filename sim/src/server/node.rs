//! One znode: its data, its kind (persistent, ephemeral, container, TTL) and
//! the counters its [`Stat`] is computed from, kept the way ZooKeeper's
//! `DataNode` / `StatPersisted` keep them.

use std::collections::BTreeSet;
use zk_recipes::zk::{Acls, CreateMode, SessionId, Stat, Zxid};

/// The largest TTL ZooKeeper accepts (`EphemeralType.TTL.maxValue()`).
pub const MAX_TTL_MS: i64 = (1 << 40) - 1;

/// The kind of a node, as ZooKeeper's `EphemeralType` tells them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NodeKind {
    Persistent,
    Ephemeral { owner: SessionId },
    Container,
    Ttl { ttl_ms: i64 },
}

impl NodeKind {
    /// The kind a create with `mode` makes for `session`.
    pub fn of_create(mode: CreateMode, session: SessionId) -> NodeKind {
        if mode.is_ephemeral() {
            NodeKind::Ephemeral { owner: session }
        } else if mode.is_container() {
            NodeKind::Container
        } else if let Some(ttl_ms) = mode.ttl_ms() {
            NodeKind::Ttl { ttl_ms }
        } else {
            NodeKind::Persistent
        }
    }

    /// The server-side encoding (`StatPersisted.ephemeralOwner`): the owner
    /// session, 0, `i64::MIN` for a container, `0xFF << 56 | ttl` for TTL.
    pub fn stored_ephemeral_owner(self) -> i64 {
        match self {
            NodeKind::Persistent => 0,
            NodeKind::Ephemeral { owner } => owner.0,
            NodeKind::Container => i64::MIN,
            NodeKind::Ttl { ttl_ms } => (0xFF00_0000_0000_0000_u64 as i64) | ttl_ms,
        }
    }

    /// What a client sees in `Stat.ephemeralOwner`: the owner of an
    /// ephemeral, 0 for every other kind, containers and TTL nodes included
    /// (`DataNode.getClientEphemeralOwner`; probed on 3.8.0).
    pub fn client_ephemeral_owner(self) -> i64 {
        match self {
            NodeKind::Ephemeral { owner } => owner.0,
            _ => 0,
        }
    }
}

/// A znode.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Node {
    pub data: Vec<u8>,
    pub kind: NodeKind,
    pub czxid: Zxid,
    pub mzxid: Zxid,
    /// Zxid of the last child create / delete that moved it (see DataTree's guards).
    pub pzxid: Zxid,
    pub ctime_ms: i64,
    pub mtime_ms: i64,
    pub version: i32,
    /// DataTree's internal cversion: the number of child creates. It is the
    /// sequence counter; clients see `2 * child_creates - num_children`.
    pub child_creates: i32,
    /// Child names (not paths).
    pub children: BTreeSet<String>,
    /// Who may do what to it (`DataTree`'s ACL cache entry).
    pub acl: Acls,
    /// The ACL version: the number of setACL calls.
    pub aversion: i32,
}

impl Node {
    /// A node created by the transaction `zxid` at `time_ms`.
    pub fn new(data: Vec<u8>, kind: NodeKind, acl: Acls, zxid: Zxid, time_ms: i64) -> Node {
        Node {
            data,
            kind,
            czxid: zxid,
            mzxid: zxid,
            pzxid: zxid,
            ctime_ms: time_ms,
            mtime_ms: time_ms,
            version: 0,
            child_creates: 0,
            children: BTreeSet::new(),
            acl,
            aversion: 0,
        }
    }

    /// The client's view (`DataNode.copyStat`), Java int arithmetic included.
    pub fn stat(&self) -> Stat {
        let num_children = self.children.len() as i32;
        Stat {
            czxid: self.czxid,
            mzxid: self.mzxid,
            pzxid: self.pzxid,
            ctime_ms: self.ctime_ms,
            mtime_ms: self.mtime_ms,
            version: self.version,
            cversion: self
                .child_creates
                .wrapping_mul(2)
                .wrapping_sub(num_children),
            aversion: self.aversion,
            ephemeral_owner: self.kind.client_ephemeral_owner(),
            data_length: self.data.len() as i32,
            num_children,
        }
    }
}
