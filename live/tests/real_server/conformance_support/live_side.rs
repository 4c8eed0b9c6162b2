//! Runs a script on the real server through `zk_live::LiveSession`.
//!
//! After each step every open session makes a round trip and collects its
//! events: ZooKeeper sends a session its notifications in order with its
//! replies, so this gathers everything the step caused. A closed session
//! keeps the events that reached it before its close.
//!
//! Where the sim reaped nodes in a step (containers emptied, TTLs run out),
//! the live side waits until the server no longer has them, asking it with
//! a session of its own (one that arms no watch), before it collects the
//! step's events: the server's container manager acts on its own schedule,
//! so this polls, at most [`REAP_DEADLINE`], rather than sleeping a guess.

use super::outcome::{Normalizer, StepOutcome};
use super::script::{rebase, Script, Step};
use std::collections::BTreeMap;
use std::time::Duration;
use zk_live::LiveSession;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Reply, Request, SessionId};

const SESSION_TIMEOUT_MS: u64 = 10_000;
/// How long the server may take to reap what the sim reaped.
const REAP_DEADLINE: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(10);

/// Runs `script` under `root`; `reaped[i]` are the nodes the sim reaped in
/// step `i`, which the server must have reaped too before that step's
/// events are collected (see `sim_side`).
pub async fn run(
    script: &Script,
    root: &Path,
    addr: &str,
    reaped: &[Vec<Path>],
) -> Vec<StepOutcome> {
    let mut sessions = Vec::new();
    for _ in 0..script.sessions {
        let session = LiveSession::connect(addr, SESSION_TIMEOUT_MS)
            .await
            .unwrap_or_else(|error| panic!("live: {error}"));
        sessions.push(session);
    }
    let session_ids: Vec<SessionId> = sessions.iter().map(LiveSession::session_id).collect();
    let mut reap_observer = LiveSession::connect(addr, SESSION_TIMEOUT_MS)
        .await
        .unwrap_or_else(|error| panic!("live: {error}"));
    let create_root = Request::Create {
        path: root.clone(),
        data: Vec::new(),
        mode: CreateMode::Persistent,
        acl: Acls::Open,
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
        if let Some(paths) = reaped.get(index).filter(|paths| !paths.is_empty()) {
            await_reaped(&mut reap_observer, paths).await;
        }
        let events = collect_events(&normalizer, &mut sessions).await;
        outcomes.push(StepOutcome { result, events });
    }
    for session in sessions.iter_mut().chain([&mut reap_observer]) {
        session
            .close()
            .await
            .unwrap_or_else(|error| panic!("live: {error}"));
    }
    outcomes
}

/// Polls the server until none of `paths` exists, at most [`REAP_DEADLINE`].
async fn await_reaped(observer: &mut LiveSession, paths: &[Path]) {
    let deadline = tokio::time::Instant::now() + REAP_DEADLINE;
    loop {
        let mut present = Vec::new();
        for path in paths {
            let exists = Request::Exists {
                path: path.clone(),
                watch: false,
            };
            if let Ok(Reply::Exists(Some(_))) = observer.apply(&exists).await {
                present.push(path.as_str());
            }
        }
        if present.is_empty() {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "live: the server still has {present:?} {REAP_DEADLINE:?} after the step in which \
             the sim reaped them"
        );
        tokio::time::sleep(POLL).await;
    }
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
