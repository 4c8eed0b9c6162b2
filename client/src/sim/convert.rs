//! The simulated server's values (`zk_recipes::zk`) as the real crate's
//! and back: stats, ACLs, identities, watch events and session states.

use super::paths::Root;
use upstream::{Acl, AuthId, AuthUser, EventType, Permission, SessionState, Stat, WatchedEvent};
use zk_recipes::zk;
use zk_sim::client::ConnectionState;

pub(crate) fn stat(stat: zk::Stat) -> Stat {
    Stat {
        czxid: stat.czxid,
        mzxid: stat.mzxid,
        pzxid: stat.pzxid,
        ctime: stat.ctime_ms,
        mtime: stat.mtime_ms,
        version: stat.version,
        cversion: stat.cversion,
        aversion: stat.aversion,
        ephemeral_owner: stat.ephemeral_owner,
        data_length: stat.data_length,
        num_children: stat.num_children,
    }
}

/// The crate's permission bits, each with ZooKeeper's value.
const PERMISSIONS: [(Permission, i32); 5] = [
    (Permission::READ, 1),
    (Permission::WRITE, 2),
    (Permission::CREATE, 4),
    (Permission::DELETE, 8),
    (Permission::ADMIN, 16),
];

/// The crate's ACL list as the simulated server's (what the real crate
/// serializes).
pub(crate) fn acls_to_zk(acls: &[Acl]) -> zk::Acls {
    let entries = acls.iter().map(|acl| {
        let bits = PERMISSIONS
            .iter()
            .filter(|(permission, _)| acl.permission().has(*permission))
            .fold(0, |bits, (_, bit)| bits | bit);
        zk::Acl {
            perms: zk::Perms(bits),
            id: zk::AuthId::new(acl.scheme(), acl.id()),
        }
    });
    zk::Acls::of(entries.collect())
}

/// The simulated server's ACL list as the crate's.
pub(crate) fn acls_from_zk(acls: &zk::Acls) -> Vec<Acl> {
    let permission = |perms: zk::Perms| {
        PERMISSIONS
            .iter()
            .filter(|(_, bit)| perms.0 & bit != 0)
            .fold(Permission::NONE, |permission, (flag, _)| permission | *flag)
    };
    acls.entries()
        .into_iter()
        .map(|acl| {
            Acl::new(
                permission(acl.perms),
                AuthId::new(&acl.id.scheme, &acl.id.id),
            )
        })
        .collect()
}

/// whoAmI's identities as the crate's users.
pub(crate) fn auth_users(ids: &[zk::AuthId]) -> Vec<AuthUser> {
    ids.iter()
        .map(|id| AuthUser::new(&id.scheme, &id.id))
        .collect()
}

pub(crate) fn session_state(state: ConnectionState) -> SessionState {
    match state {
        ConnectionState::Connected => SessionState::SyncConnected,
        ConnectionState::Disconnected => SessionState::Disconnected,
        ConnectionState::Expired => SessionState::Expired,
    }
}

fn keeper_state(state: zk::KeeperState) -> SessionState {
    match state {
        zk::KeeperState::SyncConnected => SessionState::SyncConnected,
        zk::KeeperState::Disconnected => SessionState::Disconnected,
        zk::KeeperState::Expired => SessionState::Expired,
    }
}

/// A watch event as a `OneshotWatcher` hands it: node paths seen from the
/// client's root.
pub(crate) fn watched_event(event: zk::WatchedEvent, root: &Root) -> WatchedEvent {
    let node_event = match event.event_type {
        zk::EventType::None => None,
        zk::EventType::NodeCreated => Some(EventType::NodeCreated),
        zk::EventType::NodeDeleted => Some(EventType::NodeDeleted),
        zk::EventType::NodeDataChanged => Some(EventType::NodeDataChanged),
        zk::EventType::NodeChildrenChanged => Some(EventType::NodeChildrenChanged),
    };
    match (node_event, event.path) {
        (Some(event_type), Some(path)) => {
            let path = root
                .strip(path.as_str())
                .unwrap_or_else(|_| path.as_str().to_string());
            WatchedEvent::new(event_type, path).with_zxid(WatchedEvent::NO_ZXID)
        }
        _ => WatchedEvent::new_session(keeper_state(event.state)),
    }
}
