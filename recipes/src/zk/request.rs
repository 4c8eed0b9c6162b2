//! The requests a client sends to a ZooKeeper server.

use super::{Acls, CreateMode, Path};
use serde::{Deserialize, Serialize};

/// The version that matches any version in delete / set_data / check.
pub const ANY_VERSION: i32 = -1;

/// One ZooKeeper request. A `watch` flag registers a one-shot watch for the
/// session if the request succeeds (for `Exists`, also when the node is missing).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Request {
    /// Create a node; a sequential mode appends a 10-digit counter to `path`.
    Create {
        path: Path,
        data: Vec<u8>,
        mode: CreateMode,
        acl: Acls,
    },
    /// Delete if the data version matches (`ANY_VERSION` for any).
    Delete {
        path: Path,
        version: i32,
    },
    Exists {
        path: Path,
        watch: bool,
    },
    GetData {
        path: Path,
        watch: bool,
    },
    SetData {
        path: Path,
        data: Vec<u8>,
        version: i32,
    },
    GetChildren {
        path: Path,
        watch: bool,
    },
    /// getChildren2: the children and the parent's stat.
    GetChildren2 {
        path: Path,
        watch: bool,
    },
    /// Fails with BadVersion unless the data version matches.
    Check {
        path: Path,
        version: i32,
    },
    /// All ops or none.
    Multi(Vec<MultiOp>),
    Sync {
        path: Path,
    },
    /// addWatch (ZooKeeper 3.6+): a watch on `path` that stays armed after
    /// it fires, for the path only or for its whole subtree (`mode`). The
    /// node need not exist. The simulator carries it (stepper, world); the
    /// live driver does not for a sans-IO recipe (it answers Unimplemented).
    AddWatch {
        path: Path,
        mode: AddWatchMode,
    },
    /// multiRead (ZooKeeper 3.6+): reads answered together at one point of
    /// the server's history, each with its own result or error; no watch,
    /// no zxid.
    MultiRead(Vec<ReadOp>),
    /// getEphemerals (3.6+): the paths of the session's ephemeral nodes
    /// that start with `prefix` as text (`/a` matches `/ab` too).
    GetEphemerals {
        prefix: Path,
    },
    /// getAllChildrenNumber (3.6+): how many nodes are under `path`, at any
    /// depth (NoNode if it does not exist).
    GetAllChildrenNumber {
        path: Path,
    },
    /// getACL: the node's ACL and stat (digest passwords shown as `x` to
    /// a session without ADMIN on it).
    GetAcl {
        path: Path,
    },
    /// setACL if the ACL version matches (`ANY_VERSION` for any).
    SetAcl {
        path: Path,
        acl: Acls,
        version: i32,
    },
    /// addAuth: the session authenticates as `auth` in `scheme` (for
    /// `digest`, `user:password`). Not a write: no zxid.
    AddAuth {
        scheme: String,
        auth: Vec<u8>,
    },
    /// whoAmI (3.7+): the identities the session has authenticated as.
    WhoAmI,
}

/// The mode of an [`Request::AddWatch`] (ZooKeeper's `AddWatchMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum AddWatchMode {
    /// NodeCreated, NodeDeleted, NodeDataChanged and NodeChildrenChanged of
    /// the path.
    Persistent,
    /// NodeCreated, NodeDeleted and NodeDataChanged of the path and of
    /// every node under it (no NodeChildrenChanged).
    PersistentRecursive,
}

/// A read inside a [`Request::MultiRead`] (it sets no watch).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReadOp {
    GetData { path: Path },
    GetChildren { path: Path },
}

impl ReadOp {
    /// The path the read is about.
    pub fn path(&self) -> &Path {
        match self {
            ReadOp::GetData { path } | ReadOp::GetChildren { path } => path,
        }
    }
}

/// An operation inside a multi.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MultiOp {
    Create {
        path: Path,
        data: Vec<u8>,
        mode: CreateMode,
        acl: Acls,
    },
    Delete {
        path: Path,
        version: i32,
    },
    SetData {
        path: Path,
        data: Vec<u8>,
        version: i32,
    },
    Check {
        path: Path,
        version: i32,
    },
}

impl Request {
    /// True for requests that change the tree (and consume a zxid).
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            Request::Create { .. }
                | Request::Delete { .. }
                | Request::SetData { .. }
                | Request::Check { .. }
                | Request::Multi(_)
                | Request::SetAcl { .. }
        )
    }

    /// True for requests that read (what the herd oracle counts as reads).
    pub fn is_read(&self) -> bool {
        matches!(
            self,
            Request::Exists { .. }
                | Request::GetData { .. }
                | Request::GetChildren { .. }
                | Request::GetChildren2 { .. }
                | Request::MultiRead(_)
                | Request::GetEphemerals { .. }
                | Request::GetAllChildrenNumber { .. }
                | Request::GetAcl { .. }
        )
    }

    /// True for a request that sets a watch: a read with its `watch` flag,
    /// or an addWatch.
    pub fn sets_watch(&self) -> bool {
        matches!(
            self,
            Request::Exists { watch: true, .. }
                | Request::GetData { watch: true, .. }
                | Request::GetChildren { watch: true, .. }
                | Request::GetChildren2 { watch: true, .. }
                | Request::AddWatch { .. }
        )
    }

    /// The path the request is about (`None` for a multi, a multi-read
    /// and the session's own requests, addAuth and whoAmI).
    pub fn path(&self) -> Option<&Path> {
        match self {
            Request::Create { path, .. }
            | Request::Delete { path, .. }
            | Request::Exists { path, .. }
            | Request::GetData { path, .. }
            | Request::SetData { path, .. }
            | Request::GetChildren { path, .. }
            | Request::GetChildren2 { path, .. }
            | Request::Check { path, .. }
            | Request::Sync { path }
            | Request::AddWatch { path, .. }
            | Request::GetAllChildrenNumber { path }
            | Request::GetAcl { path }
            | Request::SetAcl { path, .. }
            | Request::GetEphemerals { prefix: path } => Some(path),
            Request::Multi(_)
            | Request::MultiRead(_)
            | Request::AddAuth { .. }
            | Request::WhoAmI => None,
        }
    }
}

impl MultiOp {
    /// The same operation as a standalone request.
    pub fn to_request(&self) -> Request {
        match self.clone() {
            MultiOp::Create {
                path,
                data,
                mode,
                acl,
            } => Request::Create {
                path,
                data,
                mode,
                acl,
            },
            MultiOp::Delete { path, version } => Request::Delete { path, version },
            MultiOp::SetData {
                path,
                data,
                version,
            } => Request::SetData {
                path,
                data,
                version,
            },
            MultiOp::Check { path, version } => Request::Check { path, version },
        }
    }
}
