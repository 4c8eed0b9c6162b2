//! What one side of a fault script produced, in comparable form: per step
//! the reply and each session's events (the conformance suite's
//! `StepOutcome`), and the tree under the root at the end.
//!
//! Events keep their order across state changes (Disconnected before
//! SyncConnected matters) but node events between two state changes are
//! sorted: the live side only knows their order within a sweep.

use super::script::{Expect, FaultScript};
use crate::conformance_support::outcome::{
    brief, NormEvent, NormReply, NormStat, Normalizer, StepOutcome,
};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use zk_recipes::zk::{EventType, KeeperState, WatchedEvent};

/// A node under the root: its data and normalized stat, by placeholder path.
pub type Tree = BTreeMap<String, (Vec<u8>, NormStat)>;

/// One side's run of a fault script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    pub outcomes: Vec<StepOutcome>,
    pub tree: Tree,
}

/// The events in comparable order (see the module doc).
pub fn canonical_events(normalizer: &Normalizer<'_>, raw: &[WatchedEvent]) -> Vec<NormEvent> {
    let mut canonical = Vec::new();
    let mut node_run: Vec<WatchedEvent> = Vec::new();
    for event in raw {
        if event.event_type == EventType::None {
            canonical.extend(normalizer.events(&std::mem::take(&mut node_run)));
            canonical.extend(normalizer.events(std::slice::from_ref(event)));
        } else {
            node_run.push(event.clone());
        }
    }
    canonical.extend(normalizer.events(&node_run));
    canonical
}

/// The expectations of `script` that the live run breaks, described.
pub fn broken_expectations(script: &FaultScript, live: &Run) -> Vec<String> {
    let mut broken = Vec::new();
    for (step, expect) in &script.expects {
        let outcome = &live.outcomes[*step];
        let events_of = |session: &usize| outcome.events.get(session).cloned().unwrap_or_default();
        let holds = match expect {
            Expect::Ok => matches!(outcome.result, Some(Ok(_))),
            Expect::Err(error) => {
                outcome.result.as_ref().and_then(|r| r.as_ref().err()) == Some(error)
            }
            Expect::NodeEvents { session, count } => {
                let nodes = events_of(session)
                    .iter()
                    .filter(|e| e.path.is_some())
                    .count();
                nodes == *count
            }
            Expect::States { session, states } => states_of(&events_of(session)) == *states,
            Expect::Exists(present) => {
                matches!(&outcome.result, Some(Ok(NormReply::Exists(stat))) if stat.is_some() == *present)
            }
        };
        if !holds {
            broken.push(format!(
                "step {step} ({}): expected {expect:?}, got {}",
                script.steps[*step],
                brief(outcome)
            ));
        }
    }
    broken
}

fn states_of(events: &[NormEvent]) -> Vec<KeeperState> {
    events
        .iter()
        .filter(|e| e.event_type == EventType::None)
        .map(|e| e.state)
        .collect()
}

/// The failure report: every step on both sides (differences marked), then
/// the trees where they differ.
pub fn report(script: &FaultScript, root: &str, live: &Run, sim: &Run) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "fault script {:?}: links {:?}, proxied session timeout {} ms, {} steps (root {root} on both servers, written /~ below)",
        script.name,
        script.links,
        script.proxied_timeout_ms,
        script.steps.len()
    );
    for (i, step) in script.steps.iter().enumerate() {
        let (l, s) = (live.outcomes.get(i), sim.outcomes.get(i));
        let mark = if l == s { "  " } else { ">>" };
        let _ = writeln!(out, "{mark} {i:>2}. {step}");
        let _ = writeln!(
            out,
            "       live: {}",
            l.map_or("(not run)".to_string(), brief)
        );
        if l != s {
            let _ = writeln!(
                out,
                "       sim:  {}",
                s.map_or("(not run)".to_string(), brief)
            );
        }
    }
    if live.tree != sim.tree {
        let _ = writeln!(out, ">> the trees after differ:");
        let paths: std::collections::BTreeSet<&String> =
            live.tree.keys().chain(sim.tree.keys()).collect();
        for path in paths {
            let (l, s) = (live.tree.get(path), sim.tree.get(path));
            if l != s {
                let _ = writeln!(out, "   {path}\n       live: {l:?}\n       sim:  {s:?}");
            }
        }
    }
    out
}
