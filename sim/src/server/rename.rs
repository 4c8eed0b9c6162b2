//! Renaming a server's identities (see `zk_recipes::rename`): its nodes'
//! paths, data, owners and zxids, each parent's sequence counter, the
//! watch tables and the live sessions. The model checker renames a state
//! through this to find its canonical form.

use super::node::{Node, NodeKind};
use super::sessions::SessionTable;
use super::shared::Shared;
use super::tree::DataTree;
use super::watches::{WatchTable, Watchers};
use super::ZkServer;
use std::collections::BTreeSet;
use zk_recipes::rename::{Rename, Renaming};
use zk_recipes::zk::{Path, SessionId};

impl Rename for ZkServer {
    fn rename(&mut self, r: &mut Renaming) {
        self.last_zxid = r.zxid(self.last_zxid);
        // Each part is built renamed from the shared one, not copied first
        // and then rebuilt (a write through `Shared` would copy it).
        self.tree = Shared::new(self.tree.renamed(r));
        self.watches = Shared::new(self.watches.renamed(r));
        self.sessions = Shared::new(self.sessions.renamed(r));
    }
}

impl DataTree {
    fn renamed(&self, r: &mut Renaming) -> DataTree {
        let nodes = self
            .nodes
            .iter()
            .map(|(path, node)| (r.path(path), node.renamed(path, r)))
            .collect();
        let ephemerals = self
            .ephemerals
            .iter()
            .map(|(session, paths)| (r.session(*session), rename_paths(paths, r)))
            .collect();
        DataTree {
            nodes,
            ephemerals,
            reapable: rename_paths(&self.reapable, r),
        }
    }
}

impl Node {
    /// The node at `path`, renamed.
    fn renamed(&self, path: &Path, r: &mut Renaming) -> Node {
        let mut kind = self.kind;
        if let NodeKind::Ephemeral { owner } = &mut kind {
            owner.rename(r);
        }
        Node {
            data: r.data(path, &self.data),
            kind,
            czxid: r.zxid(self.czxid),
            mzxid: r.zxid(self.mzxid),
            pzxid: r.zxid(self.pzxid),
            // The counter is the next sequence number to be given.
            child_creates: match self.child_creates {
                0 => 0,
                creates => r.sequence(path, creates),
            },
            children: self.children.iter().map(|c| r.name(path, c)).collect(),
            acl: self.acl.clone(),
            ..*self
        }
    }
}

impl WatchTable {
    fn renamed(&self, r: &mut Renaming) -> WatchTable {
        let table = |table: &Watchers, r: &mut Renaming| {
            table
                .iter()
                .map(|(path, sessions)| {
                    let path = r.path(path);
                    let sessions = sessions.iter().map(|(s, m)| (r.session(*s), *m));
                    (path, sessions.collect())
                })
                .collect()
        };
        WatchTable {
            data: table(&self.data, r),
            child: table(&self.child, r),
            recursive: self
                .recursive
                .iter()
                .map(|(path, sessions)| (r.path(path), rename_sessions(sessions, r)))
                .collect(),
        }
    }
}

impl SessionTable {
    fn renamed(&self, r: &Renaming) -> SessionTable {
        SessionTable {
            live: self
                .live
                .iter()
                .map(|(session, state)| (r.session(*session), state.clone()))
                .collect(),
        }
    }
}

fn rename_paths(paths: &BTreeSet<Path>, r: &mut Renaming) -> BTreeSet<Path> {
    paths.iter().map(|path| r.path(path)).collect()
}

fn rename_sessions(sessions: &BTreeSet<SessionId>, r: &Renaming) -> BTreeSet<SessionId> {
    sessions.iter().map(|s| r.session(*s)).collect()
}
