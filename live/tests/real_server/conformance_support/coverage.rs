//! What the scripts exercised on the live side: kinds of replies and
//! errors, events, closes, waits and reaps, with counts. The property test
//! prints it, so a reader can judge whether the random sequences reach the
//! interesting cases (NotEmpty, watches firing, containers reaped, ...).

use super::outcome::{NormReply, StepOutcome};
use super::script::{Script, Step};
use std::collections::BTreeMap;
use std::sync::Mutex;
use zk_recipes::zk::Path;

/// Counts per kind of outcome, shared by the tests of one harness.
#[derive(Default)]
pub struct Coverage(Mutex<BTreeMap<String, usize>>);

impl Coverage {
    /// Counts the live outcomes of one script run.
    pub fn record(&self, script: &Script, live: &[StepOutcome], reaped: &[Vec<Path>]) {
        let mut counts = self.0.lock().unwrap();
        let mut count = |kind: String| *counts.entry(kind).or_insert(0) += 1;
        for ((step, outcome), reaped) in script.steps.iter().zip(live).zip(reaped) {
            match (&outcome.result, step) {
                (Some(Ok(reply)), _) => count(format!("ok {}", reply_kind(reply))),
                (Some(Err(error)), _) => count(format!("error {error:?}")),
                (None, Step::Close { .. }) => count("close".to_string()),
                (None, _) => count("wait".to_string()),
            }
            for event in outcome.events.values().flatten() {
                count(format!("event {:?}", event.event_type));
            }
            if !reaped.is_empty() {
                count("reap".to_string());
            }
        }
    }

    /// "kind: count, ..." in kind order.
    pub fn summary(&self) -> String {
        let counts = self.0.lock().unwrap();
        let parts: Vec<String> = counts
            .iter()
            .map(|(kind, count)| format!("{kind}: {count}"))
            .collect();
        parts.join(", ")
    }
}

fn reply_kind(reply: &NormReply) -> &'static str {
    match reply {
        NormReply::Created { .. } => "Created",
        NormReply::Deleted => "Deleted",
        NormReply::Exists(Some(_)) => "Exists(Some)",
        NormReply::Exists(None) => "Exists(None)",
        NormReply::Data { .. } => "Data",
        NormReply::DataSet(_) => "DataSet",
        NormReply::Children(_) => "Children",
        NormReply::Children2 { .. } => "Children2",
        NormReply::Checked => "Checked",
        NormReply::Multi(_) => "Multi",
        NormReply::Synced { .. } => "Synced",
        NormReply::WatchAdded => "WatchAdded",
        NormReply::MultiRead(_) => "MultiRead",
        NormReply::Ephemerals(_) => "Ephemerals",
        NormReply::AllChildrenNumber(_) => "AllChildrenNumber",
        NormReply::Other(_) => "Other",
    }
}
