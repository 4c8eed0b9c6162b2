//! The data tree: znodes keyed by full path, with the indexes ZooKeeper's
//! `DataTree` keeps (ephemerals per session, containers and TTL nodes).
//!
//! It applies already-validated changes the way `DataTree.createNode` /
//! `deleteNode` do (guards included) and returns each one as a [`Change`]:
//! what watches to fire, and what [`DataTree::undo`] needs to take it back
//! when a multi fails. Validation lives in [`super::writes`].

use super::node::{Node, NodeKind};
use std::collections::{BTreeMap, BTreeSet};
use zk_recipes::zk::{Acls, Path, SessionId, Zxid};

/// One applied change to the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    Created {
        path: Path,
        parent: Path,
        parent_child_creates_before: i32,
        parent_pzxid_before: Zxid,
    },
    Deleted {
        path: Path,
        parent: Path,
        node: Node,
        parent_pzxid_before: Zxid,
    },
    DataSet {
        path: Path,
        data_before: Vec<u8>,
        version_before: i32,
        mzxid_before: Zxid,
        mtime_before_ms: i64,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct DataTree {
    pub(super) nodes: BTreeMap<Path, Node>,
    pub(super) ephemerals: BTreeMap<SessionId, BTreeSet<Path>>,
    /// Containers and TTL nodes: the reaper's candidates.
    pub(super) reapable: BTreeSet<Path>,
}

impl DataTree {
    /// A tree holding only the root (all zero stats, like a fresh server).
    pub fn new() -> DataTree {
        let mut nodes = BTreeMap::new();
        nodes.insert(
            Path::root(),
            Node::new(Vec::new(), NodeKind::Persistent, Acls::Open, 0, 0),
        );
        DataTree {
            nodes,
            ephemerals: BTreeMap::new(),
            reapable: BTreeSet::new(),
        }
    }

    pub fn get(&self, path: &Path) -> Option<&Node> {
        self.nodes.get(path)
    }

    pub fn get_mut(&mut self, path: &Path) -> Option<&mut Node> {
        self.nodes.get_mut(path)
    }

    pub fn contains(&self, path: &Path) -> bool {
        self.nodes.contains_key(path)
    }

    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.nodes.keys()
    }

    /// The session's ephemerals in path order.
    pub fn ephemerals_of(&self, session: SessionId) -> impl Iterator<Item = &Path> {
        self.ephemerals.get(&session).into_iter().flatten()
    }

    /// Containers and TTL nodes in path order.
    pub fn reapable(&self) -> impl Iterator<Item = (&Path, &Node)> {
        self.reapable.iter().map(|path| (path, &self.nodes[path]))
    }

    /// Adds `node` at `path` under `parent` (which must exist) and moves the
    /// parent's counter to `next_child_creates` if that is larger
    /// (DataTree.createNode's guard: a wrapped counter does not move).
    pub fn create_node(
        &mut self,
        path: Path,
        parent: Path,
        node: Node,
        next_child_creates: i32,
        zxid: Zxid,
    ) -> Change {
        let parent_node = self
            .nodes
            .get_mut(&parent)
            .expect("create_node: the parent exists");
        let parent_child_creates_before = parent_node.child_creates;
        let parent_pzxid_before = parent_node.pzxid;
        if next_child_creates > parent_node.child_creates {
            parent_node.child_creates = next_child_creates;
            parent_node.pzxid = zxid;
        }
        parent_node.children.insert(path.name().to_string());
        self.index(&path, node.kind);
        self.nodes.insert(path.clone(), node);
        Change::Created {
            path,
            parent,
            parent_child_creates_before,
            parent_pzxid_before,
        }
    }

    /// Removes the node at `path` (it must exist and have no children).
    pub fn delete_node(&mut self, path: &Path, zxid: Zxid) -> Change {
        let parent = path
            .parent()
            .expect("delete_node: the root is never deleted");
        let node = self
            .nodes
            .remove(path)
            .expect("delete_node: the node exists");
        assert!(node.children.is_empty(), "delete_node: {path} has children");
        self.unindex(path, node.kind);
        let parent_node = self.nodes.get_mut(&parent).expect("a node's parent exists");
        parent_node.children.remove(path.name());
        let parent_pzxid_before = parent_node.pzxid;
        parent_node.pzxid = parent_node.pzxid.max(zxid);
        Change::Deleted {
            path: path.clone(),
            parent,
            node,
            parent_pzxid_before,
        }
    }

    /// Replaces the node's data; the version and the version check are the caller's.
    pub fn set_data(
        &mut self,
        path: &Path,
        data: Vec<u8>,
        version: i32,
        zxid: Zxid,
        time_ms: i64,
    ) -> Change {
        let node = self.nodes.get_mut(path).expect("set_data: the node exists");
        let change = Change::DataSet {
            path: path.clone(),
            data_before: std::mem::replace(&mut node.data, data),
            version_before: node.version,
            mzxid_before: node.mzxid,
            mtime_before_ms: node.mtime_ms,
        };
        node.version = version;
        node.mzxid = zxid;
        node.mtime_ms = time_ms;
        change
    }

    /// Takes back a change; changes must be undone newest first.
    pub fn undo(&mut self, change: Change) {
        match change {
            Change::Created {
                path,
                parent,
                parent_child_creates_before,
                parent_pzxid_before,
            } => {
                let node = self
                    .nodes
                    .remove(&path)
                    .expect("undo create: the node exists");
                self.unindex(&path, node.kind);
                let parent_node = self
                    .nodes
                    .get_mut(&parent)
                    .expect("undo create: the parent exists");
                parent_node.children.remove(path.name());
                parent_node.child_creates = parent_child_creates_before;
                parent_node.pzxid = parent_pzxid_before;
            }
            Change::Deleted {
                path,
                parent,
                node,
                parent_pzxid_before,
            } => {
                let parent_node = self
                    .nodes
                    .get_mut(&parent)
                    .expect("undo delete: the parent exists");
                parent_node.children.insert(path.name().to_string());
                parent_node.pzxid = parent_pzxid_before;
                self.index(&path, node.kind);
                self.nodes.insert(path, node);
            }
            Change::DataSet {
                path,
                data_before,
                version_before,
                mzxid_before,
                mtime_before_ms,
            } => {
                let node = self
                    .nodes
                    .get_mut(&path)
                    .expect("undo set_data: the node exists");
                node.data = data_before;
                node.version = version_before;
                node.mzxid = mzxid_before;
                node.mtime_ms = mtime_before_ms;
            }
        }
    }

    fn index(&mut self, path: &Path, kind: NodeKind) {
        match kind {
            NodeKind::Persistent => {}
            NodeKind::Ephemeral { owner } => {
                self.ephemerals
                    .entry(owner)
                    .or_default()
                    .insert(path.clone());
            }
            NodeKind::Container | NodeKind::Ttl { .. } => {
                self.reapable.insert(path.clone());
            }
        }
    }

    fn unindex(&mut self, path: &Path, kind: NodeKind) {
        match kind {
            NodeKind::Persistent => {}
            NodeKind::Ephemeral { owner } => {
                let paths = self
                    .ephemerals
                    .get_mut(&owner)
                    .expect("an ephemeral is indexed");
                paths.remove(path);
                if paths.is_empty() {
                    self.ephemerals.remove(&owner);
                }
            }
            NodeKind::Container | NodeKind::Ttl { .. } => {
                self.reapable.remove(path);
            }
        }
    }
}
