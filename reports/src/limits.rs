//! What a renderer may be asked to draw: a report document read from a
//! file is user input, and a number in it must never size an allocation
//! or a loop beyond reason (one client numbered 300,000,000 once asked the
//! sequence diagram for a 2 GB array of lanes).
//!
//! - Client numbers (a run's `clients`, a trace event's, a hold's, a
//!   finding's) are at most [`MAX_CLIENTS`]: they size the pictures' lanes
//!   and rows. [`check`] refuses a document beyond it (called by
//!   [`crate::from_json`]), naming the key.
//! - The ownership timeline draws at most [`MAX_DRAWN_HOLDS`] spans (and
//!   looks for overlaps among those only, a quadratic search), saying so
//!   in the picture when a run has more.
//! - The sequence diagram draws a bounded window of events already
//!   ([`crate::svg::sequence::Window`]).

use crate::schema::Report;

/// Most clients a report's pictures draw lanes or rows for: far above
/// what zkcheck runs (a scenario has at most 256 clients).
pub const MAX_CLIENTS: usize = 4096;

/// Most hold spans the ownership timeline draws.
pub const MAX_DRAWN_HOLDS: usize = 2000;

/// A number in a report document beyond what the renderers draw.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("key `{key}`: {value} is beyond the {limit} a report can show ({what})")]
pub struct LimitError {
    /// The key, as a path: `runs[0].trace[12].client`.
    pub key: String,
    pub value: u64,
    pub limit: u64,
    pub what: &'static str,
}

/// Refuses a document with a client number beyond [`MAX_CLIENTS`].
pub fn check(report: &Report) -> Result<(), LimitError> {
    let client = |key: String, value: usize| {
        if value > MAX_CLIENTS {
            Err(LimitError {
                key,
                value: value as u64,
                limit: MAX_CLIENTS as u64,
                what: "client numbers size the pictures' lanes",
            })
        } else {
            Ok(())
        }
    };
    for (r, run) in report.runs.iter().enumerate() {
        client(format!("runs[{r}].clients"), run.clients)?;
        for (e, event) in run.trace.iter().enumerate() {
            if let Some(c) = event.client {
                client(format!("runs[{r}].trace[{e}].client"), c)?;
            }
        }
        for (h, hold) in run.holds.iter().enumerate() {
            client(format!("runs[{r}].holds[{h}].client"), hold.client)?;
        }
        for (v, violation) in run.violations.iter().enumerate() {
            for (f, finding) in violation.diagnosis.findings.iter().enumerate() {
                if let Some(c) = finding.client {
                    let key = format!("runs[{r}].violations[{v}].diagnosis.findings[{f}].client");
                    client(key, c)?;
                }
            }
        }
    }
    if let Some(check) = &report.check {
        client("check.clients".to_string(), check.clients)?;
    }
    Ok(())
}
