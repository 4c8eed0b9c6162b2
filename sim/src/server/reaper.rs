//! ContainerManager: deletes containers that have had a child and have none
//! left, and TTL nodes without children not modified for longer than their
//! TTL. Candidates are chosen first, then deleted one transaction each.

use super::node::{Node, NodeKind};
use super::{Notification, ZkServer};
use zk_recipes::zk::Path;

impl ZkServer {
    pub(super) fn reap_candidates(&mut self) -> Vec<Notification> {
        let now_ms = self.now_ms;
        let doomed: Vec<Path> = self
            .tree
            .reapable()
            .filter(|(_, node)| is_due(node, now_ms))
            .map(|(path, _)| path.clone())
            .collect();
        let mut notifications = Vec::new();
        for path in &doomed {
            let zxid = self.next_zxid();
            let change = self.tree.delete_node(path, zxid);
            self.fire(&change, &mut notifications);
        }
        notifications
    }
}

/// ContainerManager.getCandidates for one node.
fn is_due(node: &Node, now_ms: i64) -> bool {
    if !node.children.is_empty() {
        return false;
    }
    match node.kind {
        // child_creates > 0: a container that never had a child is kept.
        NodeKind::Container => node.child_creates > 0,
        NodeKind::Ttl { ttl_ms } => now_ms.saturating_sub(node.mtime_ms) > ttl_ms,
        NodeKind::Persistent | NodeKind::Ephemeral { .. } => false,
    }
}
