//! Mutual exclusion, one leader, fencing and FIFO: who held, and how each
//! got there (its node, its sequence number, its session's fate).

use super::history::{Hold, Removal};
use super::stuck::removal_text;
use super::{Diagnosis, Finding, Scene};
use crate::oracles::{fmt_time, ClientIndex, SimNanos, Violation};
use zk_recipes::sequence::parse_sequence;
use zk_recipes::zk::Path;

/// A holder's contender node: its path and sequence number.
struct Contender {
    path: Path,
    sequence: Option<i32>,
}

fn contender(scene: &Scene, client: ClientIndex, at_ns: SimNanos) -> Option<Contender> {
    let (path, _) = scene.history.node_of(client, at_ns)?;
    Some(contender_of(path))
}

fn contender_of(path: &Path) -> Contender {
    let name = path.name();
    let sequence = name
        .len()
        .checked_sub(10)
        .and_then(|start| parse_sequence(&name[start..]));
    Contender {
        path: path.clone(),
        sequence,
    }
}

/// How one holder got there, as a finding.
fn holder_finding(scene: &Scene, hold: &Hold) -> Finding {
    let client = hold.client;
    let node = contender(scene, client, hold.from_ns);
    let node_words = node
        .as_ref()
        .map_or(String::new(), |n| format!(" with {}", n.path));
    let mut finding = Finding::new(
        "holder",
        format!(
            "acquired at {}{node_words} (token {})",
            fmt_time(hold.from_ns),
            hold.token
        ),
        String::new(),
    )
    .client(client)
    .at(hold.from_ns, "acquired");
    if let Some(node) = &node {
        finding = finding.path(&node.path);
        if let Some((gone, removal)) = scene
            .history
            .nodes
            .get(&node.path)
            .and_then(|n| n.removed.as_ref())
        {
            finding = finding.at(*gone, format!("{} {}", node.path, removal_text(removal)));
        }
    }
    if let Some(ended) = hold.session_ended_ns {
        finding = finding.at(
            ended,
            "the server expired its session; it still believes it holds",
        );
    }
    for (start, ms) in &scene.history.clients[client].pauses {
        if *start >= hold.from_ns {
            finding = finding.at(*start, format!("paused for {ms} ms"));
        }
    }
    if let Some(heard) = disconnect_heard_while_holding(scene, hold) {
        finding = finding.at(heard, "heard Disconnected; went on holding");
    }
    finding
}

/// When `hold`'s client last heard its connection drop while it held and
/// before the server expired its session: it knew its hold was in doubt.
fn disconnect_heard_while_holding(scene: &Scene, hold: &Hold) -> Option<SimNanos> {
    let ended = hold.session_ended_ns?;
    let heard = &scene.history.clients[hold.client].disconnects_heard;
    let in_hold = |at: &&SimNanos| **at >= hold.from_ns && **at <= ended;
    heard.iter().rev().find(in_hold).copied()
}

pub fn exclusion(violation: &Violation, scene: &Scene) -> Diagnosis {
    let mut holders: Vec<&Hold> = scene.history.holders_at(violation.at_ns);
    holders.sort_by_key(|h| h.from_ns);
    let mut findings: Vec<Finding> = holders.iter().map(|h| holder_finding(scene, h)).collect();
    let fates: Vec<(&Hold, Option<NodeFate>)> = holders
        .iter()
        .map(|h| (*h, node_fate(scene, h, violation.at_ns)))
        .collect();
    let stale = fates.iter().find_map(|(h, fate)| match fate {
        Some(NodeFate::WentWithOwnSession(ended)) => Some((*h, *ended)),
        _ => None,
    });
    let adopted = fates.iter().find_map(|(h, fate)| match fate {
        Some(NodeFate::WentWithAbandonedSession(path, gone)) => Some((h.client, path, *gone)),
        _ => None,
    });
    let heard = stale.and_then(|(stale, _)| disconnect_heard_while_holding(scene, stale));
    let (mechanism, summary, why) = if let (Some((stale, ended)), Some(heard)) = (stale, heard) {
        (
            "held-through-disconnect",
            format!(
                "c{} heard Disconnected at {} and went on holding; the server expired its session at {}, its node went and another client acquired",
                stale.client,
                fmt_time(heard),
                fmt_time(ended)
            ),
            "a holder that hears Disconnected no longer knows it holds: the servers may expire its session before it hears from them again, so it must stop acting as holder until it reconnects (Curator's LeaderLatch steps down on SUSPENDED), or the resource must check a fencing token".to_string(),
        )
    } else if let Some((stale, ended)) = stale {
        let paused = scene.history.clients[stale.client]
            .pauses
            .iter()
            .rev()
            .find(|(start, _)| *start <= ended)
            .map_or(String::new(), |(start, ms)| {
                format!(" (paused for {ms} ms from {})", fmt_time(*start))
            });
        (
            "stale-holder-after-expiry",
            format!(
                "c{} kept believing it held after the server expired its session at {}{paused}; its node went and another client acquired",
                stale.client,
                fmt_time(ended)
            ),
            "a session can expire under a holder that does not hear of it (a pause, a partition): only a fencing token checked by the resource keeps the old holder out".to_string(),
        )
    } else if let Some((adopter, node, gone)) = adopted {
        (
            "adopted-abandoned-node",
            format!(
                "c{adopter} held with {}, a node of a session it had given up on (client-side expiry); the server expired that session at {}, the node went and another client acquired while c{adopter}'s new session still believed it held",
                node,
                fmt_time(gone)
            ),
            "a retried create that finds its node by a unique id must check that the node's ephemeral owner is its current session: a node of an abandoned session goes when the server expires that session (CURATOR-498)".to_string(),
        )
    } else if let Some((misjudged, ahead)) = order_misjudged(scene, &holders) {
        (
            "sorted-by-name-not-sequence",
            format!(
                "c{misjudged} took its node for the first although c{ahead}'s has a lower sequence number: the names sort by their prefix, not their sequence suffix"
            ),
            "ordering contenders by full name puts a smaller prefix (a session id) first whatever its sequence".to_string(),
        )
    } else if violation.message.contains("not above token") {
        (
            "token-not-increasing",
            "a later acquisition got a fencing token not above an earlier one".to_string(),
            "the token must grow with every acquisition for a resource to reject stale holders"
                .to_string(),
        )
    } else {
        (
            "two-live-holders",
            format!("{} clients with live sessions held at once", holders.len()),
            "each believed it was first among the contenders".to_string(),
        )
    };
    for finding in &mut findings {
        finding.mechanism = mechanism.to_string();
        finding.why = why.clone();
    }
    Diagnosis {
        mechanism: mechanism.to_string(),
        summary,
        findings,
    }
}

/// How a holder's session or contender node was ended before the
/// violation, if it was.
enum NodeFate {
    /// The server ended the holder's session (while it held, or before it
    /// acted on a stale view): when.
    WentWithOwnSession(SimNanos),
    /// The node went with a session that was not the holder's current one
    /// when it ended (one the client had given up on, while its new
    /// session lived on): the recipe adopted that session's node.
    WentWithAbandonedSession(Path, SimNanos),
}

fn node_fate(scene: &Scene, hold: &Hold, at_ns: SimNanos) -> Option<NodeFate> {
    if let Some(ended) = hold.session_ended_ns.filter(|ended| *ended <= at_ns) {
        return Some(NodeFate::WentWithOwnSession(ended));
    }
    let (path, node) = scene.history.node_of(hold.client, hold.from_ns)?;
    let Some((gone, Removal::SessionEnded { client })) = &node.removed else {
        return None;
    };
    if *client != hold.client || *gone > at_ns {
        return None;
    }
    let current = scene.history.clients[hold.client]
        .sessions_ended
        .contains(gone);
    Some(match current {
        true => NodeFate::WentWithOwnSession(*gone),
        false => NodeFate::WentWithAbandonedSession(path.clone(), *gone),
    })
}

/// Two holders: one that took its node for the first because its name
/// sorts first, and one whose node has a lower sequence number. Every
/// ordered pair is checked: the holder that misjudged can be the earlier
/// one (a newcomer then read a list without it) or the newcomer.
fn order_misjudged(scene: &Scene, holders: &[&Hold]) -> Option<(ClientIndex, ClientIndex)> {
    let contenders: Vec<(ClientIndex, Contender)> = holders
        .iter()
        .filter_map(|h| Some((h.client, contender(scene, h.client, h.from_ns)?)))
        .collect();
    contenders.iter().find_map(|(misjudged, mine)| {
        contenders
            .iter()
            .find(|(_, theirs)| name_order_inverted(mine, theirs))
            .map(|(ahead, _)| (*misjudged, *ahead))
    })
}

/// `mine` sorts first by name while `theirs` came first by sequence, and
/// the two names differ in a per-client part of one shape (`x-<session>-`):
/// names whose prefixes say different things (`read-`, `write-`) sort by
/// prefix by design, so their order says nothing about how the recipe
/// sorted them.
fn name_order_inverted(mine: &Contender, theirs: &Contender) -> bool {
    match (mine.sequence, theirs.sequence) {
        (Some(m), Some(t)) => {
            m > t
                && mine.path.name() < theirs.path.name()
                && prefix_shape(&mine.path) == prefix_shape(&theirs.path)
        }
        _ => false,
    }
}

/// A name's prefix (before its 10-digit sequence suffix) with every word
/// that holds a digit (a session id, a unique id) replaced by `#`:
/// `x-4242-` → `x-#-`, `read-` → `read-`.
fn prefix_shape(path: &Path) -> String {
    let name = path.name();
    let prefix = name.get(..name.len().saturating_sub(10)).unwrap_or(name);
    let mut shape = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, shape: &mut String| {
        if word.chars().any(|c| c.is_ascii_digit()) {
            shape.push('#');
        } else {
            shape.push_str(word);
        }
        word.clear();
    };
    for c in prefix.chars() {
        if c.is_ascii_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut shape);
            shape.push(c);
        }
    }
    flush(&mut word, &mut shape);
    shape
}

pub fn fifo(violation: &Violation, scene: &Scene) -> Diagnosis {
    let Some(hold) = scene
        .history
        .holds
        .iter()
        .rev()
        .find(|h| h.from_ns == violation.at_ns)
    else {
        return Diagnosis {
            mechanism: "unexplained".to_string(),
            summary: violation.message.clone(),
            findings: Vec::new(),
        };
    };
    let mut finding = holder_finding(scene, hold);
    let mine = contender(scene, hold.client, hold.from_ns);
    let dir = scene.fifo_dir;
    let ahead: Vec<(ClientIndex, Contender)> = scene
        .history
        .nodes
        .iter()
        .filter(|(path, node)| {
            node.creator != hold.client
                && node.created_ns < hold.from_ns
                && node
                    .removed
                    .as_ref()
                    .is_none_or(|(at, _)| *at > hold.from_ns)
                && dir.is_none_or(|dir| path.parent().as_ref() == Some(dir))
                && !node.persistent
        })
        .map(|(path, node)| (node.creator, contender_of(path)))
        .filter(|(_, c)| {
            mine.as_ref()
                .is_some_and(|m| c.sequence.zip(m.sequence).is_some_and(|(t, m)| t < m))
        })
        .collect();
    let inverted = mine
        .as_ref()
        .and_then(|m| ahead.iter().find(|(_, c)| name_order_inverted(m, c)));
    let (mechanism, summary) = match inverted {
        Some((waiter, theirs)) => (
            "sorted-by-name-not-sequence",
            format!(
                "c{} acquired with {} while c{waiter}'s {} came first: the names sort by their prefix, not their sequence suffix",
                hold.client,
                mine.as_ref().map_or("-".to_string(), |m| m.path.to_string()),
                theirs.path
            ),
        ),
        None => (
            "jumped-the-queue",
            format!("c{} acquired while older contenders waited", hold.client),
        ),
    };
    finding.mechanism = mechanism.to_string();
    finding.why = violation.events.join("; ");
    Diagnosis {
        mechanism: mechanism.to_string(),
        summary,
        findings: vec![finding],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contender(path: &str) -> Contender {
        contender_of(&Path::new(path).unwrap())
    }

    #[test]
    fn a_name_order_is_blamed_only_between_names_of_one_shape() {
        let newcomer = contender("/locks/x-17-0000000005");
        let older = contender("/locks/x-42-0000000003");
        assert!(name_order_inverted(&newcomer, &older), "x-17- sorts first");
        let reader = contender("/rw/read-0000000003");
        let writer = contender("/rw/write-0000000001");
        assert!(
            !name_order_inverted(&reader, &writer),
            "read- and write- sort by their meaning, not by a client's id"
        );
        assert_eq!(
            prefix_shape(&Path::new("/l/x-4242-0000000001").unwrap()),
            "x-#-"
        );
    }
}
