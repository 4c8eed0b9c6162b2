//! Turns simulation runs, sweeps, model checks and the bug catalog into
//! JSON (the versioned [`schema`]), Markdown, one self-contained HTML page
//! with SVG pictures, and JUnit XML.

pub mod schema;

pub use schema::{Report, SCHEMA_VERSION};
