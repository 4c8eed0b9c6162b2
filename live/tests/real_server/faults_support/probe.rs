//! The recipe the sim side puts behind each `ClientSession`: it sends every
//! request it is given and reports everything the session layer hands it,
//! so the fault tests see the Java-client semantics that `ClientSession`
//! implements (ConnectionLoss for requests in flight, state events, watch
//! events after re-registration) exactly as a recipe would.

use zk_recipes::zk::{EventType, KeeperState, Request, SessionEvent, WatchedEvent, ZkResult};
use zk_recipes::{Input, Outbox, Recipe, Tag};

/// What the probe was told, in order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Seen {
    /// The answer to a request.
    Reply(ZkResult),
    /// A node event at an armed watch.
    Node(WatchedEvent),
    /// A connection state change, as the default watcher sees it.
    State(KeeperState),
    /// The same change delivered to one armed watch (the Java client does
    /// this; `zookeeper-client` has no equivalent, so it is not compared).
    WatchState(KeeperState),
}

/// Sends what it is called with; reports what it sees.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Probe;

/// Every request the probe sends carries this tag (replies come in order).
const REQUEST: Tag = Tag(0);

impl Recipe for Probe {
    type Call = Request;
    type Outcome = Seen;

    fn handle(&mut self, input: Input<Request>, out: &mut Outbox<Seen>) {
        match input {
            Input::Call(request) => out.send(REQUEST, request),
            Input::Reply { result, .. } => out.emit(Seen::Reply(result)),
            Input::Watch(event) | Input::WatcherEvent { event, .. }
                if event.event_type == EventType::None =>
            {
                out.emit(Seen::WatchState(event.state))
            }
            Input::Watch(event) | Input::WatcherEvent { event, .. } => out.emit(Seen::Node(event)),
            Input::Session(event) => out.emit(Seen::State(keeper_state(event))),
            Input::Timer(_) => {}
        }
    }
}

fn keeper_state(event: SessionEvent) -> KeeperState {
    match event {
        SessionEvent::Connected { .. } => KeeperState::SyncConnected,
        SessionEvent::Disconnected => KeeperState::Disconnected,
        SessionEvent::Expired => KeeperState::Expired,
    }
}
