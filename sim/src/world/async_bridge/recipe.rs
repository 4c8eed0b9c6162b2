//! The sans-IO side of an async recipe: a pass-through machine the session
//! layer drives like any recipe. Its calls are the application's requests
//! (each with its own id) and what the application reports it saw; its
//! outcomes are the replies, the watch events and the session's states, for
//! the async client to hand to the future or watcher waiting for each, and
//! the reports, for the oracles.
//!
//! Every request that sets a watch registers a watcher of its own (its id):
//! a `OneshotWatcher` of the `zookeeper-client` crate is one object per
//! call, as a Java `new Watcher() { .. }` per call is. Such a watcher hears a
//! node event, or the session's end (Expired), never Disconnected or
//! SyncConnected: the crate's one-shot watchers do not see those. A
//! persistent watcher (an addWatch's, the crate's `PersistentWatcher`)
//! hears every node event its watch fires and every state change.

use crate::oracles::{CallObservation, ObserveCall};
use std::collections::BTreeSet;
use zk_recipes::zk::{KeeperState, Request, SessionEvent, WatchedEvent, ZkResult};
use zk_recipes::{
    ClientLibrary, HoldId, Input, Observation, Observe, Outbox, Recipe, Tag, WatcherId,
};

/// What the application does: a request, or a report for the oracles.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ApiCall {
    /// A request on the session, answered by `ApiOutcome::Reply` with this
    /// id; a watch it sets is the watcher with this id.
    Request { id: u32, request: Request },
    /// The application starts or stops something the oracles judge
    /// (acquiring, releasing, entering, leaving, ...), about one of its holds.
    Doing { hold: HoldId, call: CallObservation },
    /// The application saw an outcome the oracles judge (acquired with a
    /// token, lost, took an item, ...), about one of its holds.
    Saw {
        hold: HoldId,
        observation: Observation,
    },
}

impl ObserveCall for ApiCall {
    fn observe_call(&self) -> CallObservation {
        match self {
            ApiCall::Doing { call, .. } => call.clone(),
            ApiCall::Request { .. } | ApiCall::Saw { .. } => CallObservation::Other,
        }
    }

    fn hold(&self) -> HoldId {
        match self {
            ApiCall::Doing { hold, .. } | ApiCall::Saw { hold, .. } => *hold,
            ApiCall::Request { .. } => HoldId::FIRST,
        }
    }
}

/// What the session hands back.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ApiOutcome {
    Reply {
        id: u32,
        result: ZkResult,
    },
    /// An event for the watcher a request with this id set.
    Watch {
        id: u32,
        event: WatchedEvent,
    },
    /// A state change of the session (Connected carries a new session's id).
    Session(SessionEvent),
    /// A report of the application's (`ApiCall::Saw`), for the oracles.
    Saw {
        hold: HoldId,
        observation: Observation,
    },
}

impl Observe for ApiOutcome {
    /// Only reports are judged; asked of anything else, a neutral failure
    /// (drivers call [`Observe::observed`], which skips them).
    fn observe(&self) -> Observation {
        self.observed().unwrap_or(Observation::Failed {
            reason: "not an observation".to_string(),
        })
    }

    fn observed(&self) -> Option<Observation> {
        match self {
            ApiOutcome::Saw { observation, .. } => Some(observation.clone()),
            _ => None,
        }
    }

    fn hold(&self) -> HoldId {
        match self {
            ApiOutcome::Saw { hold, .. } => *hold,
            _ => HoldId::FIRST,
        }
    }
}

/// The pass-through machine. It keeps only which watchers are persistent:
/// the session layer keeps the connection's state, the async client the
/// application's.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ApiRecipe {
    /// The ids of the addWatch requests sent: their watchers hear state
    /// changes too.
    persistent: BTreeSet<u32>,
}

impl Recipe for ApiRecipe {
    type Call = ApiCall;
    type Outcome = ApiOutcome;
    const CLIENT_LIBRARY: ClientLibrary = ClientLibrary::ZookeeperClientRust;

    fn handle(&mut self, input: Input<ApiCall>, out: &mut Outbox<ApiOutcome>) {
        match input {
            Input::Call(ApiCall::Request { id, request }) => {
                if matches!(request, Request::AddWatch { .. }) {
                    self.persistent.insert(id);
                }
                if request.sets_watch() {
                    out.send_watched(Tag(id), request, WatcherId(id));
                } else {
                    out.send(Tag(id), request);
                }
            }
            Input::Call(ApiCall::Doing { .. }) => {}
            Input::Call(ApiCall::Saw { hold, observation }) => {
                out.emit(ApiOutcome::Saw { hold, observation })
            }
            Input::Reply { tag, result } => out.emit(ApiOutcome::Reply { id: tag.0, result }),
            Input::WatcherEvent { watcher, event }
                if reaches_oneshot_watcher(&event) || self.persistent.contains(&watcher.0) =>
            {
                out.emit(ApiOutcome::Watch {
                    id: watcher.0,
                    event,
                })
            }
            Input::Session(event) => out.emit(ApiOutcome::Session(event)),
            // Connection states for a watcher, events for the default watcher
            // (none is registered: a spurious fault's event reaches nobody),
            // timers (none is set).
            Input::WatcherEvent { .. } | Input::Watch(_) | Input::Timer(_) => {}
        }
    }
}

/// A node event, or the session's end; not Disconnected nor SyncConnected.
fn reaches_oneshot_watcher(event: &WatchedEvent) -> bool {
    event.path.is_some() || event.state == KeeperState::Expired
}
