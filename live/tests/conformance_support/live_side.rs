//! Runs a script on the real server through `zk_live::LiveSession`.
//!
//! After each step every open session makes a round trip and collects its
//! events: ZooKeeper sends a session its notifications in order with its
//! replies, so this gathers everything the step caused. A closed session
//! keeps the events that reached it before its close.

use super::outcome::{Normalizer, StepOutcome};
use super::script::{rebase, Script, Step};
use std::collections::BTreeMap;
use std::time::Duration;
use zk_live::LiveSession;
use zk_recipes::zk::{CreateMode, Path, Request, SessionId};

const SESSION_TIMEOUT_MS: u64 = 10_000;

/// Runs `script` under `root`; `settle_ms[i]` is extra real time to let pass
/// after step `i` before its events are collected (see `sim_side`).
pub async fn run(script: &Script, root: &Path, addr: &str, settle_ms: &[u64]) -> Vec<StepOutcome> {
    let mut sessions = Vec::new();
    for _ in 0..script.sessions {
        let session = LiveSession::connect(addr, SESSION_TIMEOUT_MS)
            .await
            .unwrap_or_else(|error| panic!("live: {error}"));
        sessions.push(session);
    }
    let session_ids: Vec<SessionId> = sessions.iter().map(LiveSession::session_id).collect();
    let create_root = Request::Create {
        path: root.clone(),
        data: Vec::new(),
        mode: CreateMode::Persistent,
    };
    let created = sessions[0].apply(&create_root).await;
    assert!(
        created.is_ok(),
        "live: creating the root {root} failed: {created:?}"
    );

    let normalizer = Normalizer {
        root,
        session_ids: &session_ids,
    };
    let mut outcomes = Vec::new();
    for (index, step) in script.steps.iter().enumerate() {
        let result = match step {
            Step::Apply { session, request } => {
                let result = sessions[*session].apply(&rebase(request, root)).await;
                Some(normalizer.result(&result))
            }
            Step::Close { session } => {
                sessions[*session]
                    .close()
                    .await
                    .unwrap_or_else(|error| panic!("live: {error}"));
                None
            }
            Step::Wait { ms } => {
                tokio::time::sleep(Duration::from_millis(*ms)).await;
                None
            }
        };
        let settle = settle_ms.get(index).copied().unwrap_or(0);
        if settle > 0 {
            tokio::time::sleep(Duration::from_millis(settle)).await;
        }
        let events = collect_events(&normalizer, &mut sessions).await;
        outcomes.push(StepOutcome { result, events });
    }
    for session in &mut sessions {
        session
            .close()
            .await
            .unwrap_or_else(|error| panic!("live: {error}"));
    }
    outcomes
}

async fn collect_events(
    normalizer: &Normalizer<'_>,
    sessions: &mut [LiveSession],
) -> BTreeMap<usize, Vec<super::outcome::NormEvent>> {
    let mut events = BTreeMap::new();
    for (index, session) in sessions.iter_mut().enumerate() {
        let collected = session.collect_events().await;
        if !collected.is_empty() {
            events.insert(index, normalizer.events(&collected));
        }
    }
    events
}
