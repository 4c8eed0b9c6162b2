//! Why a property broke, in words: a diagnosis names a mechanism (a
//! short, stable name a sweep buckets failing seeds by) and explains each
//! client or node involved.
//!
//! - liveness (`stuck`): what each stuck client waits for (a watch on
//!   which path, set when, on a node that exists or not; a reply; a timer)
//!   and why nothing will wake it (the node is gone, its owner believes it
//!   released, its creator never learned its name, the recipe dropped the
//!   event, the watch went with an expired session);
//! - no leaks (`leaks`): each node left, its creator, and what became of
//!   the step that should have deleted it;
//! - mutual exclusion, one leader, fencing, FIFO (`holders`): both
//!   holders and how each got there.
//!
//! A diagnosis is computed from the run's [`History`] (recorded always)
//! and a [`Scene`]: the server and what each client's session layer holds
//! at the moment of the violation. Neither depends on the recipe's type,
//! so any driver that keeps a history can explain its violations.

pub use crate::finding;
mod history;
mod holders;
mod leaks;
mod stuck;

pub use crate::finding::{signature, Diagnosis, Finding, MECHANISMS};
pub use history::{ClientHistory, Ended, History, Hold, Listing, NodeRecord, Removal, WatchKind};

use crate::client::{ClientSession, ConnectionState, WatchTable};
use crate::oracles::{ClientIndex, Property, SimNanos, Violation};
use crate::server::ZkServer;
use std::collections::BTreeMap;
use zk_recipes::zk::{Request, SessionId};
use zk_recipes::Recipe;

/// What one client's session layer holds at the moment of a diagnosis.
#[derive(Clone, Debug)]
pub struct ClientScene {
    pub done: bool,
    pub paused: bool,
    pub state: ConnectionState,
    pub session: Option<SessionId>,
    /// Requests queued or in flight, as text.
    pub pending_requests: Vec<String>,
    pub timers: usize,
    pub watches: WatchTable,
    /// The last application call, as text, with its time.
    pub last_call: Option<(SimNanos, String)>,
    /// The last outcome the application took, as text, with its time
    /// (what the client holds); None where the driver does not know.
    pub last_outcome: Option<(SimNanos, String)>,
    /// The application's own timer (a hold, think or work time) while it
    /// runs: (started, due); None where the driver has none.
    pub workload_timer: Option<(SimNanos, SimNanos)>,
    /// Requests the session layer failed before they were sent (queued
    /// while disconnected; failed by the drop or a failed reconnect
    /// attempt), oldest first, with their time.
    pub unsent_failures: Vec<(SimNanos, Request)>,
}

impl ClientScene {
    /// What a diagnosis sees of one client, from its session layer: the
    /// one constructor every driver uses (the simulated world, the stepper).
    /// `done`: its workload has nothing left to wait for; `last_call`: the
    /// application's last call and its time.
    pub fn of<R: Recipe>(
        session: &ClientSession<R>,
        done: bool,
        paused: bool,
        last_call: Option<&(SimNanos, R::Call)>,
    ) -> ClientScene {
        ClientScene {
            done,
            paused,
            state: session.state,
            session: session.session_id,
            pending_requests: session
                .outgoing
                .iter()
                .chain(&session.in_flight)
                .map(|(_, request, _)| format!("{request:?}"))
                .collect(),
            timers: session.timers.len(),
            watches: session.watches.clone(),
            last_call: last_call.map(|(at, call)| (*at, format!("{call:?}"))),
            last_outcome: None,
            workload_timer: None,
            unsent_failures: session
                .unsent_failures
                .iter()
                .map(|(at_ms, request)| (at_ms.saturating_mul(1_000_000), request.clone()))
                .collect(),
        }
    }

    /// The last delete of `path` this client's session layer failed before
    /// sending it: its time.
    pub fn unsent_delete_of(&self, path: &zk_recipes::zk::Path) -> Option<SimNanos> {
        self.unsent_failures
            .iter()
            .rev()
            .find(|(_, request)| matches!(request, Request::Delete { path: p, .. } if p == path))
            .map(|(at, _)| *at)
    }
}

/// The world at the moment of a diagnosis.
pub struct Scene<'a> {
    pub server: &'a ZkServer,
    pub clients: Vec<ClientScene>,
    /// Which client each session belongs to.
    pub owners: &'a BTreeMap<SessionId, ClientIndex>,
    pub history: &'a History,
    /// The property checked FIFO order in this directory, if any.
    pub fifo_dir: Option<&'a zk_recipes::zk::Path>,
    /// The heal window (the liveness bound after the faults heal), in ms,
    /// where the driver has one (the simulated world).
    pub heal_ms: Option<u64>,
}

impl Scene<'_> {
    fn owner_client(&self, session: SessionId) -> Option<ClientIndex> {
        self.owners.get(&session).copied()
    }
}

/// Explains `violation` in `scene`.
pub fn diagnose(violation: &Violation, scene: &Scene) -> Diagnosis {
    match violation.property {
        Property::Liveness => stuck::diagnose(violation, scene),
        Property::NoLeaks => leaks::diagnose(violation, scene),
        Property::MutualExclusion | Property::OneLeader | Property::FencedMutualExclusion => {
            holders::exclusion(violation, scene)
        }
        // A queue's `fifo` is delivery order: the queue's diagnosis.
        Property::Fifo if crate::oracles::is_queue_order(violation) => queue(violation),
        Property::Fifo => holders::fifo(violation, scene),
        Property::Herd => plain(
            violation,
            "one-release-wakes-many",
            "one release woke more waiters than the bound allows: every contender watches the same node (the herd effect)",
        ),
        Property::ExactlyOnce => queue(violation),
        Property::Barrier => plain(
            violation,
            "passed-early",
            "a member passed the barrier before enough members had entered",
        ),
        Property::NodeChurn => plain(
            violation,
            "create-churn",
            "a client created more nodes than its attempts and its faults explain: it deletes and re-creates its node for no fault's reason",
        ),
        Property::Invariant if violation.invariant.is_some() => plain(
            violation,
            "reported",
            "the recipe reported that its own invariant broke",
        ),
        Property::Invariant => plain(
            violation,
            "refused-name",
            "the recipe reported an invariant under a name that cannot name one",
        ),
    }
}

fn plain(violation: &Violation, mechanism: &str, summary: &str) -> Diagnosis {
    Diagnosis {
        mechanism: mechanism.to_string(),
        summary: summary.to_string(),
        findings: vec![Finding::new(
            mechanism,
            violation.message.clone(),
            violation.events.join("; "),
        )],
    }
}

/// The queue oracle's messages name what went wrong with an item.
fn queue(violation: &Violation) -> Diagnosis {
    let message = &violation.message;
    let (mechanism, summary) = if message.contains("nobody offered") {
        (
            "phantom-item",
            "a consumer took an item no producer offered",
        )
    } else if message.contains("twice") {
        (
            "item-delivered-twice",
            "an item was delivered twice (a retried offer after a lost reply created it again, or two consumers took one head)",
        )
    } else if message.contains("never delivered") {
        (
            "item-lost",
            "an acknowledged item was never delivered (a consumer removed it but the item never reached the application: a delete whose reply was lost, then a retry took the next one)",
        )
    } else {
        (
            "out-of-order",
            "items were delivered out of the order they were offered in",
        )
    };
    plain(violation, mechanism, summary)
}

/// Attaches a diagnosis to every violation that has none yet, from
/// `scene` (the moment of the violation): what a driver calls after its
/// oracles reported something.
pub fn diagnose_undiagnosed(violations: &mut [Violation], scene: &Scene) {
    for violation in violations.iter_mut().filter(|v| v.diagnosis.is_none()) {
        violation.diagnosis = Some(diagnose(violation, scene));
    }
}

/// Picks the finding that names a run's mechanism: the first of
/// `findings` whose mechanism comes first in `priority` (a fixed order,
/// so a seed's signature does not depend on client numbering).
fn root<'a>(findings: &'a [Finding], priority: &[&str]) -> Option<&'a Finding> {
    findings.iter().min_by_key(|f| {
        priority
            .iter()
            .position(|p| *p == f.mechanism)
            .unwrap_or(priority.len())
    })
}

fn client_name(client: Option<ClientIndex>) -> String {
    client.map_or_else(
        || "a session no client holds".to_string(),
        |c| format!("c{c}"),
    )
}

#[cfg(test)]
mod tests {
    use super::history::{DeleteFate, History};
    use super::*;
    use zk_recipes::zk::Acls;
    use zk_recipes::zk::{CreateMode, Path, Reply, Request, SessionId, Stat, ZkError};

    #[test]
    fn every_mechanism_a_diagnosis_can_pick_is_listed() {
        for mechanism in stuck::PRIORITY.iter().chain(leaks::PRIORITY) {
            assert!(MECHANISMS.contains(mechanism), "{mechanism}");
        }
        let mut sorted = MECHANISMS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), MECHANISMS.len(), "no mechanism listed twice");
    }

    fn created(path: &str) -> Result<Reply, ZkError> {
        Ok(Reply::Created {
            path: Path::new(path).unwrap(),
            stat: Stat::default(),
        })
    }

    #[test]
    fn a_create_whose_reply_is_lost_stays_undelivered_and_a_lost_delete_is_recorded() {
        let mut history = History::new(2);
        let session = SessionId(7);
        let create = Request::Create {
            path: Path::new("/l/x-").unwrap(),
            data: Vec::new(),
            mode: CreateMode::EphemeralSequential,
            acl: Acls::Open,
        };
        history.applied(0, 10, session, &create, &created("/l/x-0000000000"));
        history.reply_lost(0, 11);
        let node = &history.nodes[&Path::new("/l/x-0000000000").unwrap()];
        assert!(!node.reply_delivered);
        assert_eq!(node.reply_lost_ns, Some(11));
        assert_eq!(node.owner, Some(session));

        history.applied(1, 20, SessionId(8), &create, &created("/l/x-0000000001"));
        history.reply_delivered(&created("/l/x-0000000001"));
        let delete = Request::Delete {
            path: Path::new("/l/x-0000000001").unwrap(),
            version: -1,
        };
        history.lost_before_apply(1, 30, &delete);
        let node = &history.nodes[&Path::new("/l/x-0000000001").unwrap()];
        assert!(node.reply_delivered);
        assert_eq!(node.deletes[0].fate, DeleteFate::LostBeforeApply);
        assert_eq!(node.removed, None, "a lost delete removes nothing");

        history.session_ended(0, 40, session, true);
        let node = &history.nodes[&Path::new("/l/x-0000000000").unwrap()];
        assert_eq!(
            node.removed,
            Some((40, Removal::SessionEnded { client: 0 }))
        );
    }

    /// A listing after a lost create reply and before another create
    /// lets the creator learn its node's name (not an orphan); one after
    /// another create, or one whose reply was lost, does not.
    #[test]
    fn a_listing_after_a_lost_create_reply_is_a_recovery_read() {
        let mut history = History::new(1);
        let create = Request::Create {
            path: Path::new("/l/x-").unwrap(),
            data: Vec::new(),
            mode: CreateMode::EphemeralSequential,
            acl: Acls::Open,
        };
        let list = Request::GetChildren {
            path: Path::new("/l").unwrap(),
            watch: false,
        };
        let children = |names: &[&str]| -> Result<Reply, ZkError> {
            Ok(Reply::Children(
                names.iter().map(|n| n.to_string()).collect(),
            ))
        };
        let first = Path::new("/l/x-0000000000").unwrap();
        history.applied(0, 10, SessionId(7), &create, &created("/l/x-0000000000"));
        history.reply_lost(0, 11);
        assert!(!history.nodes[&first].name_known());
        // The listing's reply is lost too: the client saw nothing.
        history.applied(0, 20, SessionId(7), &list, &children(&["x-0000000000"]));
        history.reply_lost(0, 21);
        assert!(!history.nodes[&first].name_known());
        history.applied(0, 30, SessionId(7), &list, &children(&["x-0000000000"]));
        assert_eq!(history.nodes[&first].recovered_ns, Some(30));
        assert!(history.nodes[&first].name_known());

        // Created again without reading: the second node's lost reply is
        // not recovered by a listing that comes after a third create.
        let second = Path::new("/l/x-0000000001").unwrap();
        history.applied(0, 40, SessionId(7), &create, &created("/l/x-0000000001"));
        history.reply_lost(0, 41);
        history.applied(0, 50, SessionId(7), &create, &created("/l/x-0000000002"));
        history.reply_delivered(&created("/l/x-0000000002"));
        let all = children(&["x-0000000000", "x-0000000001", "x-0000000002"]);
        history.applied(0, 60, SessionId(7), &list, &all);
        assert!(!history.nodes[&second].name_known());
    }

    #[test]
    fn a_watch_is_used_up_by_its_event_and_an_event_without_a_request_after_it_is_dropped() {
        let mut history = History::new(1);
        let path = Path::new("/l/x-0000000000").unwrap();
        let exists = Request::Exists {
            path: path.clone(),
            watch: true,
        };
        history.applied(0, 5, SessionId(1), &exists, &Ok(Reply::Exists(None)));
        assert!(history.clients[0]
            .watches
            .contains_key(&(WatchKind::Exist, path.clone())));
        let event = zk_recipes::zk::WatchedEvent::node(
            zk_recipes::zk::EventType::NodeCreated,
            path.clone(),
        );
        history.event_delivered(0, 9, &event, true);
        assert!(history.clients[0].watches.is_empty(), "one-shot: used up");
        assert_eq!(
            history.clients[0].last_event.as_ref().map(|e| e.2),
            Some(false)
        );
        history.sent(0, 10);
        assert_eq!(
            history.clients[0].last_event.as_ref().map(|e| e.2),
            Some(true)
        );
    }
}
