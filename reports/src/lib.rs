//! Turns simulation runs, sweeps, model checks, guided campaigns and the
//! bug catalog, with what their runs covered, into JSON (the versioned
//! [`schema`]), Markdown, one self-contained HTML page with SVG pictures,
//! and JUnit XML.
//!
//! - [`from_json`] / [`to_json`]: the report document, refusing another
//!   schema version.
//! - [`markdown`](mod@markdown): for terminals and pull-request comments.
//! - [`html`](mod@html): one self-contained page (inline style and SVG, no script,
//!   nothing loaded from elsewhere).
//! - [`junit`](mod@junit): JUnit XML for CI test dashboards.
//!
//! Every renderer is a pure function of the report: the same report gives
//! the same bytes.

pub mod html;
pub mod junit;
pub mod limits;
pub mod markdown;
pub mod schema;
pub mod svg;
pub mod text;

pub use html::html;
pub use junit::junit;
pub use markdown::markdown;
pub use schema::{Report, SCHEMA_VERSION};

/// Why a report document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Not JSON, or not a report of this schema.
    #[error("not a zkcheck report: {0}")]
    Json(#[from] serde_json::Error),
    /// The document has no `schema_version` (or it is not a number).
    #[error("not a zkcheck report: no numeric \"schema_version\" field")]
    MissingVersion,
    /// Written by a zkcheck with another schema version.
    #[error(
        "report schema version {found} is not supported: this zkcheck reads version {expected} \
         (render the report with the zkcheck that wrote it, or regenerate it)"
    )]
    Version { found: u64, expected: u32 },
    /// A number beyond what the renderers draw (see [`limits`]).
    #[error("not renderable: {0}")]
    Limit(#[from] limits::LimitError),
}

/// Reads a report document, refusing one of another schema version before
/// looking at any other field (a later version may have changed them), and
/// one with numbers beyond what the renderers draw ([`limits::check`]).
pub fn from_json(text: &str) -> Result<Report, ReportError> {
    let value: serde_json::Value = serde_json::from_str(text)?;
    let found = value
        .get("schema_version")
        .and_then(serde_json::Value::as_u64)
        .ok_or(ReportError::MissingVersion)?;
    if found != u64::from(SCHEMA_VERSION) {
        return Err(ReportError::Version {
            found,
            expected: SCHEMA_VERSION,
        });
    }
    let report: Report = serde_json::from_value(value)?;
    limits::check(&report)?;
    Ok(report)
}

/// The report document, pretty-printed, with a final newline.
pub fn to_json(report: &Report) -> String {
    let mut text = serde_json::to_string_pretty(report)
        .expect("a report is plain data (string keys only) and always serializes");
    text.push('\n');
    text
}
