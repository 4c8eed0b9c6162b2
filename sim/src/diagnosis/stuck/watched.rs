//! A stuck client that waits on a watched node: a creation watch on a
//! node that is gone, a data watch on a node someone else (or the client
//! itself) holds, a children watch on a directory nobody will change. Each
//! is explained by whose node it is and what became of the step that should
//! have removed it (a lost release, an orphan create, a leftover of an
//! earlier attempt, a second node its owner holds).

use super::super::history::{DeleteFate, Ended, NodeRecord, Removal, WatchKind, WatchRecord};
use super::super::{Finding, Scene};
use super::{removal_words, set_words, WAITS_BEHIND_LATER};
use crate::oracles::{fmt_time, ClientIndex, SimNanos};
use crate::server::NodeKind;
use zk_recipes::zk::Path;

/// `node` was created by `client`'s current attempt: at or after the
/// application's last call (a client with no call recorded has one).
pub(super) fn current_attempt(client: ClientIndex, node: &NodeRecord, scene: &Scene) -> bool {
    scene.clients[client]
        .last_call
        .as_ref()
        .is_none_or(|(call_ns, _)| node.created_ns >= *call_ns)
}

/// The creator of `path` created another node under the same parent
/// after it (whether that one still exists or not).
pub(super) fn created_another(path: &Path, record: &NodeRecord, scene: &Scene) -> bool {
    let parent = path.parent();
    scene.history.nodes.iter().any(|(other, later)| {
        other != path
            && other.parent() == parent
            && later.creator == record.creator
            && later.created_ns > record.created_ns
    })
}

pub(super) fn watched(
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
pub(super) fn lost_delete(path: &Path, owner: ClientIndex, scene: &Scene) -> Option<SimNanos> {
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
