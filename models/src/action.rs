//! The model's actions: what the checker may choose to happen next. Progress
//! actions (a call, a request reaching the server, a reply or event reaching
//! its client, a timer, a reconnect or a failed reconnect attempt, a client
//! learning of its expiry, the
//! server reaping an empty container or expiring a session its client gave
//! up on) are always allowed; faults spend the budget of their kind.

use crate::faults::FaultKind;
use crate::state::ClientId;
use std::fmt;

/// One step of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    /// The client's application makes its next workload call.
    Call(ClientId),
    /// The server applies the client's next request; the reply joins the
    /// client's inbox. `order` picks the arrangement of a getChildren result
    /// (0 = sorted; other values only when all orders are enumerated).
    Send { client: ClientId, order: u16 },
    /// The client handles the head of its inbox (a reply or a watch event).
    Deliver(ClientId),
    /// The client's earliest pending timer fires.
    FireTimer(ClientId),
    /// A disconnected client reconnects to `server` (always 0 with one
    /// server; with an ensemble any server not behind the client's last
    /// zxid): into its session if the leader still has it (watches are
    /// re-registered), else it learns it expired and opens a new session
    /// there.
    Reconnect { client: ClientId, server: u8 },
    /// A disconnected client's reconnect attempt fails (the server is not
    /// reachable yet): the requests queued since the disconnect fail with
    /// ConnectionLoss, not applied, as the Java client's cleanup() does.
    /// Enabled only while something is queued; the client stays
    /// disconnected, so `Reconnect` remains possible after it.
    ReconnectFails(ClientId),
    /// A connected client whose session the server expired finds out: it
    /// sees Disconnected and Expired, then opens a new session on `server`
    /// (0 with one server). With an ensemble the client finds out once its
    /// own server applied the expiry.
    LearnExpiry { client: ClientId, server: u8 },
    /// Fault: the connection drops; queued replies and events are lost and
    /// requests in flight fail with ConnectionLoss.
    Disconnect(ClientId),
    /// Fault: the connection drops while the client's next request travels:
    /// the server applied it (`applied`, reply lost) or never saw it. The
    /// client sees ConnectionLoss either way.
    LoseRequest { client: ClientId, applied: bool },
    /// Fault: the server expires the client's session; the client does not
    /// know yet (a pause). `order` picks the order its ephemerals are
    /// deleted in (0 = path order; other values only when all orders are
    /// enumerated).
    Expire { client: ClientId, order: u16 },
    /// Fault: a disconnected client gives up on its session (client-side
    /// expiry, Curator 3.0+): it sees Expired and opens a new session on
    /// `server` (0 with one server), while the server keeps the old session
    /// and its ephemerals until [`Action::ExpireAbandoned`].
    ClientExpiry { client: ClientId, server: u8 },
    /// The server expires a session its client gave up on (its own timer
    /// ran out): the session of `client`'s `generation`, its ephemerals
    /// deleted in the `order`-th permutation of path order, their watches
    /// fired. Not a fault: the heal of [`Action::ClientExpiry`].
    ExpireAbandoned {
        client: ClientId,
        generation: u8,
        order: u16,
    },
    /// Fault: the leader is lost and every connected client is disconnected
    /// at once (as [`Action::Disconnect`] for each).
    LeaderLoss,
    /// Fault (opt-in): the watch event at `index` of the inbox overtakes
    /// the replies queued before it.
    Reorder { client: ClientId, index: u8 },
    /// Fault (opt-in): the client's `watch`-th armed watch fires although
    /// nothing changed.
    Spurious { client: ClientId, watch: u8 },
    /// The server's container reaper runs (`ZkServer::reap`): it deletes
    /// every container that had a child and has none left. Enabled only
    /// when there is one; the simulator's server does this on a timer.
    Reap,
    /// A follower of the ensemble applies its next committed transaction:
    /// the watches it fires and the answers that become ready at it reach
    /// their clients. Enabled while it lags.
    Apply { server: u8 },
}

impl Action {
    /// The client the action concerns (none for the server's [`Action::Reap`]
    /// and [`Action::Apply`]).
    pub fn client(self) -> Option<ClientId> {
        let client = match self {
            Action::Call(c)
            | Action::Deliver(c)
            | Action::FireTimer(c)
            | Action::ReconnectFails(c)
            | Action::Disconnect(c)
            | Action::Reconnect { client: c, .. }
            | Action::LearnExpiry { client: c, .. }
            | Action::Expire { client: c, .. }
            | Action::Send { client: c, .. }
            | Action::LoseRequest { client: c, .. }
            | Action::Reorder { client: c, .. }
            | Action::Spurious { client: c, .. }
            | Action::ClientExpiry { client: c, .. }
            | Action::ExpireAbandoned { client: c, .. } => c,
            Action::Reap | Action::Apply { .. } | Action::LeaderLoss => return None,
        };
        Some(client)
    }

    /// The fault kind the action spends, if it is a fault.
    pub fn fault(self) -> Option<FaultKind> {
        match self {
            Action::Disconnect(_) | Action::LoseRequest { .. } => Some(FaultKind::ConnectionLoss),
            Action::Expire { .. } => Some(FaultKind::Expiry),
            Action::Reorder { .. } => Some(FaultKind::Reorder),
            Action::Spurious { .. } => Some(FaultKind::Spurious),
            Action::ClientExpiry { .. } => Some(FaultKind::ClientExpiry),
            Action::LeaderLoss => Some(FaultKind::LeaderLoss),
            _ => None,
        }
    }

    /// True for the actions that move the system forward without a fault.
    pub fn is_progress(self) -> bool {
        self.fault().is_none()
    }

    /// The schedule operation name (see [`crate::schedule`]).
    pub fn op_name(self) -> &'static str {
        match self {
            Action::Call(_) => "call",
            Action::Send { .. } => "send",
            Action::Deliver(_) => "deliver",
            Action::FireTimer(_) => "fire_timer",
            Action::Reconnect { .. } => "reconnect",
            Action::ReconnectFails(_) => "reconnect_fails",
            Action::LearnExpiry { .. } => "learn_expiry",
            Action::Disconnect(_) => "disconnect",
            Action::LoseRequest { applied: true, .. } => "lose_reply",
            Action::LoseRequest { applied: false, .. } => "lose_request",
            Action::Expire { .. } => "expire",
            Action::Reorder { .. } => "deliver_event_early",
            Action::Spurious { .. } => "spurious_watch",
            Action::Reap => "reap",
            Action::Apply { .. } => "apply",
            Action::ClientExpiry { .. } => "client_expiry",
            Action::ExpireAbandoned { .. } => "expire_abandoned",
            Action::LeaderLoss => "leader_loss",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.client(), self) {
            (Some(client), _) => write!(f, "c{client} {}", self.op_name())?,
            (None, Action::Apply { server }) => write!(f, "server {server} {}", self.op_name())?,
            (None, Action::LeaderLoss) => write!(f, "{}", self.op_name())?,
            (None, _) => write!(f, "server {}", self.op_name())?,
        }
        match self {
            Action::Send { order, .. } if *order > 0 => write!(f, " (children order #{order})"),
            Action::Expire { order, .. } if *order > 0 => {
                write!(f, " (ephemerals deleted in order #{order})")
            }
            Action::ExpireAbandoned {
                generation, order, ..
            } => {
                write!(f, " (session #{generation})")?;
                match order {
                    0 => Ok(()),
                    n => write!(f, " (ephemerals deleted in order #{n})"),
                }
            }
            Action::Reconnect { server, .. }
            | Action::LearnExpiry { server, .. }
            | Action::ClientExpiry { server, .. }
                if *server > 0 =>
            {
                write!(f, " (to server {server})")
            }
            Action::Reorder { index, .. } => write!(f, " (inbox #{index})"),
            Action::Spurious { watch, .. } => write!(f, " (watch #{watch})"),
            _ => Ok(()),
        }
    }
}
