//! Liveness: what each stuck client waits for and why nothing will wake
//! it. A client waiting behind another stuck client points at it; the
//! run's mechanism is the root's, chosen by a fixed priority.
//!
//! Before it blames the recipe, a diagnosis looks at what the client holds
//! (the last outcome its application took) and at the application's own
//! timer: a client whose hold (or think, or work) time is still running at
//! the liveness deadline is not stuck; the heal window was too short for
//! the workload (`heal-window-too-short`, the harness's configuration).
//! That label names the run only when the harness explains every stuck
//! client (each other one is queued behind such a client or waits with a
//! watch for children it may still change): a consumer whose take waits on
//! nothing is the recipe's, whatever timer another client still runs.
//!
//! This file triages each stuck client (never connected, paused, its
//! workload's timer, a reply, a timer, the watch it waits on) and picks the
//! run's mechanism; `watched` explains a wait on a watched node, `unwatched`
//! a wait with no watch of its own, and `cycles` clients that wait on each
//! other in a ring.

mod cycles;
mod unwatched;
mod watched;

use super::history::{Removal, WatchKind, WatchRecord};
use super::{client_name, root, ClientScene, Diagnosis, Finding, Scene};
use crate::client::ConnectionState;
use crate::oracles::{fmt_time, ClientIndex, SimNanos, Violation};
use cycles::mark_cycles;
use unwatched::{stale_watch, unwatched};
use watched::watched;
use zk_recipes::zk::Path;

/// The mechanism a run's signature names: a client that broke itself
/// first, then a node another client left in its way, then waits nobody
/// will end; a client queued behind another stuck one last.
pub(super) const PRIORITY: &[&str] = &[
    // The harness's configuration: the workload needs more than the heal
    // window (whoever waits behind such a client is explained by it).
    "heal-window-too-short",
    // The client broke itself.
    "watch-on-deleted-node",
    "waits-on-own-node",
    "leftover-own-node",
    "holds-two-nodes",
    "request-lost-not-retried",
    "event-dropped",
    "persistent-watch-missed-change",
    "watch-lost-with-session",
    "circular-wait",
    // Another client's node blocks it.
    "release-lost",
    "orphan-node",
    "name-collision",
    // It waits for something nobody will do.
    "children-left-before-read",
    "children-never-change",
    "waits-on-finished-client",
    "no-watch",
    "waits-for-reply",
    "waits-for-timer",
    "not-connected",
    "paused",
    "never-connected",
    // What the client waits on fits no mechanism the diagnosis is sure of.
    "undiagnosed",
    "queued-behind-stuck-client",
];

/// What a client the harness keeps busy (its workload's own timer still
/// running at the deadline) can explain in another stuck client: one
/// queued behind it, or one waiting with a watch for children it may still
/// change. Any other finding is the recipe's own wait, and the harness
/// label would hide it.
const HARNESS_EXPLAINS: &[&str] = &[
    "heal-window-too-short",
    "queued-behind-stuck-client",
    "children-never-change",
];

/// A client that waits on a node after its own (by sequence and by name):
/// a cycle when that node's owner waits back on it (`circular-wait`, found
/// by [`mark_cycles`]), else `undiagnosed`. Never a run's mechanism.
const WAITS_BEHIND_LATER: &str = "waits-behind-later-node";

/// The labels that blame the harness, not the recipe.
const HARNESS_LABELS: &[&str] = &["heal-window-too-short"];

pub fn diagnose(violation: &Violation, scene: &Scene) -> Diagnosis {
    let mut findings: Vec<Finding> = scene
        .clients
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.done)
        .map(|(client, c)| stuck_client(client, c, violation.at_ns, scene).client(client))
        .collect();
    mark_cycles(&mut findings, scene);
    for finding in &mut findings {
        if finding.mechanism == WAITS_BEHIND_LATER {
            finding.mechanism = "undiagnosed".to_string();
            finding.why = format!(
                "{}; no cycle back to it is in the history, so why it waits there is not known",
                finding.why
            );
        }
    }
    // The harness is named only when it explains every stuck client; else
    // the recipe's own wait is the run's mechanism.
    let harness_explains_all = findings
        .iter()
        .all(|f| HARNESS_EXPLAINS.contains(&f.mechanism.as_str()));
    let recipe_first: Vec<&str> = PRIORITY
        .iter()
        .copied()
        .filter(|p| harness_explains_all || !HARNESS_LABELS.contains(p))
        .collect();
    let Some(first) = root(&findings, &recipe_first) else {
        return Diagnosis {
            mechanism: "unexplained".to_string(),
            summary: violation.message.clone(),
            findings,
        };
    };
    let others = findings.len() - 1;
    let summary = format!(
        "{}: {}{}",
        client_name(first.client),
        first.what,
        match others {
            0 => String::new(),
            1 => " (1 other client stuck)".to_string(),
            n => format!(" ({n} other clients stuck)"),
        }
    );
    Diagnosis {
        mechanism: first.mechanism.clone(),
        summary,
        findings: findings.clone(),
    }
}

fn stuck_client(client: ClientIndex, c: &ClientScene, at_ns: SimNanos, scene: &Scene) -> Finding {
    let answered = answered_call(c);
    let waiting = match (&c.last_call, &answered) {
        (_, Some(answered)) => format!("its next step, {answered}"),
        (Some((at, call)), None) => format!("its {call} (called at {})", fmt_time(*at)),
        (None, None) => "its first call".to_string(),
    };
    if c.session.is_none() {
        return Finding::new(
            "never-connected",
            "never got a session".to_string(),
            "no connection attempt succeeded".to_string(),
        );
    }
    if c.paused {
        return Finding::new(
            "paused",
            format!("is paused while it waits for {waiting}"),
            "the heal should have resumed it".to_string(),
        );
    }
    // Its call was answered and its application's own timer (a hold,
    // think or work time) runs past the deadline: not stuck, the window
    // was short. (A bounded wait for an answer not yet come, a consumer
    // polling for an item, is no such timer: its call is unanswered.)
    if let (Some(answered), Some((started, due))) = (&answered, c.workload_timer) {
        if due > at_ns {
            return heal_window_too_short(answered, (started, due), at_ns, scene);
        }
    }
    if let Some(request) = c.pending_requests.first() {
        return Finding::new(
            "waits-for-reply",
            format!("waits for the reply to {request}"),
            format!("its connection is {:?}", c.state),
        );
    }
    if c.timers > 0 {
        return Finding::new(
            "waits-for-timer",
            format!("waits for one of its {} timer(s)", c.timers),
            "the liveness bound ended before the timer fired".to_string(),
        );
    }
    if c.state != ConnectionState::Connected {
        return Finding::new(
            "not-connected",
            format!("is {:?} while it waits for {waiting}", c.state),
            "the recipe never opened a new session".to_string(),
        );
    }
    let history = &scene.history.clients[client];
    let latest = armed_watches(c)
        .into_iter()
        .map(|(kind, path)| {
            let record = history.watches.get(&(kind, path.clone()));
            (kind, path, record)
        })
        .max_by_key(|(_, _, record)| record.map(|r| r.set_ns));
    match latest {
        // The client asked for something after its newest watch was set:
        // that watch is not what it waits on now.
        Some((kind, path, Some(record))) if record.set_ns < history.last_send_ns => stale_watch(
            client,
            &waiting,
            scene,
            c,
            set_words(kind, &path, Some(record)),
        ),
        Some((kind, path, record)) => watched(client, kind, &path, record, scene),
        None => unwatched(client, &waiting, scene, c),
    }
}

/// The application's last call was answered, if it was: `its Lock was
/// answered Acquired { .. } at 1.2 s` (what the client holds now).
fn answered_call(c: &ClientScene) -> Option<String> {
    let (outcome_ns, outcome) = c.last_outcome.as_ref()?;
    let (call_ns, call) = c.last_call.as_ref()?;
    (outcome_ns >= call_ns).then(|| {
        format!(
            "its {call} was answered {outcome} at {}",
            fmt_time(*outcome_ns)
        )
    })
}

/// The application's own timer (a hold, think or work time) runs past the
/// liveness deadline: the client is not stuck, the heal window is shorter
/// than the workload needs.
fn heal_window_too_short(
    answered: &str,
    (started_ns, due_ns): (SimNanos, SimNanos),
    at_ns: SimNanos,
    scene: &Scene,
) -> Finding {
    let wait_ms = due_ns.saturating_sub(started_ns) / 1_000_000;
    let holds = format!("{answered}; ");
    let window = scene.heal_ms.map_or("the heal window".to_string(), |ms| {
        format!("the heal window ({ms} ms)")
    });
    Finding::new(
        "heal-window-too-short",
        format!(
            "{holds}its workload's own timer (a {wait_ms} ms hold, think or work time, started at {}) runs until {}, past the liveness deadline",
            fmt_time(started_ns),
            fmt_time(due_ns)
        ),
        format!(
            "{window} is shorter than the workload needs (a wait of {wait_ms} ms of its own ends {} ms after the deadline): the harness's configuration, not the recipe; raise heal_ms or shorten the workload's hold, think or work times",
            due_ns.saturating_sub(at_ns) / 1_000_000
        ),
    )
    .at(started_ns, format!("its workload started a {wait_ms} ms wait"))
}

/// The watches the session layer has armed, node watches first.
fn armed_watches(c: &ClientScene) -> Vec<(WatchKind, Path)> {
    let exist = c
        .watches
        .exist
        .keys()
        .map(|p| (WatchKind::Exist, p.clone()));
    let data = c.watches.data.keys().map(|p| (WatchKind::Data, p.clone()));
    let child = c
        .watches
        .child
        .keys()
        .map(|p| (WatchKind::Child, p.clone()));
    exist.chain(data).chain(child).collect()
}

fn set_words(kind: WatchKind, path: &Path, record: Option<&WatchRecord>) -> String {
    let how = match kind {
        WatchKind::Exist => "a creation watch",
        WatchKind::Data => "a watch",
        WatchKind::Child => "a children watch",
    };
    match record {
        Some(r) => format!(
            "waits on {how} on {path}, set by {} at {}",
            r.by,
            fmt_time(r.set_ns)
        ),
        None => format!("waits on {how} on {path}"),
    }
}

fn removal_words(removal: &Removal) -> String {
    match removal {
        Removal::Deleted { by } => format!("deleted by c{by}"),
        Removal::SessionEnded { client } => format!("went with c{client}'s expired session"),
        Removal::Reaped => "reaped by the server".to_string(),
    }
}

pub(super) fn removal_text(removal: &Removal) -> String {
    removal_words(removal)
}
