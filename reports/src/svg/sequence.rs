//! A run's trace as a sequence diagram.
//!
//! One vertical lane per client (`c0`, `c1`, ...) and one for the server
//! (`server`, rightmost); time flows down, one row per event at an even
//! spacing (simulated time is printed on the left of each row, not used
//! for spacing). `send` is an arrow from the client to the server,
//! `deliver` one back, `apply` a dot on the server's lane; `call`,
//! `outcome`, `session` and `timer` are small marks on the client's lane;
//! a `fault` is red (on its client's lane, or across every lane when it
//! has no client) and a `phase` a dashed line across. Each row's text is
//! shortened in the column on the right; its full text is the element's
//! `<title>`. Each violation is a red line at its time, labelled with its
//! signature.
//!
//! Long traces are cut (see [`Window`]): at most [`KEEP_BEFORE`] events up
//! to the first violation and [`KEEP_AFTER`] after it; [`caption`] says
//! what was left out (the page shows it above the picture, and it is the
//! picture's own `<title>`), and a row marks each elided stretch.

use super::{open, text, GREY, INK, RED};
use crate::schema::{Run, TraceEvent, TraceKind};
use crate::text::{escape_html, lane_name, ms, shorten};
use std::fmt::Write;

/// Events drawn up to (and including) the first violation's time.
pub const KEEP_BEFORE: usize = 400;
/// Events drawn after the first violation's time.
pub const KEEP_AFTER: usize = 40;

const TIME_W: f64 = 96.0;
const LANE0_X: f64 = 130.0;
const LANE_GAP: f64 = 110.0;
const HEADER: f64 = 40.0;
const ROW: f64 = 18.0;
const LABEL_CHARS: usize = 96;
const LABEL_W: f64 = 700.0;

/// Which events of a trace the diagram draws: `start..end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub start: usize,
    pub end: usize,
    pub total: usize,
}

impl Window {
    /// The last [`KEEP_BEFORE`] events up to the first violation's time
    /// (all of them when fewer) and [`KEEP_AFTER`] after it; without a
    /// violation, the last [`KEEP_BEFORE`] events.
    pub fn of(run: &Run) -> Window {
        let total = run.trace.len();
        let cut = match run.violations.iter().map(|v| v.at_ns).min() {
            Some(at) => run.trace.iter().position(|e| e.at_ns > at).unwrap_or(total),
            None => total,
        };
        Window {
            start: cut.saturating_sub(KEEP_BEFORE),
            end: (cut + KEEP_AFTER).min(total),
            total,
        }
    }

    pub fn drawn(&self) -> usize {
        self.end - self.start
    }
}

/// What the diagram shows, in words.
pub fn caption(run: &Run) -> String {
    let window = Window::of(run);
    if window.total == 0 {
        return "No trace was recorded for this run.".to_string();
    }
    let mut caption = if window.drawn() == window.total {
        format!("All {} events of the trace", window.total)
    } else {
        let mut left_out = Vec::new();
        if window.start > 0 {
            left_out.push(format!("{} earlier", window.start));
        }
        if window.end < window.total {
            left_out.push(format!("{} later", window.total - window.end));
        }
        format!(
            "Events {}–{} of {} ({} events elided)",
            window.start + 1,
            window.end,
            window.total,
            left_out.join(" and ")
        )
    };
    caption.push_str("; time flows down, one row per event; hover an element for its full text.");
    caption
}

enum Row {
    Elided { count: usize, earlier: bool },
    Event(usize),
    Violation(usize),
}

/// The sequence diagram of `run`'s trace as an `<svg id="{id}"
/// class="sequence">`.
pub fn sequence(run: &Run, id: &str) -> String {
    let window = Window::of(run);
    let lanes = run
        .trace
        .iter()
        .filter_map(|e| e.client)
        .map(|c| c.saturating_add(1))
        .chain(run.holds.iter().map(|h| h.client.saturating_add(1)))
        .max()
        .unwrap_or(0)
        .max(run.clients)
        // Bounded whatever the document says (see `crate::limits`).
        .min(crate::limits::MAX_CLIENTS);
    let server_x = LANE0_X + lanes as f64 * LANE_GAP;
    let label_x = server_x + 40.0;
    let width = (label_x + LABEL_W).ceil();

    let rows = rows(run, window);
    let height = (HEADER + rows.len() as f64 * ROW + 24.0).ceil();
    let bottom = height - 12.0;

    let mut out = String::new();
    open(
        &mut out,
        id,
        "sequence",
        width as u64,
        height as u64,
        &format!("Sequence diagram: {}", caption(run)),
    );
    let _ = write!(
        out,
        "<defs>{}{}</defs>",
        marker(&format!("{id}-send"), SEND),
        marker(&format!("{id}-deliver"), DELIVER)
    );
    // Lanes.
    let lane_xs: Vec<f64> = (0..lanes)
        .map(|c| LANE0_X + c as f64 * LANE_GAP)
        .chain(std::iter::once(server_x))
        .collect();
    for (index, x) in lane_xs.iter().enumerate() {
        let name = if index == lanes {
            "server".to_string()
        } else {
            lane_name(Some(index))
        };
        let _ = write!(
            out,
            "<g class=\"lane\" data-lane=\"{name}\"><line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" \
             y2=\"{bottom:.1}\" stroke=\"{GREY}\" stroke-width=\"1\"/>",
            HEADER - 12.0
        );
        text(
            &mut out,
            *x,
            HEADER - 18.0,
            &format!(
                "class=\"lane-name\" text-anchor=\"middle\" font-weight=\"bold\" fill=\"{INK}\""
            ),
            &name,
        );
        out.push_str("</g>");
    }
    text(
        &mut out,
        TIME_W - 8.0,
        HEADER - 18.0,
        &format!("class=\"time-head\" text-anchor=\"end\" fill=\"{INK}\""),
        "time",
    );

    let lane_x = |client: Option<usize>| match client {
        Some(c) => LANE0_X + c as f64 * LANE_GAP,
        None => server_x,
    };
    for (row_index, row) in rows.iter().enumerate() {
        let y = HEADER + row_index as f64 * ROW + ROW / 2.0;
        match row {
            Row::Elided { count, earlier } => {
                let what = if *earlier { "earlier" } else { "later" };
                text(
                    &mut out,
                    label_x,
                    y + 4.0,
                    &format!("class=\"elided\" font-style=\"italic\" fill=\"{GREY}\""),
                    &format!("… {count} {what} events elided …"),
                );
                let _ = write!(
                    out,
                    "<line class=\"elided\" x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" \
                     stroke=\"{GREY}\" stroke-dasharray=\"1 4\"/>",
                    LANE0_X - 20.0,
                    server_x + 20.0
                );
            }
            Row::Violation(index) => {
                let violation = &run.violations[*index];
                let _ = write!(
                    out,
                    "<g class=\"violation-marker\" data-signature=\"{}\"><title>{}</title>",
                    escape_html(&violation.signature),
                    escape_html(&format!(
                        "[{}] violation {}: {}",
                        ms(violation.at_ns),
                        violation.signature,
                        violation.message
                    ))
                );
                let _ = write!(
                    out,
                    "<line x1=\"4\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{RED}\" \
                     stroke-width=\"2\"/>",
                    width - 4.0
                );
                time_label(&mut out, y, violation.at_ns, RED);
                text(
                    &mut out,
                    label_x,
                    y - 3.0,
                    &format!("font-weight=\"bold\" fill=\"{RED}\""),
                    &shorten(
                        &format!("✗ {}: {}", violation.signature, violation.message),
                        LABEL_CHARS,
                    ),
                );
                out.push_str("</g>");
            }
            Row::Event(index) => {
                let event = &run.trace[*index];
                draw_event(&mut out, id, event, y, &lane_x, server_x, label_x);
            }
        }
    }
    out.push_str("</svg>");
    out
}

fn rows(run: &Run, window: Window) -> Vec<Row> {
    let mut violations: Vec<usize> = (0..run.violations.len()).collect();
    violations.sort_by_key(|&i| (run.violations[i].at_ns, i));
    let mut pending = violations.into_iter().peekable();
    let mut rows = Vec::with_capacity(window.drawn() + run.violations.len() + 2);
    if window.start > 0 {
        rows.push(Row::Elided {
            count: window.start,
            earlier: true,
        });
    }
    for index in window.start..window.end {
        let at = run.trace[index].at_ns;
        while let Some(&v) = pending.peek() {
            if run.violations[v].at_ns < at {
                rows.push(Row::Violation(v));
                pending.next();
            } else {
                break;
            }
        }
        rows.push(Row::Event(index));
    }
    if window.end < window.total {
        rows.push(Row::Elided {
            count: window.total - window.end,
            earlier: false,
        });
    }
    rows.extend(pending.map(Row::Violation));
    rows
}

const SEND: &str = "#1565c0";
const DELIVER: &str = "#2e7d32";
const APPLY: &str = "#6a1b9a";
const CALL: &str = "#37474f";
const OUTCOME: &str = "#ef6c00";
const SESSION: &str = "#00838f";
const TIMER: &str = "#795548";
const PHASE: &str = "#546e7a";

fn marker(id: &str, colour: &str) -> String {
    format!(
        "<marker id=\"{}\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" \
         markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"{colour}\"/></marker>",
        escape_html(id)
    )
}

fn kind_name(kind: TraceKind) -> &'static str {
    match kind {
        TraceKind::Call => "call",
        TraceKind::Outcome => "outcome",
        TraceKind::Fault => "fault",
        TraceKind::Phase => "phase",
        TraceKind::Session => "session",
        TraceKind::Apply => "apply",
        TraceKind::Send => "send",
        TraceKind::Deliver => "deliver",
        TraceKind::Timer => "timer",
    }
}

fn colour(kind: TraceKind) -> &'static str {
    match kind {
        TraceKind::Call => CALL,
        TraceKind::Outcome => OUTCOME,
        TraceKind::Fault => RED,
        TraceKind::Phase => PHASE,
        TraceKind::Session => SESSION,
        TraceKind::Apply => APPLY,
        TraceKind::Send => SEND,
        TraceKind::Deliver => DELIVER,
        TraceKind::Timer => TIMER,
    }
}

fn time_label(out: &mut String, y: f64, at_ns: u64, fill: &str) {
    text(
        out,
        TIME_W - 8.0,
        y + 4.0,
        &format!("class=\"t\" text-anchor=\"end\" fill=\"{fill}\""),
        &ms(at_ns),
    );
}

fn draw_event(
    out: &mut String,
    id: &str,
    event: &TraceEvent,
    y: f64,
    lane_x: &dyn Fn(Option<usize>) -> f64,
    server_x: f64,
    label_x: f64,
) {
    let kind = kind_name(event.kind);
    let fill = colour(event.kind);
    let lane = lane_name(event.client);
    let _ = write!(
        out,
        "<g class=\"ev {kind}\" data-lane=\"{lane}\"><title>{}</title>",
        escape_html(&format!(
            "[{}] {lane} {kind}: {}",
            ms(event.at_ns),
            event.text
        ))
    );
    time_label(out, y, event.at_ns, GREY);
    let x = lane_x(event.client);
    match (event.kind, event.client) {
        (TraceKind::Send, Some(_)) | (TraceKind::Deliver, Some(_)) => {
            let (from, to, name) = if event.kind == TraceKind::Send {
                (x, server_x, "send")
            } else {
                (server_x, x, "deliver")
            };
            let _ = write!(
                out,
                "<line x1=\"{from:.1}\" y1=\"{y:.1}\" x2=\"{to:.1}\" y2=\"{y:.1}\" stroke=\"{fill}\" \
                 stroke-width=\"1.5\" marker-end=\"url(#{}-{name})\"/>",
                escape_html(id)
            );
        }
        // Across every lane, up to its label.
        (TraceKind::Phase, _) => {
            let _ = write!(
                out,
                "<line x1=\"{TIME_W:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{fill}\" \
                 stroke-dasharray=\"6 4\"/>",
                label_x - 6.0
            );
        }
        (TraceKind::Fault, None) => {
            let _ = write!(
                out,
                "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{fill}\" \
                 stroke-width=\"3\" opacity=\"0.7\"/>",
                LANE0_X - 20.0,
                server_x + 20.0
            );
        }
        (TraceKind::Fault, Some(_)) => {
            let _ = write!(
                out,
                "<path d=\"M{:.1},{:.1} l10,10 m0,-10 l-10,10\" stroke=\"{fill}\" stroke-width=\"2.5\"/>",
                x - 5.0,
                y - 5.0
            );
        }
        (TraceKind::Call, _) => {
            let _ = write!(
                out,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"8\" height=\"8\" fill=\"{fill}\"/>",
                x - 4.0,
                y - 4.0
            );
        }
        (TraceKind::Outcome, _) => {
            let _ = write!(
                out,
                "<path d=\"M{x:.1},{:.1} l6,6 l-6,6 l-6,-6 z\" fill=\"{fill}\"/>",
                y - 6.0
            );
        }
        (TraceKind::Timer, _) => {
            let _ = write!(
                out,
                "<path d=\"M{:.1},{:.1} l10,0 l-5,8 z\" fill=\"{fill}\"/>",
                x - 5.0,
                y - 4.0
            );
        }
        (TraceKind::Session, _) => {
            let _ = write!(
                out,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4.5\" fill=\"white\" stroke=\"{fill}\" \
                 stroke-width=\"2\"/>"
            );
        }
        // Apply, and a send or deliver without a client: on the lane.
        _ => {
            let _ = write!(
                out,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"{fill}\"/>"
            );
        }
    }
    text(
        out,
        label_x,
        y + 4.0,
        &format!("fill=\"{fill}\""),
        &shorten(&format!("{lane} {kind}: {}", event.text), LABEL_CHARS),
    );
    out.push_str("</g>");
}
