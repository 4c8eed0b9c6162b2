//! Mutual exclusion, one leader, fencing and FIFO: who held, and how each
//! got there (its node, its sequence number, its session's fate).

use super::history::Hold;
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
    let node_words = node.as_ref().map_or(String::new(), |n| format!(" with {}", n.path));
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
        finding = finding.at(ended, "the server expired its session; it still believes it holds");
    }
    for (start, ms) in &scene.history.clients[client].pauses {
        if *start >= hold.from_ns {
            finding = finding.at(*start, format!("paused for {ms} ms"));
        }
    }
    finding
}

pub fn exclusion(violation: &Violation, scene: &Scene) -> Diagnosis {
    let mut holders: Vec<&Hold> = scene.history.holders_at(violation.at_ns);
    holders.sort_by_key(|h| h.from_ns);
    let mut findings: Vec<Finding> = holders.iter().map(|h| holder_finding(scene, h)).collect();
    let stale = holders
        .iter()
        .find(|h| h.session_ended_ns.is_some_and(|ended| ended <= violation.at_ns));
    let (mechanism, summary, why) = if let Some(stale) = stale {
        let ended = stale.session_ended_ns.unwrap_or_default();
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
    } else if let Some((newcomer, earlier)) = order_misjudged(scene, &holders) {
        (
            "sorted-by-name-not-sequence",
            format!(
                "c{newcomer} took its node for the first although c{earlier}'s has a lower sequence number: the names sort by their prefix, not their sequence suffix"
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

/// A newcomer whose node has a higher sequence number than an earlier
/// holder's (or a waiter's) but a name that sorts before it.
fn order_misjudged(scene: &Scene, holders: &[&Hold]) -> Option<(ClientIndex, ClientIndex)> {
    let newcomer = holders.last()?;
    let mine = contender(scene, newcomer.client, newcomer.from_ns)?;
    holders[..holders.len() - 1].iter().find_map(|earlier| {
        let theirs = contender(scene, earlier.client, newcomer.from_ns)?;
        name_order_inverted(&mine, &theirs).then_some((newcomer.client, earlier.client))
    })
}

/// `mine` sorts first by name while `theirs` came first by sequence.
fn name_order_inverted(mine: &Contender, theirs: &Contender) -> bool {
    match (mine.sequence, theirs.sequence) {
        (Some(m), Some(t)) => m > t && mine.path.name() < theirs.path.name(),
        _ => false,
    }
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
                && node.removed.as_ref().is_none_or(|(at, _)| *at > hold.from_ns)
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
