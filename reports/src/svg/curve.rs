//! What a sweep's seeds or a campaign's runs covered, as a line chart:
//! the cumulative abstract states after each block of runs, one
//! `<polyline class="curve">` per curve on the same axes, each with its
//! own stroke (a colour, and a dash pattern past the eighth curve) and a
//! legend row naming its label and total.
//!
//! x is the runs (or seeds) made: a curve's point `i` sits at the end of
//! its block `i`, `(i + 1) × block`, so curves with different block sizes
//! still share the axis; y is the states reached so far. Every curve
//! starts at the origin. At most [`MAX_CURVES`] curves of at most
//! [`MAX_CURVE_BLOCKS`] blocks are drawn (the limits a document read from
//! a file is held to).

use super::{open, text, GREY, INK};
use crate::limits::{MAX_CURVES, MAX_CURVE_BLOCKS};
use crate::schema::CoverageCurve;
use crate::text::{escape_html, shorten};
use std::fmt::Write;

const LEFT: f64 = 72.0;
const TOP: f64 = 32.0;
const PLOT_W: f64 = 640.0;
const PLOT_H: f64 = 240.0;
const AXIS_H: f64 = 44.0;
const LEGEND_ROW: f64 = 18.0;
const RIGHT: f64 = 40.0;
const LABEL_CHARS: usize = 70;
const TICKS: u32 = 4;

/// Strokes, one per curve; past the eighth a curve is dashed.
const PALETTE: [&str; 8] = [
    "#1565c0", "#c62828", "#2e7d32", "#ef6c00", "#6a1b9a", "#00838f", "#5d4037", "#ad1457",
];

/// The chart of `curves` as an `<svg id="{id}" class="curve">`; `unit`
/// names what a block counts (`runs` or `seeds`).
pub fn curve(curves: &[CoverageCurve], unit: &str, id: &str) -> String {
    let curves = &curves[..curves.len().min(MAX_CURVES)];
    let scale = Scale::of(curves);
    let legend_h = curves.len().max(1) as f64 * LEGEND_ROW;
    let width = LEFT + PLOT_W + RIGHT;
    let height = TOP + PLOT_H + AXIS_H + legend_h + 8.0;
    let caption = format!("Abstract states reached, cumulative, per block of {unit}");
    let mut out = String::new();
    open(
        &mut out,
        id,
        "curve",
        width as u64,
        height as u64,
        &format!("{caption}: {} curves", curves.len()),
    );
    text(
        &mut out,
        8.0,
        16.0,
        &format!("class=\"caption\" fill=\"{INK}\""),
        &caption,
    );
    axes(&mut out, &scale, &axis_title(curves, unit));
    for (index, curve) in curves.iter().enumerate() {
        series(&mut out, &scale, index, curve, unit);
    }
    legend(&mut out, curves, TOP + PLOT_H + AXIS_H);
    out.push_str("</svg>");
    out
}

/// The axes' ranges: from 0 to a whole number of round tick steps at or
/// above the largest x (runs) and y (states) drawn.
struct Scale {
    x: Axis,
    y: Axis,
}

/// An axis from 0 to `top`, a tick every `step`.
struct Axis {
    step: f64,
    top: f64,
}

impl Axis {
    /// About [`TICKS`] steps of 1, 2 or 5 × 10^k (at least 1: the values
    /// are counts) reaching `max`.
    fn reaching(max: f64) -> Axis {
        let raw = max.max(1.0) / f64::from(TICKS);
        let magnitude = 10f64.powf(raw.log10().floor());
        let step = match raw / magnitude {
            f if f <= 1.0 => magnitude,
            f if f <= 2.0 => 2.0 * magnitude,
            f if f <= 5.0 => 5.0 * magnitude,
            _ => 10.0 * magnitude,
        }
        .max(1.0);
        Axis {
            step,
            top: step * (max.max(1.0) / step).ceil(),
        }
    }

    /// The ticks' values, 0 first.
    fn ticks(&self) -> impl Iterator<Item = f64> + '_ {
        let count = (self.top / self.step).round() as u32;
        (0..=count).map(move |i| f64::from(i) * self.step)
    }
}

impl Scale {
    fn of(curves: &[CoverageCurve]) -> Scale {
        let mut max_x: f64 = 0.0;
        let mut max_y: f64 = 0.0;
        for curve in curves {
            let blocks = drawn(curve);
            max_x = max_x.max(blocks.len() as f64 * curve.block as f64);
            max_y = max_y.max(cumulative(blocks).last().copied().unwrap_or(0) as f64);
        }
        Scale {
            x: Axis::reaching(max_x),
            y: Axis::reaching(max_y),
        }
    }

    fn x(&self, runs: f64) -> f64 {
        LEFT + runs / self.x.top * PLOT_W
    }

    fn y(&self, states: f64) -> f64 {
        TOP + PLOT_H - states / self.y.top * PLOT_H
    }
}

/// The blocks of `curve` that are drawn.
fn drawn(curve: &CoverageCurve) -> &[u64] {
    &curve.new_states[..curve.new_states.len().min(MAX_CURVE_BLOCKS)]
}

/// The states reached after each block.
fn cumulative(new_states: &[u64]) -> Vec<u64> {
    let mut total = 0u64;
    new_states
        .iter()
        .map(|n| {
            total = total.saturating_add(*n);
            total
        })
        .collect()
}

/// `runs (blocks of 100)` when every curve has the same block, else `runs`.
fn axis_title(curves: &[CoverageCurve], unit: &str) -> String {
    match curves.first() {
        Some(first) if curves.iter().all(|c| c.block == first.block) => {
            format!("{unit} (blocks of {})", first.block)
        }
        _ => unit.to_string(),
    }
}

/// The two axes, their ticks and titles, and light grid lines.
fn axes(out: &mut String, scale: &Scale, x_title: &str) {
    let bottom = TOP + PLOT_H;
    let _ = write!(
        out,
        "<g class=\"axes\"><line x1=\"{LEFT:.1}\" y1=\"{TOP:.1}\" x2=\"{LEFT:.1}\" y2=\"{bottom:.1}\" \
         stroke=\"{INK}\"/><line x1=\"{LEFT:.1}\" y1=\"{bottom:.1}\" x2=\"{:.1}\" y2=\"{bottom:.1}\" \
         stroke=\"{INK}\"/>",
        LEFT + PLOT_W
    );
    for states in scale.y.ticks() {
        let y = scale.y(states);
        if states > 0.0 {
            let _ = write!(
                out,
                "<line class=\"grid\" x1=\"{LEFT:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" \
                 stroke=\"{GREY}\" stroke-opacity=\"0.35\"/>",
                LEFT + PLOT_W
            );
        }
        let tick_attrs = format!("class=\"tick\" text-anchor=\"end\" fill=\"{INK}\"");
        text(
            out,
            LEFT - 6.0,
            y + 4.0,
            &tick_attrs,
            &format!("{states:.0}"),
        );
    }
    for runs in scale.x.ticks() {
        let tick_attrs = format!("class=\"tick\" text-anchor=\"middle\" fill=\"{INK}\"");
        text(
            out,
            scale.x(runs),
            bottom + 16.0,
            &tick_attrs,
            &format!("{runs:.0}"),
        );
    }
    let title_attrs = format!("class=\"axis-title\" text-anchor=\"middle\" fill=\"{INK}\"");
    text(
        out,
        LEFT + PLOT_W / 2.0,
        bottom + 34.0,
        &title_attrs,
        x_title,
    );
    let _ = write!(
        out,
        "<text class=\"axis-title\" x=\"14.0\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{INK}\" \
         transform=\"rotate(-90 14.0 {:.1})\">states</text></g>",
        TOP + PLOT_H / 2.0,
        TOP + PLOT_H / 2.0
    );
}

/// The stroke attributes of curve `index`: its colour, dashed past the
/// palette's length.
fn stroke(index: usize) -> String {
    let colour = PALETTE[index % PALETTE.len()];
    let dash = match (index / PALETTE.len()) % 2 {
        0 => "",
        _ => " stroke-dasharray=\"6 3\"",
    };
    format!("stroke=\"{colour}\"{dash}")
}

/// One curve: a polyline from the origin through each block's end.
fn series(out: &mut String, scale: &Scale, index: usize, curve: &CoverageCurve, unit: &str) {
    let blocks = drawn(curve);
    let mut points = format!("{:.1},{:.1}", scale.x(0.0), scale.y(0.0));
    for (i, total) in cumulative(blocks).iter().enumerate() {
        let runs = (i as f64 + 1.0) * curve.block as f64;
        let _ = write!(
            points,
            " {:.1},{:.1}",
            scale.x(runs),
            scale.y(*total as f64)
        );
    }
    let _ = write!(
        out,
        "<g class=\"series\" data-label=\"{}\"><title>{}</title>\
         <polyline class=\"curve\" points=\"{points}\" fill=\"none\" {} stroke-width=\"2\" \
         stroke-linejoin=\"round\"/></g>",
        escape_html(&curve.label),
        escape_html(&format!(
            "{}: {} states in {} blocks of {} {unit}",
            curve.label,
            curve.states,
            curve.new_states.len(),
            curve.block
        )),
        stroke(index)
    );
}

/// One row per curve below the axes: its stroke, label and total.
fn legend(out: &mut String, curves: &[CoverageCurve], top: f64) {
    out.push_str("<g class=\"legend\">");
    for (index, curve) in curves.iter().enumerate() {
        let y = top + index as f64 * LEGEND_ROW + LEGEND_ROW / 2.0;
        let _ = write!(
            out,
            "<line x1=\"{LEFT:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" {} stroke-width=\"2\"/>",
            LEFT + 28.0,
            stroke(index)
        );
        text(
            out,
            LEFT + 36.0,
            y + 4.0,
            &format!("class=\"legend-label\" fill=\"{INK}\""),
            &format!(
                "{}: {} states",
                shorten(&curve.label, LABEL_CHARS),
                curve.states
            ),
        );
    }
    out.push_str("</g>");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a_curve(label: &str, block: u64, new_states: Vec<u64>) -> CoverageCurve {
        CoverageCurve {
            label: label.to_string(),
            block,
            states: new_states.iter().sum(),
            new_states,
        }
    }

    #[test]
    fn points_are_cumulative_from_the_origin() {
        let svg = curve(&[a_curve("seeds", 10, vec![4, 0, 4])], "seeds", "c");
        // x: 30 seeds over 640 px from 72; y: 8 states over 240 px from 272.
        assert!(
            svg.contains("points=\"72.0,272.0 285.3,152.0 498.7,152.0 712.0,32.0\""),
            "{svg}"
        );
        assert!(svg.contains(">seeds (blocks of 10)</text>"));
        assert!(svg.contains(">seeds: 8 states</text>"));
    }

    #[test]
    fn each_curve_has_its_own_stroke() {
        let curves: Vec<CoverageCurve> = (0..MAX_CURVES + 3)
            .map(|i| a_curve(&format!("c{i}"), 1, vec![1]))
            .collect();
        let svg = curve(&curves, "runs", "c");
        assert_eq!(svg.matches("<polyline").count(), MAX_CURVES);
        let strokes: std::collections::BTreeSet<String> = (0..MAX_CURVES).map(stroke).collect();
        assert_eq!(strokes.len(), MAX_CURVES);
    }

    #[test]
    fn ticks_are_round_steps_reaching_the_largest_value() {
        let values = |max: f64| Axis::reaching(max).ticks().collect::<Vec<f64>>();
        assert_eq!(values(546.0), [0.0, 200.0, 400.0, 600.0]);
        assert_eq!(values(800.0), [0.0, 200.0, 400.0, 600.0, 800.0]);
        assert_eq!(values(3.0), [0.0, 1.0, 2.0, 3.0]);
        assert_eq!(values(0.0), [0.0, 1.0]);
        assert_eq!(values(1e19), [0.0, 5e18, 1e19]);
    }

    #[test]
    fn an_empty_or_zero_curve_draws_at_the_origin() {
        let svg = curve(&[a_curve("none", 0, vec![])], "runs", "c");
        assert!(svg.contains("points=\"72.0,272.0\""), "{svg}");
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }
}
