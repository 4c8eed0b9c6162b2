//! What both live drivers (a sans-IO recipe's, `driver.rs`, and an async
//! recipe's, `zk_live::async_run`) do the same way: the scenario's
//! directories set up and the tree's starting paths read, the clients
//! still running at the liveness deadline judged, the end checks' snapshot
//! of the real tree, and the shared fenced resource.

use super::{mirror, Backend, BackendError};
use crate::faults::{FaultRates, ScheduledFault};
use crate::oracles::{liveness_violation, stuck_line, Oracles, Property, Seen};
use crate::server::ZkServer;
use crate::world::{RunReport, RunStats};
use std::collections::BTreeSet;
use zk_recipes::zk::{Path, Request, SessionId, ZkError};

/// Creates the scenario's parent directories (under the run's root).
pub async fn set_up(backend: &dyn Backend, setup: &[Request]) -> Result<(), BackendError> {
    if setup.is_empty() {
        return Ok(());
    }
    let mut admin = backend.connect().await?;
    for request in setup {
        let (_, result) = admin.apply(request, None).await;
        if let Err(error) = result.as_ref().map_err(|e| e.clone()) {
            if error != ZkError::NodeExists {
                admin.close().await;
                return Err(BackendError(format!(
                    "setting up {request:?} failed: {error:?}"
                )));
            }
        }
    }
    admin.close().await;
    Ok(())
}

/// Sets up the scenario's directories and returns the paths under `root`
/// before the run (what the leak check leaves out).
pub async fn prepare(
    backend: &dyn Backend,
    setup: &[Request],
    root: &Path,
) -> Result<BTreeSet<Path>, BackendError> {
    set_up(backend, setup).await?;
    let nodes = backend.snapshot(root).await?;
    Ok(mirror(&nodes, &[]).paths().into_iter().collect())
}

/// One client as the liveness verdict sees it: whether its workload ended,
/// and the last call it started (backend time, the call).
pub struct ClientProgress {
    pub done: bool,
    pub last_call: Option<(u64, String)>,
}

/// At the liveness deadline `now`: reports the clients whose workload has
/// not ended, if liveness is checked.
pub fn judge_liveness(
    oracles: &mut Oracles,
    clients: impl IntoIterator<Item = ClientProgress>,
    t0: u64,
    now: u64,
    heal_ms: u64,
) {
    if !oracles.config().properties.contains(&Property::Liveness) {
        return;
    }
    let stuck: Vec<String> = clients
        .into_iter()
        .enumerate()
        .filter(|(_, client)| !client.done)
        .map(|(index, client)| {
            let last_call = client.last_call;
            stuck_line(
                index,
                last_call.map(|(at, call)| (at.saturating_sub(t0), call)),
            )
        })
        .collect();
    if let Some(violation) = liveness_violation(now.saturating_sub(t0), heal_ms, stuck) {
        oracles.report(violation);
    }
}

/// A snapshot of the real tree under `root` as the end checks read it, or
/// why the harness could not look (not the recipe's leak).
pub async fn end_tree(backend: &dyn Backend, root: &Path) -> Result<ZkServer, String> {
    match backend.snapshot(root).await {
        Ok(nodes) => Ok(mirror(&nodes, &[])),
        Err(error) => Err(format!("the end checks could not read the tree: {error}")),
    }
}

/// The end checks on the real tree `tree` (sessions still open): leaked
/// nodes, each leaked ephemeral naming whose current session owns it
/// (`sessions`: each client's), and undelivered items.
pub fn judge_end(
    oracles: &mut Oracles,
    at: u64,
    tree: &ZkServer,
    initial: &BTreeSet<Path>,
    sessions: &[Option<SessionId>],
) {
    oracles.finish_naming_owners(at, tree, initial, &session_owner(sessions));
}

/// What a live run knows of the session owning a leaked ephemeral, given
/// each client's current session: the client whose current session it is
/// (its recipe lost track of the node), or none (a session the client left
/// or the harness ended, which the server had not ended yet).
fn session_owner(sessions: &[Option<SessionId>]) -> impl Fn(SessionId) -> Option<String> + '_ {
    move |owner| match sessions.iter().position(|s| *s == Some(owner)) {
        Some(client) => Some(format!("client {client}'s current session")),
        None => Some("no client's current session".to_string()),
    }
}

/// The shared resource fenced holders write to: it accepts a token at
/// least as large as every one it accepted before.
#[derive(Default)]
pub struct FencedResource {
    max_token: Option<i64>,
}

impl FencedResource {
    /// A write with `token`: whether the resource accepted it, and what
    /// the oracles see of it.
    pub fn write(&mut self, token: i64) -> (bool, Seen) {
        let accepted = self.max_token.is_none_or(|max| token >= max);
        if accepted {
            self.max_token = Some(token);
        }
        (accepted, Seen::ResourceWrite { token, accepted })
    }
}

/// A live run's report: what the oracles found, the run's counts and
/// faults; no trace (a live run records none).
pub fn live_report(
    seed: u64,
    oracles: &Oracles,
    stats: RunStats,
    fault_history: Vec<ScheduledFault>,
    rates: FaultRates,
    workloads_done: usize,
) -> RunReport {
    RunReport {
        seed,
        violations: oracles.violations().to_vec(),
        stats,
        fault_history,
        rates,
        herd_maxima: oracles.herd_maxima(),
        herd_figures: oracles.herd_figures(),
        workloads_done,
        unjudged: Vec::new(),
        trace: Default::default(),
        holds: Vec::new(),
        coverage: None,
    }
    .set_aside_unexercised()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leaked_ephemeral_names_the_client_whose_current_session_owns_it() {
        let sessions = [Some(SessionId(7)), None, Some(SessionId(9))];
        let owner = session_owner(&sessions);
        assert_eq!(
            owner(SessionId(9)).as_deref(),
            Some("client 2's current session")
        );
        assert_eq!(
            owner(SessionId(8)).as_deref(),
            Some("no client's current session")
        );
    }
}
