//! Runs a script on the in-memory server (`zk_sim::server::ZkServer`).
//!
//! A real server reaps containers and expired TTL nodes on its own, within
//! its check interval (100 ms here). So that both sides stay comparable at
//! every step, after each step the sim asks a copy of itself whether a reap
//! would remove anything; if so it reaps now (clock advanced by
//! [`SETTLE_MS`]). For every step it tells the live side which nodes its
//! reaps removed (in that settle, or in a `Wait`), and the live side waits
//! until the real server no longer has them before it collects the step's
//! events (polling, with a deadline: see `live_side`).

use super::outcome::{Normalizer, StepOutcome};
use super::script::{rebase, Script, Step};
use std::collections::BTreeMap;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Request, SessionId};
use zk_sim::server::{Notification, ServerConfig, SortedOrder, ZkServer};

/// How far the sim's clock moves when it reaps after a step.
pub const SETTLE_MS: u64 = 500;

const SESSION_TIMEOUT_MS: u64 = 10_000;

/// The sim's outcomes, and per step the nodes its reaps removed (which the
/// live side waits to see gone).
pub struct SimRun {
    pub outcomes: Vec<StepOutcome>,
    pub reaped: Vec<Vec<Path>>,
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
        acl: Acls::Open,
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
        reaped: Vec::new(),
    };
    for step in &script.steps {
        let before_step = server.paths();
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
                    .close_session(session_ids[*session], &mut SortedOrder)
                    .unwrap_or_default(),
            ),
            Step::Wait { ms } => (None, advance_and_reap(&mut server, *ms)),
        };
        let mut reaped = match step {
            Step::Wait { .. } => gone(&before_step, &server),
            _ => Vec::new(),
        };
        if reap_is_due(&server) {
            let before_reap = server.paths();
            notifications.extend(advance_and_reap(&mut server, SETTLE_MS));
            reaped.extend(gone(&before_reap, &server));
        }
        let events = events_by_session(&normalizer, &session_ids, &notifications);
        run.outcomes.push(StepOutcome { result, events });
        run.reaped.push(reaped);
    }
    run
}

fn advance_and_reap(server: &mut ZkServer, ms: u64) -> Vec<Notification> {
    let now_ms = server.now_ms();
    server.set_time_ms(now_ms + ms as i64);
    server.reap()
}

/// The paths of `before` that `server` no longer has.
fn gone(before: &[Path], server: &ZkServer) -> Vec<Path> {
    let now: std::collections::BTreeSet<Path> = server.paths().into_iter().collect();
    before
        .iter()
        .filter(|p| !now.contains(p))
        .cloned()
        .collect()
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
