//! A run's ownership timeline: who held what when.
//!
//! One row per client; one bar per [`HoldSpan`]
//! from its start to its end (or to the end of the run, hatched and
//! labelled `held at end`). After `session_ended_ns` the bar turns to the
//! `stale` style: the server had ended the session, so the client held
//! only in its own belief. Where spans of different clients overlap (two
//! holders at once) a red band covers both rows, and each violation is a
//! red vertical line at its time. The axis is in simulated milliseconds.
//!
//! Classes: `hold` (a held stretch), `hold stale` (after the session
//! ended), `held-at-end`, `overlap`, `violation-marker`, `axis`.

use super::{open, text, GREY, INK, RED};
use crate::limits::{MAX_CLIENTS, MAX_DRAWN_HOLDS};
use crate::schema::{HoldSpan, Run};
use crate::text::{escape_html, lane_name, ms, ms_short};
use std::fmt::Write;

const LEFT: f64 = 64.0;
const PLOT_W: f64 = 960.0;
const RIGHT: f64 = 96.0;
const TOP: f64 = 44.0;
const ROW_H: f64 = 30.0;
const BAR_H: f64 = 18.0;

const HELD: &str = "#1e88e5";
const STALE: &str = "#ffb74d";

/// The end of the picture: the run's end, or a later time the report
/// names.
fn end_ns(run: &Run) -> u64 {
    let holds = run.holds.iter().flat_map(|h| {
        [Some(h.from_ns), h.until_ns, h.session_ended_ns]
            .into_iter()
            .flatten()
    });
    let violations = run.violations.iter().map(|v| v.at_ns);
    holds
        .chain(violations)
        .chain(std::iter::once(run.stats.sim_time_ns))
        .max()
        .unwrap_or(0)
        .max(1)
}

/// Where a span ends in the picture (the run's end when it was held at
/// the end).
fn span_end(hold: &HoldSpan, end: u64) -> u64 {
    hold.until_ns.unwrap_or(end).max(hold.from_ns)
}

/// Two spans of different clients that overlap: `(first, second, from,
/// until)`, as indices into `run.holds`, in order of the first span.
/// Only the spans drawn ([`drawn_holds`]) are compared: the search is
/// quadratic.
pub fn overlaps(run: &Run) -> Vec<(usize, usize, u64, u64)> {
    let end = end_ns(run);
    let holds = drawn_holds(run);
    let mut found = Vec::new();
    for (i, a) in holds.iter().enumerate() {
        for (j, b) in holds.iter().enumerate().skip(i + 1) {
            if a.client == b.client {
                continue;
            }
            let from = a.from_ns.max(b.from_ns);
            let until = span_end(a, end).min(span_end(b, end));
            if from < until {
                found.push((i, j, from, until));
            }
        }
    }
    found
}

/// The spans the timeline draws: the first [`MAX_DRAWN_HOLDS`].
pub fn drawn_holds(run: &Run) -> &[HoldSpan] {
    &run.holds[..run.holds.len().min(MAX_DRAWN_HOLDS)]
}

/// A round step for about ten ticks: 1, 2 or 5 times a power of ten ns.
fn tick_step(end: u64) -> u64 {
    let rough = (end / 10).max(1);
    let mut power = 1u64;
    while power.saturating_mul(10) <= rough {
        power *= 10;
    }
    for factor in [1, 2, 5, 10] {
        if power.saturating_mul(factor) >= rough {
            return power.saturating_mul(factor);
        }
    }
    power.saturating_mul(10)
}

/// The ownership timeline of `run` as an `<svg id="{id}" class="timeline">`.
pub fn timeline(run: &Run, id: &str) -> String {
    let end = end_ns(run);
    // Bounded whatever the document says (see `crate::limits`).
    let rows = drawn_holds(run)
        .iter()
        .map(|h| h.client.saturating_add(1))
        .max()
        .unwrap_or(0)
        .max(run.clients)
        .clamp(1, MAX_CLIENTS);
    let x = |ns: u64| LEFT + ns as f64 * PLOT_W / end as f64;
    let row_y = |client: usize| TOP + client as f64 * ROW_H;
    let plot_bottom = row_y(rows);
    let width = LEFT + PLOT_W + RIGHT;
    let height = plot_bottom + 64.0;

    let mut out = String::new();
    let overlaps = overlaps(run);
    open(
        &mut out,
        id,
        "timeline",
        width as u64,
        height as u64,
        &format!(
            "Ownership timeline: {} spans{}, {} overlaps of two holders, {} violations, run ends at {}",
            run.holds.len(),
            if run.holds.len() > MAX_DRAWN_HOLDS {
                format!(" (the first {MAX_DRAWN_HOLDS} drawn, and their overlaps)")
            } else {
                String::new()
            },
            overlaps.len(),
            run.violations.len(),
            ms(run.stats.sim_time_ns)
        ),
    );
    let hatch = format!("{id}-hatch");
    let _ = write!(
        out,
        "<defs><pattern id=\"{}\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" \
         patternTransform=\"rotate(45)\"><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"{INK}\" \
         stroke-width=\"1.5\" opacity=\"0.45\"/></pattern></defs>",
        escape_html(&hatch)
    );

    // Rows.
    for client in 0..rows {
        let y = row_y(client);
        let shade = if client % 2 == 0 {
            "#f5f7f8"
        } else {
            "#ffffff"
        };
        let _ = write!(
            out,
            "<rect class=\"row\" x=\"{LEFT:.1}\" y=\"{y:.1}\" width=\"{PLOT_W:.1}\" height=\"{ROW_H:.1}\" \
             fill=\"{shade}\"/>"
        );
        text(
            &mut out,
            LEFT - 10.0,
            y + ROW_H / 2.0 + 4.0,
            &format!("class=\"row-name\" text-anchor=\"end\" font-weight=\"bold\" fill=\"{INK}\""),
            &lane_name(Some(client)),
        );
    }

    // Axis.
    let step = tick_step(end);
    let _ = write!(
        out,
        "<g class=\"axis\"><line x1=\"{LEFT:.1}\" y1=\"{plot_bottom:.1}\" x2=\"{:.1}\" \
         y2=\"{plot_bottom:.1}\" stroke=\"{INK}\"/>",
        LEFT + PLOT_W
    );
    let mut tick = 0u64;
    while tick <= end {
        let tx = x(tick);
        let _ = write!(
            out,
            "<line x1=\"{tx:.1}\" y1=\"{TOP:.1}\" x2=\"{tx:.1}\" y2=\"{:.1}\" stroke=\"{GREY}\" \
             stroke-width=\"0.5\" stroke-dasharray=\"2 3\"/>",
            plot_bottom + 4.0
        );
        text(
            &mut out,
            tx,
            plot_bottom + 16.0,
            &format!("text-anchor=\"middle\" fill=\"{INK}\""),
            &ms_short(tick),
        );
        tick = match tick.checked_add(step) {
            Some(next) => next,
            None => break,
        };
    }
    out.push_str("</g>");

    // Spans.
    for hold in drawn_holds(run) {
        let y = row_y(hold.client) + (ROW_H - BAR_H) / 2.0;
        let until = span_end(hold, end);
        let stale_from = hold
            .session_ended_ns
            .map(|at| at.clamp(hold.from_ns, until));
        let mut title = format!(
            "{} held from {} until {}",
            lane_name(Some(hold.client)),
            ms(hold.from_ns),
            match hold.until_ns {
                Some(until) => ms(until),
                None => format!("the end of the run ({})", ms(end)),
            }
        );
        if let Some(token) = hold.token {
            let _ = write!(title, ", token {token}");
        }
        let _ = write!(title, ", ended: {}", hold.ended);
        if let Some(at) = hold.session_ended_ns {
            let _ = write!(
                title,
                "; its session ended at {}, after which it held only in its own belief",
                ms(at)
            );
        }
        let _ = write!(
            out,
            "<g class=\"span\" data-client=\"{}\"><title>{}</title>",
            hold.client,
            escape_html(&title)
        );
        let live_until = stale_from.unwrap_or(until);
        let min_w = |from: u64, to: u64| (x(to) - x(from)).max(1.5);
        if live_until > hold.from_ns || stale_from.is_none() {
            let _ = write!(
                out,
                "<rect class=\"hold\" x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{BAR_H:.1}\" \
                 fill=\"{HELD}\" rx=\"2\"/>",
                x(hold.from_ns),
                min_w(hold.from_ns, live_until)
            );
        }
        if let Some(stale) = stale_from {
            let _ = write!(
                out,
                "<rect class=\"hold stale\" x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" \
                 height=\"{BAR_H:.1}\" fill=\"{STALE}\" stroke=\"#e65100\" stroke-dasharray=\"3 2\" \
                 rx=\"2\"/>",
                x(stale),
                min_w(stale, until)
            );
        }
        if hold.until_ns.is_none() {
            let _ = write!(
                out,
                "<rect class=\"held-at-end\" x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" \
                 height=\"{BAR_H:.1}\" fill=\"url(#{})\"/>",
                x(hold.from_ns),
                min_w(hold.from_ns, until),
                escape_html(&hatch)
            );
            text(
                &mut out,
                x(until) + 4.0,
                y + BAR_H / 2.0 + 4.0,
                &format!("class=\"held-at-end-label\" fill=\"{INK}\""),
                "held at end",
            );
        }
        if let Some(token) = hold.token {
            if x(until) - x(hold.from_ns) > 24.0 {
                text(
                    &mut out,
                    x(hold.from_ns) + 3.0,
                    y + BAR_H / 2.0 + 4.0,
                    "class=\"token\" fill=\"white\" font-size=\"10\"",
                    &format!("#{token}"),
                );
            }
        }
        out.push_str("</g>");
    }

    // Two holders at once.
    for &(i, j, from, until) in &overlaps {
        let (a, b) = (&run.holds[i], &run.holds[j]);
        let top = row_y(a.client.min(b.client)) + 2.0;
        let bottom = row_y(a.client.max(b.client)) + ROW_H - 2.0;
        let _ = write!(
            out,
            "<rect class=\"overlap\" x=\"{:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{:.1}\" \
             fill=\"{RED}\" fill-opacity=\"0.22\" stroke=\"{RED}\" stroke-width=\"1.5\"><title>{}</title></rect>",
            x(from),
            (x(until) - x(from)).max(2.0),
            bottom - top,
            escape_html(&format!(
                "two holders at once: {} and {} both held from {} to {}",
                lane_name(Some(a.client)),
                lane_name(Some(b.client)),
                ms(from),
                ms(until)
            ))
        );
    }

    // Violations.
    let mut violations: Vec<_> = run.violations.iter().collect();
    violations.sort_by_key(|v| v.at_ns);
    for (index, violation) in violations.iter().enumerate() {
        let vx = x(violation.at_ns);
        let _ = write!(
            out,
            "<g class=\"violation-marker\" data-signature=\"{}\"><title>{}</title><line x1=\"{vx:.1}\" \
             y1=\"{:.1}\" x2=\"{vx:.1}\" y2=\"{:.1}\" stroke=\"{RED}\" stroke-width=\"2\"/>",
            escape_html(&violation.signature),
            escape_html(&format!(
                "[{}] violation {}: {}",
                ms(violation.at_ns),
                violation.signature,
                violation.message
            )),
            TOP - 6.0 - (index % 2) as f64 * 14.0,
            plot_bottom
        );
        let anchor = if vx > LEFT + PLOT_W * 0.7 {
            "end"
        } else {
            "start"
        };
        let dx = if anchor == "end" { -3.0 } else { 3.0 };
        text(
            &mut out,
            vx + dx,
            TOP - 8.0 - (index % 2) as f64 * 14.0,
            &format!("text-anchor=\"{anchor}\" font-weight=\"bold\" fill=\"{RED}\""),
            &violation.signature,
        );
        out.push_str("</g>");
    }

    legend(&mut out, plot_bottom + 32.0, &hatch);
    out.push_str("</svg>");
    out
}

fn legend(out: &mut String, y: f64, hatch: &str) {
    let _ = write!(out, "<g class=\"legend\">");
    let mut lx = LEFT;
    let items: [(&str, String); 5] = [
        ("held", format!("fill=\"{HELD}\"")),
        (
            "held, session already ended (stale)",
            format!("fill=\"{STALE}\" stroke=\"#e65100\" stroke-dasharray=\"3 2\""),
        ),
        (
            "held at end",
            format!("fill=\"url(#{})\" stroke=\"{GREY}\"", escape_html(hatch)),
        ),
        (
            "two holders at once",
            format!("fill=\"{RED}\" fill-opacity=\"0.22\" stroke=\"{RED}\""),
        ),
        ("violation", format!("fill=\"{RED}\"")),
    ];
    for (label, style) in items {
        let w = if label == "violation" { 3.0 } else { 14.0 };
        let _ = write!(
            out,
            "<rect x=\"{lx:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"12\" {style}/>",
            y - 10.0
        );
        text(out, lx + w + 5.0, y, &format!("fill=\"{INK}\""), label);
        lx += w + 14.0 + label.chars().count() as f64 * 6.7;
    }
    out.push_str("</g>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(20_000_000_000), 2_000_000_000);
        assert_eq!(tick_step(7_000_000_000), 1_000_000_000);
        assert_eq!(tick_step(1), 1);
        assert!(tick_step(u64::MAX) > 0);
    }
}
