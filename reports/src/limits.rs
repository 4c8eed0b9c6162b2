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
//! - Coverage: at most [`MAX_CURVES`] curves (they share one chart's
//!   strokes and legend) of at most [`MAX_CURVE_BLOCKS`] blocks each (a
//!   point each in the chart, a number each in the tables), and at most
//!   [`MAX_LISTED_STATES`] states in each list of the comparison with a
//!   model. [`check`] refuses a document beyond them; the chart draws no
//!   more than them for a document built in memory.

use crate::schema::{Coverage, Report};

/// Most clients a report's pictures draw lanes or rows for: far above
/// what zkcheck runs (a scenario has at most 256 clients).
pub const MAX_CLIENTS: usize = 4096;

/// Most hold spans the ownership timeline draws.
pub const MAX_DRAWN_HOLDS: usize = 2000;

/// Most coverage curves a report draws on its one chart.
pub const MAX_CURVES: usize = 16;

/// Most blocks of one coverage curve (points on the chart).
pub const MAX_CURVE_BLOCKS: usize = 10_000;

/// Most states listed in each of the comparison with a model's lists
/// (`beyond_model_first`, `shortest_never_reached`): one table row each.
pub const MAX_LISTED_STATES: usize = 1_000;

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

/// Refuses a document with a client number beyond [`MAX_CLIENTS`], or
/// coverage beyond [`MAX_CURVES`], [`MAX_CURVE_BLOCKS`] or
/// [`MAX_LISTED_STATES`].
pub fn check(report: &Report) -> Result<(), LimitError> {
    check_clients(report)?;
    match &report.coverage {
        Some(coverage) => check_coverage(coverage),
        None => Ok(()),
    }
}

/// `key` holds `len` entries, at most `limit`.
fn at_most(key: String, len: usize, limit: usize, what: &'static str) -> Result<(), LimitError> {
    if len > limit {
        Err(LimitError {
            key,
            value: len as u64,
            limit: limit as u64,
            what,
        })
    } else {
        Ok(())
    }
}

fn check_coverage(coverage: &Coverage) -> Result<(), LimitError> {
    at_most(
        "coverage.curves".to_string(),
        coverage.curves.len(),
        MAX_CURVES,
        "curves share one chart's strokes and legend",
    )?;
    for (c, curve) in coverage.curves.iter().enumerate() {
        at_most(
            format!("coverage.curves[{c}].new_states"),
            curve.new_states.len(),
            MAX_CURVE_BLOCKS,
            "blocks are the chart's points and the tables' numbers",
        )?;
    }
    if let Some(model) = &coverage.against_model {
        let what = "listed states are one table row each";
        at_most(
            "coverage.against_model.beyond_model_first".to_string(),
            model.beyond_model_first.len(),
            MAX_LISTED_STATES,
            what,
        )?;
        at_most(
            "coverage.against_model.shortest_never_reached".to_string(),
            model.shortest_never_reached.len(),
            MAX_LISTED_STATES,
            what,
        )?;
    }
    Ok(())
}

fn check_clients(report: &Report) -> Result<(), LimitError> {
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
