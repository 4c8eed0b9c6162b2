//! Runs a script on the in-memory server (`zk_sim::server::ZkServer`).
//!
//! A real server reaps containers on its own, within its check interval
//! (100 ms here) of the moment one became empty. So that both sides stay
//! comparable at every step, after each step the sim asks a copy of itself
//! whether a reap would remove anything; if so it reaps now (clock advanced
//! by [`SETTLE_MS`]) and tells the live side to wait as long before it
//! collects that step's events.

use super::outcome::{Normalizer, StepOutcome};
use super::script::{rebase, Script, Step};
use std::collections::BTreeMap;
use zk_recipes::zk::{CreateMode, Path, Request, SessionId};
use zk_sim::server::{Notification, ServerConfig, SortedOrder, ZkServer};

/// How long the live side waits for the server's container manager to act.
pub const SETTLE_MS: u64 = 500;

const SESSION_TIMEOUT_MS: u64 = 10_000;

/// The sim's outcomes, and per step how long the live side must let the
/// server reap after it (0: no reap due).
pub struct SimRun {
    pub outcomes: Vec<StepOutcome>,
    pub settle_ms: Vec<u64>,
}

pub fn run(script: &Script, root: &Path) -> SimRun {
    let session_ids: Vec<SessionId> = (0..script.sessions)
        .map(|i| SessionId(0x5157_0000 + i as i64))
        .collect();
    let mut server = ZkServer::new(ServerConfig::default());
    for id in &session_ids {
        server
            .open_session(*id, SESSION_TIMEOUT_MS)
            .expect("fresh session ids");
    }
    let create_root = Request::Create {
        path: root.clone(),
        data: Vec::new(),
        mode: CreateMode::Persistent,
    };
    let applied = server.apply(session_ids[0], &create_root, &mut SortedOrder);
    assert!(
        applied.result.is_ok(),
        "sim: creating the root failed: {:?}",
        applied.result
    );

    let normalizer = Normalizer {
        root,
        session_ids: &session_ids,
    };
    let mut run = SimRun {
        outcomes: Vec::new(),
        settle_ms: Vec::new(),
    };
    for step in &script.steps {
        let (result, mut notifications) = match step {
            Step::Apply { session, request } => {
                let applied = server.apply(
                    session_ids[*session],
                    &rebase(request, root),
                    &mut SortedOrder,
                );
                (
                    Some(normalizer.result(&applied.result)),
                    applied.notifications,
                )
            }
            // Closing a closed session is a no-op, as on the live side.
            Step::Close { session } => (
                None,
                server
                    .close_session(session_ids[*session])
                    .unwrap_or_default(),
            ),
            Step::Wait { ms } => (None, advance_and_reap(&mut server, *ms)),
        };
        let settle_ms = if reap_is_due(&server) { SETTLE_MS } else { 0 };
        if settle_ms > 0 {
            notifications.extend(advance_and_reap(&mut server, settle_ms));
        }
        let events = events_by_session(&normalizer, &session_ids, &notifications);
        run.outcomes.push(StepOutcome { result, events });
        run.settle_ms.push(settle_ms);
    }
    run
}

fn advance_and_reap(server: &mut ZkServer, ms: u64) -> Vec<Notification> {
    let now_ms = server.now_ms();
    server.set_time_ms(now_ms + ms as i64);
    server.reap()
}

/// True when a reap now would remove a node.
fn reap_is_due(server: &ZkServer) -> bool {
    let mut probe = server.clone();
    let before = probe.paths();
    probe.reap();
    probe.paths() != before
}

fn events_by_session(
    normalizer: &Normalizer<'_>,
    session_ids: &[SessionId],
    notifications: &[Notification],
) -> BTreeMap<usize, Vec<super::outcome::NormEvent>> {
    let mut raw: BTreeMap<usize, Vec<_>> = BTreeMap::new();
    for notification in notifications {
        let index = session_ids
            .iter()
            .position(|id| *id == notification.session)
            .unwrap_or_else(|| {
                panic!("sim notified an unknown session {:?}", notification.session)
            });
        raw.entry(index)
            .or_default()
            .push(notification.event.clone());
    }
    raw.into_iter()
        .map(|(index, events)| (index, normalizer.events(&events)))
        .collect()
}
