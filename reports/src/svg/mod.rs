//! Inline SVG pictures for the HTML page: a run's sequence diagram
//! ([`sequence`](mod@sequence)), its ownership timeline ([`timeline`](mod@timeline)), a sweep's
//! failures per bucket ([`bars`](mod@bars)) and the abstract states the runs reached
//! ([`curve`](mod@curve)).
//!
//! Each picture is one `<svg>` element with the `id` the caller gives and
//! a fixed `class` (`sequence`, `timeline`, `bars`, `curve`); its parts carry
//! stable classes too, so tests and style sheets can find them. Colours
//! are presentation attributes, so a picture also reads when saved on its
//! own; hovering an element shows its full text (an SVG `<title>`).

pub mod bars;
pub mod curve;
pub mod sequence;
pub mod timeline;

pub use bars::bars;
pub use curve::curve;
pub use sequence::sequence;
pub use timeline::timeline;

use crate::text::escape_html;
use std::fmt::Write;

/// Red for violations and faults.
pub(crate) const RED: &str = "#c62828";
/// Text and lane lines.
pub(crate) const INK: &str = "#263238";
pub(crate) const GREY: &str = "#90a4ae";
pub(crate) const FONT: &str = "font-family=\"ui-monospace, Menlo, Consolas, monospace\"";

/// Opens the `<svg>` element, with an accessible label. No `xmlns`: inline
/// SVG in HTML5 needs none, and the page names no URL at all.
pub(crate) fn open(out: &mut String, id: &str, class: &str, width: u64, height: u64, label: &str) {
    let _ = write!(
        out,
        "<svg id=\"{}\" class=\"{}\" width=\"{width}\" \
         height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"{}\" \
         {FONT} font-size=\"11\">",
        escape_html(id),
        escape_html(class),
        escape_html(label)
    );
    let _ = write!(out, "<title>{}</title>", escape_html(label));
}

/// A `<text>` element.
pub(crate) fn text(out: &mut String, x: f64, y: f64, attrs: &str, content: &str) {
    let _ = write!(
        out,
        "<text x=\"{x:.1}\" y=\"{y:.1}\" {attrs}>{}</text>",
        escape_html(content)
    );
}
