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

use super::history::{DeleteFate, Ended, NodeRecord, Removal, WatchKind, WatchRecord};
use super::{client_name, root, ClientScene, Diagnosis, Finding, Scene};
use crate::client::ConnectionState;
use crate::oracles::{fmt_time, ClientIndex, SimNanos, Violation};
use crate::server::NodeKind;
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

/// Clients queued behind each other in a ring wait forever: each such
/// finding becomes `circular-wait`, naming the ring.
fn mark_cycles(findings: &mut [Finding], scene: &Scene) {
    let waits_for = |finding: &Finding| -> Option<ClientIndex> {
        if finding.mechanism != "queued-behind-stuck-client"
            && finding.mechanism != WAITS_BEHIND_LATER
        {
            return None;
        }
        let path = Path::new(finding.path.as_deref()?).ok()?;
        match scene.server.node_kind(&path)? {
            NodeKind::Ephemeral { owner } => scene.owner_client(owner),
            _ => None,
        }
    };
    let edges: Vec<(ClientIndex, Option<ClientIndex>)> = findings
        .iter()
        .filter_map(|f| Some((f.client?, waits_for(f))))
        .collect();
    let edges_later: Vec<(ClientIndex, String)> = findings
        .iter()
        .filter(|f| f.mechanism == WAITS_BEHIND_LATER)
        .filter_map(|f| Some((f.client?, f.what.clone())))
        .collect();
    let next = |client: ClientIndex| {
        edges
            .iter()
            .find(|(c, _)| *c == client)
            .and_then(|(_, w)| *w)
    };
    for finding in findings.iter_mut() {
        let Some(start) = finding.client else {
            continue;
        };
        let mut ring = vec![start];
        let mut at = start;
        while let Some(waited) = next(at) {
            if waited == start {
                let names: Vec<String> = ring.iter().map(|c| format!("c{c}")).collect();
                if let Some((client, node)) = ring
                    .iter()
                    .find_map(|c| Some((*c, recovered_node(*c, scene)?)))
                {
                    finding.mechanism = "waits-on-own-node".to_string();
                    finding.why = format!(
                        "{} each wait for the next one's node, and the last for the first's: c{client} never got the reply to the create of {node} (its current attempt's) and recovered the node by reading, and does not place its own node right (it compares a name it recovered with full paths)",
                        names.join(" → ")
                    );
                    break;
                }
                if let Some((client, node)) = ring
                    .iter()
                    .find_map(|c| Some((*c, retaken_node(*c, scene)?)))
                {
                    finding.mechanism = "release-lost".to_string();
                    finding.why = format!(
                        "{} each wait for the next one's node, and the last for the first's: c{client}'s delete of {node} was lost with its connection and never retried, and c{client} took the node up again as its own (found by its prefix), out of its place",
                        names.join(" → ")
                    );
                    break;
                }
                let later = findings_waiting_later(&ring, &edges_later);
                finding.mechanism = "circular-wait".to_string();
                finding.why = format!(
                    "{} each wait for the next one's node, and the last for the first's: the contenders disagree on the order of their nodes{later}",
                    names.join(" → ")
                );
                break;
            }
            if ring.contains(&waited) {
                break;
            }
            ring.push(waited);
            at = waited;
        }
    }
}

/// The client's one live contender node, when the reply to its create
/// never reached it and it created no other since: it knows the node only
/// from a read (a recovery after the lost reply, in the history).
fn recovered_node<'a>(client: ClientIndex, scene: &'a Scene) -> Option<&'a Path> {
    let mut own =
        scene.history.nodes.iter().filter(|(_, node)| {
            node.creator == client && !node.persistent && node.removed.is_none()
        });
    let (path, node) = own.next()?;
    let read = node.recovered_ns.is_some();
    if own.next().is_some() || !read || node.reply_delivered || created_another(path, node, scene) {
        return None;
    }
    current_attempt(client, node, scene).then_some(path)
}

/// `node` was created by `client`'s current attempt: at or after the
/// application's last call (a client with no call recorded has one).
fn current_attempt(client: ClientIndex, node: &NodeRecord, scene: &Scene) -> bool {
    scene.clients[client]
        .last_call
        .as_ref()
        .is_none_or(|(call_ns, _)| node.created_ns >= *call_ns)
}

/// The ring's clients that wait on a node after their own, in words.
fn findings_waiting_later(ring: &[ClientIndex], later: &[(ClientIndex, String)]) -> String {
    let words: Vec<String> = later
        .iter()
        .filter(|(client, _)| ring.contains(client))
        .map(|(client, what)| format!("c{client} {what}"))
        .collect();
    match words.is_empty() {
        true => String::new(),
        false => format!(" ({})", words.join("; ")),
    }
}

/// The client's one live contender node, when its own last delete of it
/// was lost with its connection: it went on as if released, and holds the
/// node still.
fn retaken_node<'a>(client: ClientIndex, scene: &'a Scene) -> Option<&'a Path> {
    let mut own =
        scene.history.nodes.iter().filter(|(_, node)| {
            node.creator == client && !node.persistent && node.removed.is_none()
        });
    let (path, _) = own.next()?;
    if own.next().is_some() {
        return None;
    }
    lost_delete(path, client, scene).map(|_| path)
}

/// The creator of `path` created another node under the same parent
/// after it (whether that one still exists or not).
fn created_another(path: &Path, record: &NodeRecord, scene: &Scene) -> bool {
    let parent = path.parent();
    scene.history.nodes.iter().any(|(other, later)| {
        other != path
            && other.parent() == parent
            && later.creator == record.creator
            && later.created_ns > record.created_ns
    })
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

/// A client whose every armed watch was set before its last request: what
/// it waits on now is what became of that request (as for a client with
/// no watch), the stale watch a fact beside it. `no-watch` would be untrue
/// (a watch is armed): then `undiagnosed`.
fn stale_watch(
    client: ClientIndex,
    waiting: &str,
    scene: &Scene,
    c: &ClientScene,
    watch_words: String,
) -> Finding {
    let mut finding = unwatched(client, waiting, scene, c);
    let last_send_ns = scene.history.clients[client].last_send_ns;
    finding.what = format!(
        "{}; the watch still armed is stale: it {watch_words}, before its last request at {}",
        finding.what.replace(
            " with no watch armed",
            " with no watch of its own wait armed"
        ),
        fmt_time(last_send_ns)
    );
    if finding.mechanism == "no-watch" {
        finding.mechanism = "undiagnosed".to_string();
        finding.why =
            "its last request set no watch, and nothing shows what it waits for".to_string();
    }
    finding.at(last_send_ns, "its last request")
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

fn watched(
    client: ClientIndex,
    kind: WatchKind,
    path: &Path,
    record: Option<&WatchRecord>,
    scene: &Scene,
) -> Finding {
    let what = set_words(kind, path, record);
    let set_ns = record.map(|r| r.set_ns);
    if kind == WatchKind::Exist {
        return creation_watch(path, &what, set_ns, scene);
    }
    if kind == WatchKind::Child {
        return children_watch(
            client,
            path,
            &what,
            set_ns,
            record.and_then(|r| r.children),
            scene,
        );
    }
    data_watch(client, path, &what, scene)
}

/// A creation watch (exists() on a missing node): `watch-on-deleted-node`
/// only when the node existed and went before the watch was set (it is
/// never created again: sequential names do not recur); a node that
/// exists now, or that no client ever created, is not a case the
/// diagnosis knows.
fn creation_watch(path: &Path, what: &str, set_ns: Option<SimNanos>, scene: &Scene) -> Finding {
    let node = scene.history.nodes.get(path);
    let gone = node
        .and_then(|n| n.removed.as_ref())
        .filter(|(gone_ns, _)| set_ns.is_none_or(|set| *gone_ns <= set));
    let exists_now = scene.server.node_kind(path).is_some();
    let Some((gone_ns, removal)) = gone.filter(|_| !exists_now) else {
        let why = if exists_now {
            format!("{path} exists, yet the watch did not fire")
        } else {
            format!("no client created {path} before the watch was set, and none has since: whether one should is the recipe's business")
        };
        return Finding::new("undiagnosed", what.to_string(), why).path(path);
    };
    let mut finding = Finding::new(
            "watch-on-deleted-node",
            format!("{what}, when the node was already gone"),
            format!(
                "an exists() watch on a missing node fires only if {path} is created again, and nothing creates it: the recipe should have read the children again"
            ),
        )
    .path(path)
    .at(*gone_ns, format!("{path} {}", removal_words(removal)));
    if let Some(set_ns) = set_ns {
        finding = finding.at(
            set_ns,
            "its exists() found no node and set a creation watch",
        );
    }
    finding
}

/// A data watch (getData, or exists() on a node that existed).
fn data_watch(client: ClientIndex, path: &Path, what: &str, scene: &Scene) -> Finding {
    let node = scene.history.nodes.get(path);
    match scene.server.node_kind(path) {
        Some(NodeKind::Ephemeral { owner }) => {
            waits_on_live_node(client, path, what, scene.owner_client(owner), scene)
        }
        // No client's session or workload ties a persistent node: what
        // should change it, the history does not say.
        Some(_) => Finding::new(
            "undiagnosed",
            format!("{what}, a persistent node that exists"),
            format!("{path} has not changed since the watch was set, and no client is bound to change it (it is persistent); whether one should is the recipe's business"),
        )
        .path(path),
        None => {
            let gone = node
                .and_then(|n| n.removed.as_ref())
                .map_or(String::new(), |(at, r)| {
                    format!(" ({path} {} at {})", removal_words(r), fmt_time(*at))
                });
            Finding::new(
                "event-dropped",
                format!("{what}; the node is gone{gone}"),
                "the watch fired or was never re-armed, and the recipe did not act".to_string(),
            )
            .path(path)
        }
    }
}

/// The watched node exists and belongs to `owner`'s session.
fn waits_on_live_node(
    client: ClientIndex,
    path: &Path,
    what: &str,
    owner: Option<ClientIndex>,
    scene: &Scene,
) -> Finding {
    let record = scene.history.nodes.get(path);
    if let Some(record) = record.filter(|r| superseded(path, r, scene)) {
        // Its creator made another node since: it does not know this one.
        return orphan(path, what, record);
    }
    if owner == Some(client) {
        return own_node(client, path, what, scene);
    }
    if let Some(own) = own_node_before(client, path, scene) {
        let record = scene.history.nodes.get(own);
        let recovered = record.filter(|r| !r.reply_delivered && current_attempt(client, r, scene));
        if recovered.is_some() {
            return Finding::new(
                "waits-on-own-node",
                format!("{what}, which comes after its own node {own}"),
                format!("it never got the reply to the create of {own} (its current attempt's) and recovered the node by reading; it does not place that node right (it compares a name it recovered with full paths), so it waits behind a contender that comes after it"),
            )
            .path(path);
        }
        let owner_words =
            owner.map_or("a session no client holds".to_string(), |o| format!("c{o}"));
        return Finding::new(
            WAITS_BEHIND_LATER,
            format!("{what}, the node of {owner_words}, which comes after its own node {own}"),
            "it waits on a node after its own by sequence number and by name (its create's reply reached it)".to_string(),
        )
        .path(path);
    }
    let Some(owner) = owner else {
        return Finding::new(
            "orphan-node",
            format!("{what}, owned by a session no client holds"),
            "the node goes only when that session expires".to_string(),
        )
        .path(path);
    };
    let owner_moved_on = scene.clients[owner].done || other_live_node(path, owner, scene).is_some();
    if let Some(lost) = lost_delete(path, owner, scene).filter(|_| owner_moved_on) {
        return release_lost(path, what, owner, lost);
    }
    if let Some(other) = other_live_node(path, owner, scene) {
        return match scene.history.nodes.get(other) {
            // Its other node is one it never learned the name of.
            Some(record) if !record.name_known() => orphan(other, what, record),
            _ => holds_two_nodes(path, what, owner, other, scene),
        };
    }
    if !scene.clients[owner].done {
        return Finding::new(
            "queued-behind-stuck-client",
            format!("{what}, the node of c{owner}, which is stuck too"),
            format!("it moves only when c{owner} does"),
        )
        .path(path);
    }
    if let Some(record) = record.filter(|r| !r.reply_delivered) {
        if !record.name_known() && created_another(path, record, scene) {
            return orphan(path, what, record);
        }
        // It never got the reply and made no other node: it may have
        // found this one by reading; why it left it, the history does not say.
        return Finding::new(
            "undiagnosed",
            format!("{what}, the node of c{owner}, whose workload is done; c{owner} never got the reply to its create"),
            format!("c{owner} created no other node, so it may have found {path} by reading; why it left it is not known"),
        )
        .path(path);
    }
    Finding::new(
        "waits-on-finished-client",
        format!("{what}, the node of c{owner}, whose workload is done"),
        format!("c{owner} will not delete {path}, and its session is alive"),
    )
    .path(path)
}

/// The client waits on (or is blocked by) its own node `path`: the node
/// of its current attempt it does not recognise (`waits-on-own-node`), or
/// one an earlier attempt it gave up left behind (`leftover-own-node`);
/// else `undiagnosed`, with the facts.
fn own_node(client: ClientIndex, path: &Path, what: &str, scene: &Scene) -> Finding {
    let Some(record) = scene.history.nodes.get(path) else {
        return Finding::new(
            "undiagnosed",
            format!("{what}, which is its own node"),
            "the history does not say which of its attempts created it".to_string(),
        )
        .path(path);
    };
    let created = format!("c{client} created {path}");
    if current_attempt(client, record, scene) {
        let why = own_node_why(client, path, record, scene);
        return Finding::new(
            "waits-on-own-node",
            format!("{what}, which is its own node"),
            why.to_string(),
        )
        .path(path)
        .at(record.created_ns, created);
    }
    if !record.name_known() && created_another(path, record, scene) {
        // It never learned the node's name: an orphan, not a node it left.
        return orphan(path, what, record);
    }
    let call_ns = scene.clients[client]
        .last_call
        .as_ref()
        .map_or(0, |(at, _)| *at);
    let ended = scene
        .history
        .attempt_end(client, record.created_ns, call_ns);
    match ended.filter(|_| record.reply_delivered) {
        Some((ended_ns, Ended::GaveUp(how))) => Finding::new(
            "leftover-own-node",
            format!("{what}, which its own earlier attempt created and left: that attempt {how} at {}", fmt_time(ended_ns)),
            format!("an attempt that gives up must delete its node (or remember it): {path} stays as long as the session, and the client's later attempt (called at {}) waits behind it", fmt_time(call_ns)),
        )
        .path(path)
        .at(record.created_ns, created)
        .at(ended_ns, format!("its attempt {how}; {path} stayed"))
        .at(call_ns, "its current attempt began"),
        _ => {
            let how = match (ended, record.reply_delivered) {
                (None, _) => "was not answered before its current call".to_string(),
                (Some((at, _)), false) => format!(
                    "ended at {} without the create's reply reaching it",
                    fmt_time(at)
                ),
                (Some((at, _)), true) => {
                    format!("was answered at {} (not given up)", fmt_time(at))
                }
            };
            Finding::new(
                "undiagnosed",
                format!("{what}, its own node from an earlier attempt, which {how}"),
                format!("its current attempt began at {}; why it waits on a node of an earlier attempt is not known", fmt_time(call_ns)),
            )
            .path(path)
            .at(record.created_ns, created)
        }
    }
}

/// Why a client waits on its current attempt's node `path`, as far as
/// the history shows: it recovered the node by reading (and does not place
/// it), it created the path again and the server refused (NodeExists), or
/// neither; the reply to its create reached it or not.
fn own_node_why(client: ClientIndex, path: &Path, record: &NodeRecord, scene: &Scene) -> String {
    if record.reply_delivered {
        return "its current attempt created it and got the reply, yet does not recognise it as its own, so it waits for itself".to_string();
    }
    let collided = scene.history.clients[client]
        .creates_collided
        .iter()
        .any(|(at, collided)| collided == path && *at > record.created_ns);
    if collided {
        return format!("it never got the reply to its create (its current attempt's) and created {path} again; the server refused (NodeExists), and it took its own node for another's, so it waits for itself");
    }
    if record.recovered_ns.is_some() {
        return "it never got the reply to its create (its current attempt's) and recovered the node by reading, and does not recognise it (it compares a name it recovered with full paths), so it waits for itself".to_string();
    }
    "it never got the reply to its create (its current attempt's) and does not recognise the node as its own (the history shows no read of it), so it waits for itself".to_string()
}

/// The client's one live node under `path`'s parent, when the watched
/// node comes after it by sequence number and by name: a contender waits
/// on one before its own in the order its recipe sorts by (whichever of
/// the two), never on one after it in both.
fn own_node_before<'a>(client: ClientIndex, path: &Path, scene: &'a Scene) -> Option<&'a Path> {
    let parent = path.parent();
    let mut own = scene.history.nodes.iter().filter(|(node_path, node)| {
        node_path.parent() == parent
            && node.creator == client
            && !node.persistent
            && node.removed.is_none()
    });
    let (own_path, _) = own.next()?;
    if own.next().is_some() {
        return None;
    }
    let after_by_sequence = sequence_of(own_path)? < sequence_of(path)?;
    let after_by_name = own_path.name() < path.name();
    (after_by_sequence && after_by_name).then_some(own_path)
}

/// When `owner`'s last attempt to delete `path` was lost with its
/// connection (sent and lost before the server applied it, or queued and
/// failed unsent), if it was: that attempt's time.
fn lost_delete(path: &Path, owner: ClientIndex, scene: &Scene) -> Option<SimNanos> {
    let sent = scene.history.nodes.get(path).and_then(|r| {
        r.deletes
            .iter()
            .rev()
            .find(|d| d.client == owner)
            .map(|d| (d.at_ns, d.fate == DeleteFate::LostBeforeApply))
    });
    let unsent = scene.clients[owner]
        .unsent_delete_of(path)
        .map(|at| (at, true));
    let (at_ns, lost) = sent.into_iter().chain(unsent).max_by_key(|(at, _)| *at)?;
    lost.then_some(at_ns)
}

fn release_lost(path: &Path, what: &str, owner: ClientIndex, lost_ns: SimNanos) -> Finding {
    Finding::new(
        "release-lost",
        format!("{what}, the node of c{owner}, which went on as if it had released it"),
        format!(
            "c{owner}'s delete of {path} was lost with its connection and never retried; its session is alive, so the node stays"
        ),
    )
    .path(path)
    .at(lost_ns, format!("c{owner}'s delete was lost with its connection"))
}

/// Another live (non-persistent) node `owner` created under `path`'s
/// parent, besides `path`: one whose name it never learned first.
fn other_live_node<'a>(path: &Path, owner: ClientIndex, scene: &'a Scene) -> Option<&'a Path> {
    let parent = path.parent();
    scene
        .history
        .nodes
        .iter()
        .filter(|(other, node)| {
            *other != path
                && other.parent() == parent
                && node.creator == owner
                && !node.persistent
                && node.removed.is_none()
        })
        .min_by_key(|(_, node)| node.reply_delivered)
        .map(|(other, _)| other)
}

/// The watched node belongs to a client that holds another node under the
/// same parent: it went on without it (a release that deleted nothing, a
/// create that did not look for the node it had), and whoever waits on the
/// older node waits for a client that waits too.
fn holds_two_nodes(
    path: &Path,
    what: &str,
    owner: ClientIndex,
    other: &Path,
    scene: &Scene,
) -> Finding {
    let mut finding = Finding::new(
        "holds-two-nodes",
        format!("{what}, the node of c{owner}, which also holds {other}"),
        format!(
            "c{owner} created another node under the same parent while {path} was still there: one of its two nodes is one it no longer acts on, and it blocks whoever waits behind it"
        ),
    )
    .path(path);
    for node_path in [path, other] {
        if let Some(node) = scene.history.nodes.get(node_path) {
            finding = finding.at(node.created_ns, format!("c{owner} created {node_path}"));
        }
    }
    finding
}

/// `path` was created by a request whose reply never reached its creator,
/// and the creator made another node under the same parent since (it did
/// not find this one: it never looked, or its read missed it, e.g. on a
/// server that had not applied the create yet), which still exists.
fn superseded(path: &Path, record: &NodeRecord, scene: &Scene) -> bool {
    let parent = path.parent();
    !record.name_known()
        && scene.history.nodes.iter().any(|(other, later)| {
            other != path
                && other.parent() == parent
                && later.creator == record.creator
                && later.created_ns > record.created_ns
                && later.removed.is_none()
        })
}

/// The node `what` waits on was created by a request whose reply never
/// reached its creator.
fn orphan(path: &Path, what: &str, record: &NodeRecord) -> Finding {
    let mut finding = Finding::new(
        "orphan-node",
        format!(
            "{what}; {path} was created by c{} whose reply never arrived",
            record.creator
        ),
        format!(
            "c{} never learned the node's name and created another; its session stays alive, so {path} never goes",
            record.creator
        ),
    )
    .path(path)
    .at(record.created_ns, format!("c{} created {path}", record.creator));
    if let Some(lost) = record.reply_lost_ns {
        finding = finding.at(lost, "the create's reply was lost with the connection");
    }
    finding
}

/// A children watch on `path`: what keeps the children from changing.
fn children_watch(
    client: ClientIndex,
    path: &Path,
    what: &str,
    set_ns: Option<SimNanos>,
    children: Option<usize>,
    scene: &Scene,
) -> Finding {
    let history = scene.history;
    let mut live_children = history
        .nodes
        .iter()
        .filter(|(child, node)| child.parent().as_ref() == Some(path) && node.removed.is_none());
    if let Some((child, record)) = live_children.find(|(_, node)| !node.name_known()) {
        return orphan(child, what, record);
    }
    if let Some(finding) = waits_for_first_contender(client, path, what, scene) {
        return finding;
    }
    let had = children.map_or(String::new(), |n| format!(" (it saw {n} children)"));
    let collided = history.clients.iter().enumerate().find_map(|(other, h)| {
        h.creates_collided
            .iter()
            .find(|(_, name)| name.parent().as_ref() == Some(path))
            .map(|(at, name)| (other, *at, name))
    });
    if let Some((other, at, name)) = collided {
        return Finding::new(
            "name-collision",
            format!("{what}{had}; c{other}'s create of {name} failed with NodeExists"),
            format!("members share the name {name}, so the children it waits for will never all be there"),
        )
        .path(path)
        .at(at, format!("c{other}'s create({name}) failed: NodeExists"));
    }
    let left_before = set_ns.and_then(|set_ns| {
        history
            .nodes
            .iter()
            .find_map(|(child, node)| match &node.removed {
                Some((gone, Removal::Deleted { by }))
                    if child.parent().as_ref() == Some(path)
                        && *by != client
                        && *gone <= set_ns =>
                {
                    Some((child, *gone, *by))
                }
                _ => None,
            })
    });
    if let Some((child, gone, by)) = left_before {
        return Finding::new(
            "children-left-before-read",
            format!("{what}{had}, after c{by} had already deleted {child}"),
            "a member left before this one read the children, so the count it waits for can never be reached".to_string(),
        )
        .path(path)
        .at(gone, format!("c{by} deleted {child}"));
    }
    Finding::new(
        "children-never-change",
        format!("{what}{had}"),
        format!(
            "every other client is done or waiting too: nobody will change the children of {path}"
        ),
    )
    .path(path)
}

/// A children watch on a directory of sequential contender nodes (an
/// election, a lock watching the whole list): the client waits for the
/// first contender's node to go, so it is explained as a wait on that node.
/// None when the children are not sequential (a barrier's members). A
/// client whose own node is first, yet waits, is not a case the diagnosis
/// knows.
fn waits_for_first_contender(
    client: ClientIndex,
    dir: &Path,
    what: &str,
    scene: &Scene,
) -> Option<Finding> {
    let contenders: Vec<(u32, &Path, &NodeRecord)> = scene
        .history
        .nodes
        .iter()
        .filter(|(child, node)| {
            child.parent().as_ref() == Some(dir) && node.removed.is_none() && !node.persistent
        })
        .filter_map(|(child, node)| Some((sequence_of(child)?, child, node)))
        .collect();
    let (_, first, record) = contenders.iter().min_by_key(|(seq, _, _)| *seq)?;
    if record.creator == client {
        let finding = own_node(
            client,
            first,
            &format!("{what}, behind the first contender {first}"),
            scene,
        );
        if finding.mechanism == "leftover-own-node" {
            return Some(finding);
        }
        return Some(
            Finding::new(
                "undiagnosed",
                format!("{what}, while its own {first} is the first contender"),
                "it waits although its node comes first: the diagnosis knows no mechanism for it"
                    .to_string(),
            )
            .path(first),
        );
    }
    let owner = match scene.server.node_kind(first)? {
        NodeKind::Ephemeral { owner } => scene.owner_client(owner),
        _ => return None,
    };
    let what = format!("{what}, behind the first contender {first}");
    Some(waits_on_live_node(client, first, &what, owner, scene))
}

/// A node name's 10-digit sequence suffix, if it has one.
fn sequence_of(path: &Path) -> Option<u32> {
    let name = path.name();
    let digits = name.get(name.len().checked_sub(10)?..)?;
    digits
        .bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| digits.parse().ok())
        .flatten()
}

/// No watch, no request, no timer: what happened to the last one.
fn unwatched(client: ClientIndex, waiting: &str, scene: &Scene, c: &ClientScene) -> Finding {
    let history = &scene.history.clients[client];
    let ended = history.sessions_ended.last().copied();
    let unsent = c
        .unsent_failures
        .last()
        .map(|(at, request)| (*at, super::history::describe(request)));
    let last_loss = history
        .last_loss
        .clone()
        .into_iter()
        .chain(unsent)
        .max_by_key(|(at, _)| *at);
    if let Some((lost, request)) = last_loss
        .as_ref()
        .filter(|(lost, _)| *lost >= history.last_send_ns)
    {
        return Finding::new(
            "request-lost-not-retried",
            format!("waits for {waiting} with no watch armed; its {request} was lost to a connection loss"),
            "the recipe got ConnectionLoss and never sent the request again, so no watch was set".to_string(),
        )
        .at(*lost, format!("{request} lost with the connection"));
    }
    if let Some(finding) = persistent_watch(client, waiting, scene, c) {
        return finding;
    }
    if let Some((at, event, false)) = &history.last_event {
        let path = event
            .path
            .as_ref()
            .map_or("-".to_string(), |p| p.to_string());
        return Finding::new(
            "event-dropped",
            format!(
                "waits for {waiting} with no watch armed; the last event it received was {:?} on {path} at {}",
                event.event_type,
                fmt_time(*at)
            ),
            "the recipe received the event and sent nothing: it dropped it".to_string(),
        )
        .path(path)
        .at(*at, format!("{:?} reached the recipe", event.event_type));
    }
    if let Some(ended) = ended {
        return Finding::new(
            "watch-lost-with-session",
            format!("waits for {waiting} with no watch armed"),
            format!(
                "its session expired at {}, taking its watches, and the recipe never set new ones",
                fmt_time(ended)
            ),
        )
        .at(ended, "the server expired its session");
    }
    Finding::new(
        "no-watch",
        format!("waits for {waiting} with no watch, request or timer"),
        "nothing can wake it".to_string(),
    )
}

/// A client that waits on a persistent watch (`addWatch`) alone: a
/// change under its path after the client's connection dropped that never
/// reached it proves the watch missed it (ZooKeeper replays nothing a
/// persistent watch missed while disconnected, and the zookeeper-client
/// crate does not set one again at a reconnect). None without such a
/// watch; `undiagnosed` when nothing under it changed since the drop.
fn persistent_watch(
    client: ClientIndex,
    waiting: &str,
    scene: &Scene,
    c: &ClientScene,
) -> Option<Finding> {
    let recursive = c.watches.recursive.keys().map(|path| (path, true));
    let persistent = c.watches.persistent.keys().map(|path| (path, false));
    let (path, recursive) = recursive.chain(persistent).next()?;
    let kind = match recursive {
        true => "persistent recursive watch",
        false => "persistent watch",
    };
    let history = &scene.history.clients[client];
    let what = format!("waits for {waiting} on its {kind} on {path}");
    // The last node event it heard, and the first drop after it: what
    // changed after that drop is what the watch missed.
    let heard_ns = history
        .last_event
        .as_ref()
        .filter(|(_, event, _)| event.path.is_some())
        .map_or(0, |(at, _, _)| *at);
    let covered = |node: &Path| match recursive {
        true => path.covers(node) && node != path,
        false => node.parent().as_ref() == Some(path),
    };
    let drops = history.disconnects_heard.iter();
    let Some(&dropped_ns) = drops.filter(|at| **at >= heard_ns).min() else {
        return Some(Finding::new(
            "undiagnosed",
            what,
            "its connection did not drop after the last event it heard: what it waits for is the recipe's business".to_string(),
        ));
    };
    let missed = scene
        .history
        .nodes
        .iter()
        .filter(|(node, _)| covered(node))
        .flat_map(|(node, record)| {
            let created = (true, record.created_ns, node, "created".to_string());
            let removed = record
                .removed
                .as_ref()
                .map(|(at, removal)| (false, *at, node, removal_words(removal)));
            std::iter::once(created).chain(removed)
        })
        .filter(|(_, at, _, _)| *at >= dropped_ns)
        // A waiter waits for a node to go: the first removal it missed
        // before any creation.
        .min_by_key(|(created, at, _, _)| (*created, *at));
    let Some((_, missed_ns, node, how)) = missed else {
        return Some(Finding::new(
            "undiagnosed",
            what,
            format!(
                "nothing under {path} changed after its connection dropped at {}, the first time after the last event it heard: what it waits for is the recipe's business",
                fmt_time(dropped_ns)
            ),
        ));
    };
    Some(
        Finding::new(
            "persistent-watch-missed-change",
            what,
            format!(
                "its connection dropped at {} and {node} {how} at {} never came through the watch (no node event did after): a persistent watch misses what changes while the client is away (ZooKeeper replays nothing) and the zookeeper-client crate does not set it again at the reconnect; the recipe should watch and read again once reconnected",
                fmt_time(dropped_ns),
                fmt_time(missed_ns)
            ),
        )
        .path(path)
        .at(dropped_ns, "its connection dropped")
        .at(missed_ns, format!("{node} {how}")),
    )
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
