//! The page's pictures as inline SVG: a latency heat map over the run's clock with the
//! slowest calls as points and the background throughput under it, and overlaid latency
//! CDFs. Pure functions of the runs; coordinates rounded to whole or tenth pixels so that a
//! million calls make a few hundred kilobytes.
//!
//! [`timeline`] draws one kind's calls over the run's clock, [`cdf`] the kind's latency
//! distributions, [`machine`] the run's kernel timeline under them with its slow calls,
//! [`tradeoff`] the runs' sync latency against their writers' throughput, [`frontier`] the
//! power-cut runs' p99 sync latency against their loss rate; the axes and scales they share
//! are here.

mod cdf;
mod frontier;
mod machine;
mod timeline;
mod tradeoff;

use std::fmt::{Display, Write as _};

use super::PageRun;

pub(crate) use cdf::cdf;
pub(crate) use frontier::{frontier, has_points as has_frontier};
pub(crate) use machine::{call_list, machine, page_calls};
pub use machine::{BACKGROUND_LIMIT, CACHE, DIRTY, FLUSHES, IN_FLIGHT, LIMIT, WRITEBACK};
pub(crate) use timeline::timeline;
pub(crate) use tradeoff::tradeoff;
pub use tradeoff::FRAME as TRADEOFF_FRAME;

/// Time bins of a heat map (2 px each).
pub const HEAT_COLUMNS: usize = 480;
/// Latency bins of a heat map, log-spaced over the kind's range (4 px each).
pub const HEAT_ROWS: usize = 50;
/// At most this many of a kind's slowest calls are drawn as points.
pub const SLOW_POINTS: usize = 1000;
/// Points of a CDF line, spread evenly over its "nines" (0, 90%, 99%, 99.9%...).
pub const CDF_POINTS: usize = 240;

pub(crate) const LEFT: f64 = 64.0;
pub(crate) const TOP: f64 = 8.0;
pub(crate) const PLOT_W: f64 = 960.0;
pub(crate) const HEAT_H: f64 = 200.0;
pub(crate) const BG_H: f64 = 60.0;
pub(crate) const CDF_H: f64 = 240.0;
/// The width of a plot whose area spans `PLOT_W`: the axis labels left of it, a margin right.
pub(crate) const SVG_W: f64 = LEFT + PLOT_W + 16.0;

/// Light (few calls) to dark (many): viridis, reversed so that the empty background is
/// lightest.
pub(crate) const HEAT_COLOURS: [&str; 8] = [
    "#fde725", "#a0da39", "#4ac16d", "#1fa187", "#277f8e", "#365c8d", "#46327e", "#440154",
];
/// Line colours of the runs in a CDF (Tableau 10).
pub(crate) const LINE_COLOURS: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
];

/// The latency range of each operation kind over every run, in whole decades, so the same
/// kind is drawn on the same scale in every run.
pub(crate) struct LatencyRanges {
    /// (op, lowest decade, highest decade), in the order the runs first name the kinds.
    ranges: Vec<(String, i32, i32)>,
}

impl LatencyRanges {
    pub(crate) fn of(runs: &[PageRun]) -> LatencyRanges {
        let mut ranges: Vec<(String, i32, i32)> = Vec::new();
        for r in runs {
            let s = &r.samples;
            let mut lo = vec![u64::MAX; s.op_names.len()];
            let mut hi = vec![0u64; s.op_names.len()];
            for (&op, &lat) in s.op.iter().zip(&s.latency_ns) {
                lo[op as usize] = lo[op as usize].min(lat.max(1));
                hi[op as usize] = hi[op as usize].max(lat.max(1));
            }
            for (i, name) in s.op_names.iter().enumerate() {
                if hi[i] == 0 {
                    continue;
                }
                let d_lo = (lo[i] as f64).log10().floor() as i32;
                let d_hi = ((hi[i] as f64).log10().ceil() as i32).max(d_lo + 1);
                match ranges.iter_mut().find(|(n, _, _)| n == name) {
                    Some(e) => {
                        e.1 = e.1.min(d_lo);
                        e.2 = e.2.max(d_hi);
                    }
                    None => ranges.push((name.clone(), d_lo, d_hi)),
                }
            }
        }
        LatencyRanges { ranges }
    }

    pub(crate) fn ops(&self) -> impl Iterator<Item = &str> {
        self.ranges.iter().map(|(n, _, _)| n.as_str())
    }

    pub(crate) fn decades(&self, op: &str) -> (i32, i32) {
        self.ranges
            .iter()
            .find(|(n, _, _)| n == op)
            .map_or((3, 9), |e| (e.1, e.2))
    }
}

/// "1µs", "10ms", "1s" for 10^decade ns.
pub(crate) fn decade_label(decade: i32) -> String {
    let (unit, base) = match decade {
        d if d < 3 => ("ns", 0),
        d if d < 6 => ("µs", 3),
        d if d < 9 => ("ms", 6),
        _ => ("s", 9),
    };
    format!("{}{unit}", 10u64.pow((decade - base) as u32))
}

pub(crate) use crate::units::latency_text;

/// A step of 1, 2 or 5 × 10^k that cuts `span` into at most `max_ticks` pieces.
pub(crate) fn nice_step(span: f64, max_ticks: f64) -> f64 {
    let raw = (span / max_ticks).max(1e-9);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

/// The time axis of a run: its measured part, or further if calls or the writer went on.
pub(crate) fn run_seconds(run: &PageRun) -> f64 {
    let s = &run.samples;
    let last_end = s
        .t_ns
        .iter()
        .zip(&s.latency_ns)
        .map(|(t, l)| t.saturating_add(*l))
        .max()
        .unwrap_or(0);
    let bg_end = run.background.iter().map(|(sec, _)| sec + 1).max().unwrap_or(0);
    let timeline_end = run
        .timeline
        .as_ref()
        .and_then(|t| t.points.last())
        .map_or(0, |p| p.t_ns);
    run.duration_s
        .max(last_end as f64 / 1e9)
        .max(bg_end as f64)
        .max(timeline_end as f64 / 1e9)
        .max(1e-3)
}

/// Opens a plot `width` × `height` px: the `<svg>` element of CSS class `class`, described
/// to a screen reader as `label` (HTML already).
pub(crate) fn begin(class: &str, width: f64, height: f64, label: &str) -> String {
    format!(
        "<svg class=\"{class}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" role=\"img\" aria-label=\"{label}\">"
    )
}

/// The frame of a plot area `width` × `height` px at (`LEFT`, `TOP`), filled with `fill`.
pub(crate) fn frame(svg: &mut String, width: f64, height: f64, fill: &str) {
    let _ = write!(
        svg,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{width}\" height=\"{height}\" fill=\"{fill}\" stroke=\"#bbb\"/>"
    );
}

/// A grid line across a plot area `width` px wide at height `y`, labelled left of the area.
pub(crate) fn grid_row(svg: &mut String, y: f64, width: f64, stroke: &str, label: impl Display) {
    let _ = write!(
        svg,
        "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{:.0}\" y2=\"{y:.1}\" stroke=\"{stroke}\"/><text x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"end\">{label}</text>",
        LEFT + width,
        LEFT - 6.0,
        y + 4.0
    );
}

/// A grid line down a plot area from `TOP` to `bottom` at `x`, labelled under the area.
pub(crate) fn grid_column(svg: &mut String, x: f64, bottom: f64, stroke: &str, label: impl Display) {
    let _ = write!(
        svg,
        "<line x1=\"{x:.1}\" y1=\"{TOP}\" x2=\"{x:.1}\" y2=\"{:.0}\" stroke=\"{stroke}\"/><text x=\"{x:.1}\" y=\"{:.0}\" text-anchor=\"middle\">{label}</text>",
        bottom,
        bottom + 16.0
    );
}

/// How a legend entry shows its run's colour.
pub(crate) enum Swatch {
    /// A stroke, as the run's line is drawn.
    Line,
    /// A square, as the run's point is filled.
    Square,
}

/// A legend entry under a plot, its text's baseline at `y`: the swatch in `colour`, then
/// `text` (HTML already).
pub(crate) fn legend_entry(svg: &mut String, y: f64, swatch: Swatch, colour: &str, text: impl Display) {
    let text_x = match swatch {
        Swatch::Line => {
            let _ = write!(
                svg,
                "<line x1=\"{LEFT}\" y1=\"{:.0}\" x2=\"{:.0}\" y2=\"{:.0}\" stroke=\"{colour}\" stroke-width=\"3\"/>",
                y - 4.0,
                LEFT + 24.0,
                y - 4.0
            );
            LEFT + 30.0
        }
        Swatch::Square => {
            let _ = write!(
                svg,
                "<rect x=\"{LEFT}\" y=\"{:.0}\" width=\"10\" height=\"10\" fill=\"{colour}\"/>",
                y - 9.0
            );
            LEFT + 16.0
        }
    };
    let _ = write!(svg, "<text x=\"{text_x:.0}\" y=\"{y:.0}\">{text}</text>");
}

/// A latency axis up a plot area `width` × `height` px: a grid line a decade from 10^`d_lo`
/// ns at the bottom to 10^`d_hi` ns at the top.
pub(crate) fn latency_rows(svg: &mut String, (d_lo, d_hi): (i32, i32), width: f64, height: f64) {
    let span = f64::from(d_hi - d_lo);
    for d in d_lo..=d_hi {
        let y = TOP + height - f64::from(d - d_lo) / span * height;
        grid_row(svg, y, width, "#ddd", decade_label(d));
    }
}

/// A latency axis across a plot area `PLOT_W` × `height` px: a grid line a decade from
/// 10^`d_lo` ns at the left to 10^`d_hi` ns at the right.
pub(crate) fn latency_columns(svg: &mut String, (d_lo, d_hi): (i32, i32), height: f64) {
    let span = f64::from(d_hi - d_lo);
    for d in d_lo..=d_hi {
        let x = LEFT + f64::from(d - d_lo) / span * PLOT_W;
        grid_column(svg, x, TOP + height, "#eee", decade_label(d));
    }
}

pub(crate) fn x_axis(svg: &mut String, seconds: f64, y: f64) {
    let step = nice_step(seconds, 10.0);
    let mut t = 0.0;
    while t <= seconds + 1e-9 {
        let x = LEFT + t / seconds * PLOT_W;
        let _ = write!(
            svg,
            "<line x1=\"{x:.1}\" y1=\"{y:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#999\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{} s</text>",
            y + 4.0,
            y + 16.0,
            trim_float(t)
        );
        t += step;
    }
}

pub(crate) fn trim_float(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_steps() {
        assert_eq!(decade_label(3), "1µs");
        assert_eq!(decade_label(7), "10ms");
        assert_eq!(decade_label(10), "10s");
        assert_eq!(nice_step(25.0, 10.0), 5.0);
        assert_eq!(nice_step(0.4, 10.0), 0.05);
        assert_eq!(trim_float(2.5), "2.5");
        assert_eq!(trim_float(10.0), "10");
    }
}
