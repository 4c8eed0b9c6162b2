//! Watchers: [`StateWatcher`] (a session's states, with the real crate's
//! watch-channel semantics), [`OneshotWatcher`] (one node event, or the
//! session's end) and [`PersistentWatcher`] (an addWatch's node events and
//! the session's states).

use super::convert;
use super::paths::Root;
use std::fmt;
use upstream::{Error, SessionState, WatchedEvent};
use zk_recipes::zk::SessionId as ZkSessionId;
use zk_sim::async_recipe::{Bridge, PersistentEvents, WatchEvent};

/// Tracks a session's state: `state` consumes the latest, `changed` waits
/// for one after the last consumed and returns the latest; after a terminal
/// state was consumed, `changed` pends forever.
#[derive(Clone)]
pub struct StateWatcher {
    bridge: Bridge,
    session: ZkSessionId,
    /// How many of the session's states were consumed.
    seen: usize,
}

impl StateWatcher {
    pub(crate) fn new(bridge: Bridge, session: ZkSessionId) -> StateWatcher {
        let seen = bridge.states_seen(session);
        StateWatcher {
            bridge,
            session,
            seen,
        }
    }

    /// Returns and consumes the latest state.
    pub fn state(&mut self) -> SessionState {
        self.seen = self.bridge.states_seen(self.session);
        self.peek_state()
    }

    /// Waits until the state changed and returns (consumes) the latest.
    ///
    /// Pends forever once a terminal state was consumed.
    pub async fn changed(&mut self) -> SessionState {
        let (seen, state) = self.bridge.state_after(self.session, self.seen).await;
        self.seen = seen;
        convert::session_state(state)
    }

    /// Returns the latest state without consuming it.
    pub fn peek_state(&self) -> SessionState {
        convert::session_state(self.bridge.state(self.session))
    }
}

impl fmt::Debug for StateWatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateWatcher")
            .field("session", &self.session)
            .field("seen", &self.seen)
            .finish()
    }
}

/// One watch a read set: hears one node event, or the session's end
/// (`EventType::Session` with `SessionState::Expired`); never Disconnected.
pub struct OneshotWatcher {
    root: Root,
    event: WatchEvent,
}

impl OneshotWatcher {
    pub(crate) fn new(root: Root, event: WatchEvent) -> OneshotWatcher {
        OneshotWatcher { root, event }
    }

    /// Waits for the node event or the session's end.
    pub async fn changed(self) -> WatchedEvent {
        let event = self.event.await;
        convert::watched_event(event, &self.root)
    }

    /// Removes this watcher (dropping it does the same).
    #[deprecated(since = "0.10.0", note = "Rust has Drop")]
    pub async fn remove(self) -> Result<(), Error> {
        Ok(())
    }
}

impl fmt::Debug for OneshotWatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OneshotWatcher")
            .field("root", &self.root.path())
            .finish_non_exhaustive()
    }
}

/// A persistent or recursive watch (`Client::watch`): hears every node
/// event its watch fires, in order, and every state change of the session
/// (Disconnected, SyncConnected, Expired), as the crate's does. Dropping it
/// removes the watch from the session.
///
/// Differs from the crate: after the session's end (Expired) was handed
/// out, `changed` pends forever (the crate panics).
pub struct PersistentWatcher {
    root: Root,
    events: PersistentEvents,
    ended: bool,
}

impl PersistentWatcher {
    pub(crate) fn new(root: Root, events: PersistentEvents) -> PersistentWatcher {
        PersistentWatcher {
            root,
            events,
            ended: false,
        }
    }

    /// Waits for the next event: a node event or a session state.
    pub async fn changed(&mut self) -> WatchedEvent {
        if self.ended {
            return std::future::pending().await;
        }
        let event = convert::watched_event(self.events.next().await, &self.root);
        self.ended = event.session_state.is_terminated();
        event
    }

    /// Removes this watcher (dropping it does the same).
    #[deprecated(since = "0.10.0", note = "Rust has Drop")]
    pub async fn remove(self) -> Result<(), Error> {
        Ok(())
    }
}

impl fmt::Debug for PersistentWatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PersistentWatcher")
            .field("root", &self.root.path())
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}
