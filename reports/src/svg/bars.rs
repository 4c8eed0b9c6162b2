//! A sweep's failing seeds per bucket as a horizontal bar chart: one bar
//! per signature (class `bar`), its length the number of seeds, labelled
//! with the signature and the count; hovering shows the bucket's summary
//! and first seed.

use super::{open, text, INK, RED};
use crate::schema::Sweep;
use crate::text::{escape_html, shorten};
use std::fmt::Write;

const LABEL_W: f64 = 340.0;
const PLOT_W: f64 = 560.0;
const ROW_H: f64 = 26.0;
const BAR_H: f64 = 18.0;
const TOP: f64 = 28.0;
const LABEL_CHARS: usize = 50;

/// The bar chart of `sweep`'s buckets as an `<svg id="{id}" class="bars">`.
pub fn bars(sweep: &Sweep, id: &str) -> String {
    let rows = sweep.buckets.len().max(1);
    let width = LABEL_W + PLOT_W + 80.0;
    let height = TOP + rows as f64 * ROW_H + 12.0;
    let most = sweep
        .buckets
        .iter()
        .map(|b| b.seeds)
        .max()
        .unwrap_or(0)
        .max(1);
    let mut out = String::new();
    open(
        &mut out,
        id,
        "bars",
        width as u64,
        height as u64,
        &format!(
            "Failing seeds per signature: {} of {} runs failed, {} signatures",
            sweep.failed,
            sweep.runs,
            sweep.buckets.len()
        ),
    );
    text(
        &mut out,
        8.0,
        16.0,
        &format!("class=\"caption\" fill=\"{INK}\""),
        &format!(
            "Failing seeds per signature ({} of {} runs failed)",
            sweep.failed, sweep.runs
        ),
    );
    if sweep.buckets.is_empty() {
        text(
            &mut out,
            LABEL_W,
            TOP + ROW_H / 2.0 + 4.0,
            &format!("class=\"empty\" fill=\"{INK}\""),
            "no failing seed",
        );
    }
    for (index, bucket) in sweep.buckets.iter().enumerate() {
        let y = TOP + index as f64 * ROW_H;
        let w = (bucket.seeds as f64 * PLOT_W / most as f64).max(2.0);
        let _ = write!(
            out,
            "<g class=\"bucket\" data-signature=\"{}\"><title>{}</title>",
            escape_html(&bucket.signature),
            escape_html(&format!(
                "{}: {} seeds, first seed {}: {}",
                bucket.signature, bucket.seeds, bucket.first_seed, bucket.summary
            ))
        );
        text(
            &mut out,
            LABEL_W - 8.0,
            y + ROW_H / 2.0 + 4.0,
            &format!("text-anchor=\"end\" fill=\"{INK}\""),
            &shorten(&bucket.signature, LABEL_CHARS),
        );
        let _ = write!(
            out,
            "<rect class=\"bar\" x=\"{LABEL_W:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{BAR_H:.1}\" \
             fill=\"{RED}\" rx=\"2\"/>",
            y + (ROW_H - BAR_H) / 2.0
        );
        text(
            &mut out,
            LABEL_W + w + 6.0,
            y + ROW_H / 2.0 + 4.0,
            &format!("class=\"count\" font-weight=\"bold\" fill=\"{INK}\""),
            &bucket.seeds.to_string(),
        );
        out.push_str("</g>");
    }
    out.push_str("</svg>");
    out
}
