//! What a diagnosis says ([`Diagnosis`]: a mechanism, a sentence, one
//! [`Finding`] per client or node involved) and the signature a sweep
//! buckets a violation by. Plain data the oracles carry on a violation;
//! the diagnoses that fill it are the rest of `super`.

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
