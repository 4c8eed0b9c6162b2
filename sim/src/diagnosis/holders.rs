//! Mutual exclusion, one leader, fencing and FIFO: who held, and how each
//! got there (its node, its sequence number, its session's fate).

use super::history::{Hold, Listing, Removal};
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
    if let Some(listing) = &hold.decided_on {
        let own = match &node {
            Some(node) if listing.has(&node.path) => "its node among them",
            Some(_) => "its node not among them",
            None => "it has no node",
        };
        finding = finding.at(
            listing.at_ns,
            format!(
                "read the children of {} ({}: {own}), the last listing before it acquired",
                listing.dir,
                names(&listing.children)
            ),
        );
    }
    finding
}

/// Up to eight of a listing's names, and how many there were.
fn names(children: &[String]) -> String {
    const SHOWN: usize = 8;
    match children.len() {
        0 => "no children".to_string(),
        n if n <= SHOWN => children.join(", "),
        n => format!("{}, … {n} in all", children[..SHOWN].join(", ")),
    }
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
    } else if let Some((misjudged, ahead, other)) = order_misjudged(scene, &holders) {
        (
            "sorted-by-name-not-sequence",
            format!(
                "c{misjudged} took its node for one within the leases although c{other}'s {ahead} has a lower sequence number in the listing it decided on: ordered by full name its node came first, ordered by sequence it did not"
            ),
            "ordering contenders by full name puts a smaller prefix (a session id) first whatever its sequence".to_string(),
        )
    } else if let Some((counter, listing, missed, node)) = counted_before_creating(scene, &holders)
    {
        (
            "counted-before-creating",
            format!(
                "c{counter} counted {} children of {} at {} and then created its node, and so did another holder: c{missed} created {node} after that count, so neither count saw the other's node and both hold",
                listing.children.len(),
                listing.dir,
                fmt_time(listing.at_ns)
            ),
            "reading the children, seeing room, then creating is a check-then-act: another client can do the same in between; create the node first and decide on a listing that holds it".to_string(),
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
            "their sessions were alive; the history proves no mechanism (no expiry, adopted node, name order or count before a create): each holder's finding shows the listing it decided on".to_string(),
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

/// A holder that took its node for one within the leases (the first, for
/// a lock) because its name sorts there, with the listing it decided on as
/// proof: ordered by sequence number, its node was not within the leases
/// in that listing, ordered by full name it was, and a node it jumped (one
/// ahead of it by sequence whose name sorts after its own) is another
/// holder's, whose hold conflicts with its own (not two shared holds).
/// `slots`: how many holders the property allows (one fewer than those who
/// held at the violation). Returns the misjudging holder, the node it
/// jumped and that node's holder.
fn order_misjudged(scene: &Scene, holders: &[&Hold]) -> Option<(ClientIndex, Path, ClientIndex)> {
    let slots = holders.len().saturating_sub(1).max(1);
    let nodes: Vec<(&Hold, Contender)> = holders
        .iter()
        .filter_map(|h| Some((*h, contender(scene, h.client, h.from_ns)?)))
        .collect();
    nodes.iter().find_map(|(hold, mine)| {
        let jumped = misjudged_in(hold.decided_on.as_ref()?, mine, slots);
        jumped.iter().find_map(|ahead| {
            let (other, _) = nodes.iter().find(|(other, theirs)| {
                other.client != hold.client
                    && theirs.path == ahead.path
                    && !(other.shared && hold.shared)
            })?;
            Some((hold.client, ahead.path.clone(), other.client))
        })
    })
}

/// In `listing` (which holds `mine`): `mine` is within the first `slots`
/// contenders by name and not by sequence number; the contenders ahead of
/// it by sequence whose names sort after its own. Only contenders whose
/// names have `mine`'s shape count (see [`name_order_inverted`]).
fn misjudged_in(listing: &Listing, mine: &Contender, slots: usize) -> Vec<Contender> {
    if !listing.has(&mine.path) {
        return Vec::new();
    }
    let shape = prefix_shape(&mine.path);
    let contenders: Vec<Contender> = listing
        .children
        .iter()
        .filter_map(|name| Some(contender_of(&listing.dir.child(name).ok()?)))
        .filter(|c| c.sequence.is_some() && prefix_shape(&c.path) == shape)
        .collect();
    let by_name = contenders
        .iter()
        .filter(|c| c.path.name() < mine.path.name())
        .count();
    let by_sequence = contenders
        .iter()
        .filter(|c| c.sequence < mine.sequence)
        .count();
    if by_name >= slots || by_sequence < slots {
        return Vec::new();
    }
    contenders
        .into_iter()
        .filter(|c| name_order_inverted(mine, c))
        .collect()
}

/// Two holders that counted before they created (a check-then-act on the
/// children), with the listings as proof: each decided on a listing of its
/// node's directory read before it created its node (its own node is not
/// in it), and one's listing was read before another holder's node was
/// created, so its count missed that holder. Returns (the holder whose
/// count missed, its listing, the holder it missed, that one's node).
fn counted_before_creating<'a>(
    scene: &'a Scene,
    holders: &[&'a Hold],
) -> Option<(ClientIndex, &'a Listing, ClientIndex, Path)> {
    let counted: Vec<(&Hold, &Listing, Path)> = holders
        .iter()
        .filter_map(|hold| {
            let (node, record) = scene.history.node_of(hold.client, hold.from_ns)?;
            let listing = hold.decided_on.as_ref()?;
            let before = listing.at_ns <= record.created_ns && !listing.has(node);
            before.then(|| (*hold, listing, node.clone()))
        })
        .collect();
    if counted.len() < 2 {
        return None;
    }
    counted.iter().find_map(|(hold, listing, _)| {
        counted.iter().find_map(|(other, _, node)| {
            let created = scene.history.nodes.get(node)?.created_ns;
            let missed = other.client != hold.client
                && listing.dir == node.parent()?
                && !listing.has(node)
                && created >= listing.at_ns;
            missed.then(|| (hold.client, *listing, other.client, node.clone()))
        })
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
    // Proof that it sorted by name: in the listing it decided on, its node
    // came first by name and not by sequence number.
    let inverted = mine.as_ref().and_then(|mine| {
        let jumped = misjudged_in(hold.decided_on.as_ref()?, mine, 1);
        let ahead = jumped.into_iter().min_by_key(|c| c.sequence)?;
        let creator = scene.history.nodes.get(&ahead.path)?.creator;
        Some((creator, ahead))
    });
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
