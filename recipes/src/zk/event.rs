//! Watch notifications and session state changes, as the Java client's
//! `WatchedEvent` delivers them.

use super::{Path, SessionId};
use serde::{Deserialize, Serialize};

/// What happened to the watched node; `None` for a connection state change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum EventType {
    None,
    NodeCreated,
    NodeDeleted,
    NodeDataChanged,
    NodeChildrenChanged,
}

/// The connection state when the event was generated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum KeeperState {
    Disconnected,
    SyncConnected,
    Expired,
}

/// One event handed to a watcher. Node events carry the path; state events
/// (`event_type == None`) carry none.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct WatchedEvent {
    pub event_type: EventType,
    pub state: KeeperState,
    pub path: Option<Path>,
}

impl WatchedEvent {
    /// A node event (NodeCreated, NodeDeleted, ...) in state SyncConnected.
    pub fn node(event_type: EventType, path: Path) -> WatchedEvent {
        WatchedEvent {
            event_type,
            state: KeeperState::SyncConnected,
            path: Some(path),
        }
    }

    /// A connection state change (type None, no path).
    pub fn state(state: KeeperState) -> WatchedEvent {
        WatchedEvent {
            event_type: EventType::None,
            state,
            path: None,
        }
    }
}

/// A change of the client's session as the recipe's default watcher sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum SessionEvent {
    /// Connected (first time, or again into the same session after a
    /// disconnect). After `Expired`, a `Connected` with a new id is a new
    /// session: a new handle, with no ephemerals and no watches.
    Connected { session_id: SessionId },
    /// The connection dropped; in-flight requests failed with ConnectionLoss.
    /// The session may still be alive on the server.
    Disconnected,
    /// The server expired the session: its ephemerals are gone and every
    /// request on this handle fails with SessionExpired.
    Expired,
}
