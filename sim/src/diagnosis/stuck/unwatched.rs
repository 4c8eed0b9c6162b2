//! A stuck client with no watch of its own wait armed: what became of its
//! last request (lost with the connection and never sent again), of the
//! last event it heard (dropped), of its session (expired with its
//! watches), or of a persistent watch that missed a change while the
//! client was away.

use super::super::{ClientScene, Finding, Scene};
use super::removal_words;
use crate::oracles::{fmt_time, ClientIndex};
use zk_recipes::zk::Path;

/// A client whose every armed watch was set before its last request: what
/// it waits on now is what became of that request (as for a client with
/// no watch), the stale watch a fact beside it. `no-watch` would be untrue
/// (a watch is armed): then `undiagnosed`.
pub(super) fn stale_watch(
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

/// No watch, no request, no timer: what happened to the last one.
pub(super) fn unwatched(
    client: ClientIndex,
    waiting: &str,
    scene: &Scene,
    c: &ClientScene,
) -> Finding {
    let history = &scene.history.clients[client];
    let ended = history.sessions_ended.last().copied();
    let unsent = c
        .unsent_failures
        .last()
        .map(|(at, request)| (*at, super::super::history::describe(request)));
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
