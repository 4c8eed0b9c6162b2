//! What a diagnosis says ([`Diagnosis`]: a mechanism, a sentence, one
//! [`Finding`] per client or node involved) and the signature a sweep
//! buckets a violation by. Plain data the oracles carry on a violation;
//! the diagnoses that fill it are `crate::diagnosis`, above the oracles;
//! this file is below both, with the names of every mechanism.

use crate::units::{fmt_time, ClientIndex, SimNanos};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a property broke.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// The mechanism's stable name: the second half of the signature.
    pub mechanism: String,
    /// One sentence a reader understands without the trace.
    pub summary: String,
    /// One entry per stuck client, leaked node or holder.
    pub findings: Vec<Finding>,
}

/// One client's or node's part in a diagnosis.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub client: Option<ClientIndex>,
    pub path: Option<String>,
    pub mechanism: String,
    /// What it waits for / what happened to it.
    pub what: String,
    /// Why nothing will change it.
    pub why: String,
    /// Times that matter, oldest first.
    pub moments: Vec<(SimNanos, String)>,
}

impl Finding {
    pub(super) fn new(mechanism: &str, what: String, why: String) -> Finding {
        Finding {
            client: None,
            path: None,
            mechanism: mechanism.to_string(),
            what,
            why,
            moments: Vec::new(),
        }
    }

    pub(super) fn client(mut self, client: ClientIndex) -> Finding {
        self.client = Some(client);
        self
    }

    pub(super) fn path(mut self, path: impl fmt::Display) -> Finding {
        self.path = Some(path.to_string());
        self
    }

    pub(super) fn at(mut self, at_ns: SimNanos, what: impl Into<String>) -> Finding {
        self.moments.push((at_ns, what.into()));
        self.moments.sort_by_key(|(at, _)| *at);
        self
    }
}

impl fmt::Display for Diagnosis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "why: {}", self.summary)?;
        for finding in &self.findings {
            let who = match (finding.client, &finding.path) {
                (Some(client), _) => format!("c{client}"),
                (None, Some(path)) => path.clone(),
                (None, None) => "-".to_string(),
            };
            writeln!(f, "  {who} [{}]: {}", finding.mechanism, finding.what)?;
            writeln!(f, "      {}", finding.why)?;
            for (at, what) in &finding.moments {
                writeln!(f, "      {:>12} {what}", fmt_time(*at))?;
            }
        }
        Ok(())
    }
}

/// The signature a sweep buckets a violation by: `property/mechanism`.
pub fn signature(property: &str, diagnosis: Option<&Diagnosis>) -> String {
    match diagnosis {
        Some(diagnosis) => format!("{property}/{}", diagnosis.mechanism),
        None => format!("{property}/undiagnosed"),
    }
}

/// Every mechanism a diagnosis can name (a scenario's `expect_signature`
/// must use one of them).
pub const MECHANISMS: &[&str] = &[
    // liveness
    "watch-on-deleted-node",
    "release-lost",
    "orphan-node",
    "waits-on-own-node",
    "leftover-own-node",
    "holds-two-nodes",
    "name-collision",
    "children-left-before-read",
    "request-lost-not-retried",
    "event-dropped",
    "persistent-watch-missed-change",
    "watch-lost-with-session",
    "circular-wait",
    "children-never-change",
    "waits-on-finished-client",
    "no-watch",
    "waits-for-reply",
    "waits-for-timer",
    "not-connected",
    "paused",
    "never-connected",
    "queued-behind-stuck-client",
    // the harness's configuration, not the recipe
    "heal-window-too-short",
    // no leaks
    "orphan-create",
    "delete-lost",
    "delete-refused",
    "parent-never-deleted",
    "never-deleted",
    "unknown-creator",
    // mutual exclusion, one leader, fencing, FIFO
    "stale-holder-after-expiry",
    "held-through-disconnect",
    "adopted-abandoned-node",
    "sorted-by-name-not-sequence",
    "counted-before-creating",
    "token-not-increasing",
    "two-live-holders",
    "jumped-the-queue",
    // herd, queues, barriers
    "one-release-wakes-many",
    "phantom-item",
    "item-delivered-twice",
    "item-lost",
    "out-of-order",
    "passed-early",
    // node churn; a recipe's own invariant (reported, or under a refused name)
    "create-churn",
    "reported",
    "refused-name",
    "unexplained",
    // the diagnosis is not sure of any mechanism
    "undiagnosed",
];
