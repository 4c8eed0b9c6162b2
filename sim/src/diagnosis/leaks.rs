//! No leaks: each node left behind, who created it, and what became of
//! the step that should have deleted it.

use super::history::{DeleteFate, NodeRecord};
use super::{root, Diagnosis, Finding, Scene};
use crate::oracles::{fmt_time, ClientIndex, SimNanos, Violation};
use crate::server::NodeKind;
use zk_recipes::zk::Path;

pub(super) const PRIORITY: &[&str] = &[
    "orphan-create",
    "delete-lost",
    "delete-refused",
    "parent-never-deleted",
    "never-deleted",
    "unknown-creator",
];

pub fn diagnose(violation: &Violation, scene: &Scene) -> Diagnosis {
    let findings: Vec<Finding> = leaked_paths(violation)
        .into_iter()
        .map(|path| leaked(&path, scene))
        .collect();
    let Some(first) = root(&findings, PRIORITY) else {
        return Diagnosis {
            mechanism: "unexplained".to_string(),
            summary: violation.message.clone(),
            findings,
        };
    };
    let summary = format!(
        "{}: {}{}",
        first.path.clone().unwrap_or_default(),
        first.what,
        match findings.len() - 1 {
            0 => String::new(),
            n => format!(" ({n} more node(s) left)"),
        }
    );
    Diagnosis {
        mechanism: first.mechanism.clone(),
        summary,
        findings: findings.clone(),
    }
}

/// The leak oracle lists one node per event line, its path first.
fn leaked_paths(violation: &Violation) -> Vec<Path> {
    violation
        .events
        .iter()
        .filter_map(|line| line.split_whitespace().next())
        .filter_map(|word| Path::new(word.trim_end_matches(':')).ok())
        .collect()
}

fn leaked(path: &Path, scene: &Scene) -> Finding {
    let Some(node) = scene.history.nodes.get(path) else {
        return Finding::new(
            "unknown-creator",
            "was not created by a client request the world saw".to_string(),
            "nobody is responsible for deleting it".to_string(),
        )
        .path(path);
    };
    let creator = node.creator;
    let base = |mechanism: &str, what: String, why: String| {
        Finding::new(mechanism, what, why)
            .path(path)
            .client(creator)
            .at(node.created_ns, format!("c{creator} created it"))
    };
    if !node.name_known() {
        let mut finding = base(
            "orphan-create",
            format!("created by c{creator}, which never received the reply"),
            format!("c{creator} never learned the node's name, so nothing deletes it"),
        );
        if let Some(lost) = node.reply_lost_ns {
            finding = finding.at(lost, "the create's reply was lost");
        }
        return finding;
    }
    let unsent = unsent_delete(path, scene)
        .filter(|(at, _)| node.deletes.last().is_none_or(|d| d.at_ns <= *at));
    if let Some((at_ns, by)) = unsent {
        return base(
            "delete-lost",
            format!(
                "created by c{creator}; c{by}'s delete was queued at {} while c{by} was disconnected",
                fmt_time(at_ns)
            ),
            format!(
                "c{by}'s delete never reached the server: it failed with ConnectionLoss while queued (at the drop or a failed reconnect attempt) and the recipe did not retry it"
            ),
        )
        .at(at_ns, format!("c{by}'s queued delete failed unsent"));
    }
    if let Some(attempt) = node.deletes.last() {
        let (mechanism, why) = match &attempt.fate {
            DeleteFate::LostBeforeApply => (
                "delete-lost",
                format!(
                    "c{}'s delete was lost with its connection and the recipe did not retry it",
                    attempt.client
                ),
            ),
            DeleteFate::Refused(error) => (
                "delete-refused",
                format!(
                    "the server refused c{}'s delete with {error}",
                    attempt.client
                ),
            ),
            DeleteFate::Applied { .. } => (
                "never-deleted",
                "its delete applied, yet the node is back: it was created again".to_string(),
            ),
        };
        return base(
            mechanism,
            format!(
                "created by c{creator}; a delete was tried at {}",
                fmt_time(attempt.at_ns)
            ),
            why,
        )
        .at(
            attempt.at_ns,
            format!("c{} sent the delete", attempt.client),
        );
    }
    never_deleted(path, node, scene, base)
}

/// The latest delete of `path` a session layer failed before sending it:
/// its time and client.
pub(super) fn unsent_delete(path: &Path, scene: &Scene) -> Option<(SimNanos, ClientIndex)> {
    scene
        .clients
        .iter()
        .enumerate()
        .filter_map(|(client, c)| Some((c.unsent_delete_of(path)?, client)))
        .max()
}

fn never_deleted(
    path: &Path,
    node: &NodeRecord,
    scene: &Scene,
    base: impl Fn(&str, String, String) -> Finding,
) -> Finding {
    let creator = node.creator;
    let has_children_dir = scene
        .history
        .nodes
        .keys()
        .any(|other| other.parent().as_ref() == Some(path));
    match scene.server.node_kind(path) {
        Some(NodeKind::Persistent) if has_children_dir => base(
            "parent-never-deleted",
            format!("a persistent parent c{creator} created for its contenders"),
            "the recipe never deletes the parent once its children are gone (a container node would be reaped)".to_string(),
        ),
        Some(NodeKind::Ephemeral { owner }) => base(
            "never-deleted",
            format!("an ephemeral node of c{creator}, whose session is alive"),
            format!(
                "no delete was sent; it goes only when {}'s session ends",
                super::client_name(scene.owner_client(owner))
            ),
        ),
        _ => base(
            "never-deleted",
            format!("created by c{creator}"),
            "no delete was ever sent for it".to_string(),
        ),
    }
}
