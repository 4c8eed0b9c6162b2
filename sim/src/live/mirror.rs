//! The oracles judge against an in-memory server ([`crate::oracles::View`]);
//! a live run has a real one. A mirror is an in-memory server holding what a
//! snapshot of the real tree showed: the same paths, ephemerals owned by the
//! same sessions, created in the same order (so creation zxids compare as
//! on the real server), and the sessions the driver knows alive.

use super::NodeInfo;
use crate::server::{ServerConfig, SortedOrder, ZkServer};
use std::collections::BTreeSet;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Request, SessionId};

/// The session the mirror creates persistent nodes with.
const MIRROR_ADMIN: SessionId = SessionId(i64::MAX - 1);
/// Mirror sessions never expire: the mirror has no clock.
const FOREVER_MS: u64 = u64::MAX / 4;

/// An in-memory server holding `nodes` (missing ancestors created as
/// persistent nodes) and the live sessions `alive`.
pub fn mirror(nodes: &[NodeInfo], alive: &[SessionId]) -> ZkServer {
    let mut server = ZkServer::new(ServerConfig::default());
    let mut open = BTreeSet::new();
    let mut ensure_session = |server: &mut ZkServer, id: SessionId| {
        if open.insert(id) {
            let _ = server.open_session(id, FOREVER_MS);
        }
    };
    ensure_session(&mut server, MIRROR_ADMIN);
    let mut ordered: Vec<&NodeInfo> = nodes.iter().collect();
    ordered.sort_by_key(|node| (node.czxid, node.path.as_str().len()));
    for node in ordered {
        create_ancestors(&mut server, &node.path);
        let (session, mode) = match node.ephemeral_owner {
            0 => (MIRROR_ADMIN, CreateMode::Persistent),
            owner => (SessionId(owner), CreateMode::Ephemeral),
        };
        ensure_session(&mut server, session);
        create(&mut server, session, &node.path, mode);
    }
    for id in alive {
        ensure_session(&mut server, *id);
    }
    server
}

fn create_ancestors(server: &mut ZkServer, path: &Path) {
    let mut ancestors = Vec::new();
    let mut current = path.parent();
    while let Some(parent) = current {
        if parent.as_str() == "/" || server.stat(&parent).is_some() {
            break;
        }
        current = parent.parent();
        ancestors.push(parent);
    }
    for ancestor in ancestors.into_iter().rev() {
        create(server, MIRROR_ADMIN, &ancestor, CreateMode::Persistent);
    }
}

fn create(server: &mut ZkServer, session: SessionId, path: &Path, mode: CreateMode) {
    let request = Request::Create {
        path: path.clone(),
        data: Vec::new(),
        mode,
        acl: Acls::Open,
    };
    // A node the snapshot listed twice, or whose parent vanished between
    // reads, is skipped: the mirror holds what it can.
    let _ = server.apply(session, &request, &mut SortedOrder);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(path: &str, czxid: i64, owner: i64) -> NodeInfo {
        NodeInfo {
            path: Path::new(path).unwrap(),
            czxid,
            ephemeral_owner: owner,
        }
    }

    #[test]
    fn keeps_creation_order_and_owners() {
        let nodes = [
            node("/r/locks/x-2", 9, 7),
            node("/r/locks", 3, 0),
            node("/r/locks/x-1", 12, 8),
        ];
        let server = mirror(&nodes, &[SessionId(5)]);
        let czxid = |p: &str| server.stat(&Path::new(p).unwrap()).unwrap().czxid;
        assert!(czxid("/r/locks") < czxid("/r/locks/x-2"));
        assert!(czxid("/r/locks/x-2") < czxid("/r/locks/x-1"));
        let owner = |p: &str| server.stat(&Path::new(p).unwrap()).unwrap().ephemeral_owner;
        assert_eq!(owner("/r/locks/x-2"), 7);
        assert_eq!(owner("/r/locks"), 0);
        assert!(server.is_session_alive(SessionId(5)));
        assert!(server.stat(&Path::new("/r").unwrap()).is_some());
    }
}
