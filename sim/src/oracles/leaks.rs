//! No leaked nodes: once the workload is over, only the nodes that existed
//! before it started may remain (the recipe's parent directories, created
//! by the scenario's setup). Containers the server reaps do not count.

use crate::server::{NodeKind, ZkServer};
use std::collections::BTreeSet;
use zk_recipes::zk::{Path, SessionId};

/// The nodes present now that were not there before the workload, one
/// line each with the owner of ephemerals.
pub fn leaked_nodes(server: &ZkServer, initial_paths: &BTreeSet<Path>) -> Vec<String> {
    leaked_nodes_with_owners(server, initial_paths, &|_| None)
}

/// As [`leaked_nodes`], with what `owner_of` says of an ephemeral's session
/// (a live run: which client's current session it is).
pub fn leaked_nodes_with_owners(
    server: &ZkServer,
    initial_paths: &BTreeSet<Path>,
    owner_of: &dyn Fn(SessionId) -> Option<String>,
) -> Vec<String> {
    server
        .paths()
        .into_iter()
        .filter(|path| !initial_paths.contains(path))
        .map(|path| {
            let kind = match server.node_kind(&path) {
                Some(NodeKind::Ephemeral { owner }) => match owner_of(owner) {
                    Some(whose) => format!("ephemeral of session {:#x}, {whose}", owner.0),
                    None => format!("ephemeral of session {:#x}", owner.0),
                },
                Some(NodeKind::Container)
                    if server.stat(&path).is_some_and(|s| s.num_children == 0) =>
                {
                    "empty container that never had a child, so never reaped".to_string()
                }
                Some(NodeKind::Container) => "container".to_string(),
                Some(NodeKind::Ttl { ttl_ms }) => format!("TTL {ttl_ms} ms"),
                Some(NodeKind::Persistent) | None => "persistent".to_string(),
            };
            format!("{path} ({kind})")
        })
        .collect()
}
