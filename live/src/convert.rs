//! Translations between the `zookeeper-client` crate's types and the
//! vocabulary of `zk_recipes::zk`: stats, create modes, errors and events.
//!
//! The vocabulary has no ACLs, authentication or quotas, so the client errors
//! about those cannot occur against a server used as this crate intends; they
//! are treated as programmer errors (a panic that names the error).

use std::time::Duration;
use zk_recipes::zk::{CreateMode, EventType, Path, Stat, WatchedEvent, ZkError};
use zookeeper_client as zkc;

/// A znode's stat in the vocabulary, field for field.
pub fn stat_from_client(stat: &zkc::Stat) -> Stat {
    Stat {
        czxid: stat.czxid,
        mzxid: stat.mzxid,
        pzxid: stat.pzxid,
        ctime_ms: stat.ctime,
        mtime_ms: stat.mtime,
        version: stat.version,
        cversion: stat.cversion,
        aversion: stat.aversion,
        ephemeral_owner: stat.ephemeral_owner,
        data_length: stat.data_length,
        num_children: stat.num_children,
    }
}

/// The client's create options for a mode (world-readable, world-writable
/// ACL). A TTL below 1 ms is refused before anything is sent, with the
/// `BadArguments` the server itself answers to it.
pub fn create_options(mode: CreateMode) -> Result<zkc::CreateOptions<'static>, ZkError> {
    let acls = zkc::Acls::anyone_all();
    let options = match mode {
        CreateMode::Persistent => zkc::CreateMode::Persistent.with_acls(acls),
        CreateMode::Ephemeral => zkc::CreateMode::Ephemeral.with_acls(acls),
        CreateMode::PersistentSequential => zkc::CreateMode::PersistentSequential.with_acls(acls),
        CreateMode::EphemeralSequential => zkc::CreateMode::EphemeralSequential.with_acls(acls),
        CreateMode::Container => zkc::CreateMode::Container.with_acls(acls),
        CreateMode::PersistentWithTtl { ttl_ms } => zkc::CreateMode::Persistent
            .with_acls(acls)
            .with_ttl(ttl(ttl_ms)?),
        CreateMode::PersistentSequentialWithTtl { ttl_ms } => zkc::CreateMode::PersistentSequential
            .with_acls(acls)
            .with_ttl(ttl(ttl_ms)?),
    };
    Ok(options)
}

fn ttl(ttl_ms: i64) -> Result<Duration, ZkError> {
    let ttl_ms = u64::try_from(ttl_ms).map_err(|_| ZkError::BadArguments)?;
    if ttl_ms == 0 {
        return Err(ZkError::BadArguments);
    }
    Ok(Duration::from_millis(ttl_ms))
}

/// The vocabulary's error for a client error.
///
/// `ClientClosed` becomes `SessionExpired` (the handle is dead for good);
/// errors that mean "the server could not be reached or refused to serve
/// now" become `ConnectionLoss`, whose contract (the request may or may not
/// have been applied) covers them.
pub fn error_from_client(error: &zkc::Error) -> ZkError {
    use zkc::Error as E;
    match error {
        E::NoNode => ZkError::NoNode,
        E::NodeExists => ZkError::NodeExists,
        E::NotEmpty => ZkError::NotEmpty,
        E::BadVersion => ZkError::BadVersion,
        E::NoChildrenForEphemerals => ZkError::NoChildrenForEphemerals,
        E::BadArguments(_) => ZkError::BadArguments,
        E::Unimplemented => ZkError::Unimplemented,
        E::RuntimeInconsistent => ZkError::RuntimeInconsistency,
        // `Custom` is how the client reports its own connection giving up
        // ("no response from connection in 1600ms"): a connection loss.
        E::ConnectionLoss
        | E::NoHosts
        | E::Throttled
        | E::SessionMoved
        | E::NotReadOnly
        | E::Custom(_) => ZkError::ConnectionLoss,
        E::SessionExpired | E::ClientClosed => ZkError::SessionExpired,
        E::Timeout => ZkError::OperationTimeout,
        other => panic!(
            "the real server answered {other:?}, which zk_recipes::zk::ZkError cannot express \
             (ACLs, authentication and quotas are not modelled)"
        ),
    }
}

/// The vocabulary's event for a node event; `None` for the client's session
/// events, which the session reports from its state instead.
pub fn event_from_client(event: &zkc::WatchedEvent) -> Option<WatchedEvent> {
    let event_type = match event.event_type {
        zkc::EventType::Session => return None,
        zkc::EventType::NodeCreated => EventType::NodeCreated,
        zkc::EventType::NodeDeleted => EventType::NodeDeleted,
        zkc::EventType::NodeDataChanged => EventType::NodeDataChanged,
        zkc::EventType::NodeChildrenChanged => EventType::NodeChildrenChanged,
    };
    let path = Path::new(event.path.as_str())
        .unwrap_or_else(|error| panic!("the server sent an event for an invalid path: {error}"));
    Some(WatchedEvent::node(event_type, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_must_be_positive() {
        assert_eq!(ttl(0), Err(ZkError::BadArguments));
        assert_eq!(ttl(-5), Err(ZkError::BadArguments));
        assert_eq!(ttl(250), Ok(Duration::from_millis(250)));
        assert!(create_options(CreateMode::PersistentWithTtl { ttl_ms: 0 }).is_err());
        assert!(create_options(CreateMode::PersistentSequentialWithTtl { ttl_ms: 10 }).is_ok());
    }

    #[test]
    fn errors_map_to_the_vocabulary() {
        assert_eq!(error_from_client(&zkc::Error::NotEmpty), ZkError::NotEmpty);
        assert_eq!(
            error_from_client(&zkc::Error::ClientClosed),
            ZkError::SessionExpired
        );
        assert_eq!(
            error_from_client(&zkc::Error::RuntimeInconsistent),
            ZkError::RuntimeInconsistency
        );
        assert_eq!(
            error_from_client(&zkc::Error::Timeout),
            ZkError::OperationTimeout
        );
    }
}
