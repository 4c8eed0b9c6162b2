//! Renaming a server's identities (see `zk_recipes::rename`): its nodes'
//! paths, data, owners and zxids, each parent's sequence counter, the
//! watch tables and the live sessions. The model checker renames a state
//! through this to find its canonical form.

use super::node::NodeKind;
use super::sessions::SessionTable;
use super::tree::DataTree;
use super::watches::WatchTable;
use super::ZkServer;
use std::collections::{BTreeMap, BTreeSet};
use zk_recipes::rename::{Rename, Renaming};
use zk_recipes::zk::{Path, SessionId};

impl Rename for ZkServer {
    fn rename(&mut self, r: &mut Renaming) {
        self.last_zxid = r.zxid(self.last_zxid);
        self.tree.rename(r);
        self.watches.rename(r);
        self.sessions.rename(r);
    }
}

impl Rename for DataTree {
    fn rename(&mut self, r: &mut Renaming) {
        let nodes = std::mem::take(&mut self.nodes);
        self.nodes = nodes
            .into_iter()
            .map(|(path, mut node)| {
                node.data = r.data(&path, &node.data);
                if let NodeKind::Ephemeral { owner } = &mut node.kind {
                    owner.rename(r);
                }
                node.czxid = r.zxid(node.czxid);
                node.mzxid = r.zxid(node.mzxid);
                node.pzxid = r.zxid(node.pzxid);
                if node.child_creates != 0 {
                    // The counter is the next sequence number to be given.
                    node.child_creates = r.sequence(&path, node.child_creates);
                }
                node.children = node.children.iter().map(|c| r.name(&path, c)).collect();
                (r.path(&path), node)
            })
            .collect();
        let ephemerals = std::mem::take(&mut self.ephemerals);
        self.ephemerals = ephemerals
            .into_iter()
            .map(|(session, paths)| (r.session(session), rename_paths(paths, r)))
            .collect();
        self.reapable = rename_paths(std::mem::take(&mut self.reapable), r);
    }
}

impl Rename for WatchTable {
    fn rename(&mut self, r: &mut Renaming) {
        for table in [&mut self.data, &mut self.child] {
            *table = std::mem::take(table)
                .into_iter()
                .map(|(path, sessions)| (r.path(&path), rename_sessions(sessions, r)))
                .collect();
        }
    }
}

impl Rename for SessionTable {
    fn rename(&mut self, r: &mut Renaming) {
        self.live = std::mem::take(&mut self.live)
            .into_iter()
            .map(|(session, state)| (r.session(session), state))
            .collect::<BTreeMap<_, _>>();
    }
}

fn rename_paths(paths: BTreeSet<Path>, r: &mut Renaming) -> BTreeSet<Path> {
    paths.iter().map(|path| r.path(path)).collect()
}

fn rename_sessions(sessions: BTreeSet<SessionId>, r: &Renaming) -> BTreeSet<SessionId> {
    sessions.into_iter().map(|s| r.session(s)).collect()
}
