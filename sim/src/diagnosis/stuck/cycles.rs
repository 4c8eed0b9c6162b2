//! Clients that wait on each other in a ring: each waits for the next
//! one's node and the last for the first's. A ring is named by what broke
//! it when the history shows it (a client that recovered its own node and
//! does not place it, or one whose release was lost and that took its node
//! up again), else `circular-wait`.

use super::super::{Finding, Scene};
use super::watched::{created_another, current_attempt, lost_delete};
use super::WAITS_BEHIND_LATER;
use crate::oracles::ClientIndex;
use crate::server::NodeKind;
use zk_recipes::zk::Path;

/// Clients queued behind each other in a ring wait forever: each such
/// finding becomes `circular-wait`, naming the ring.
pub(super) fn mark_cycles(findings: &mut [Finding], scene: &Scene) {
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
