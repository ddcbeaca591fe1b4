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

use std::fmt::Write as _;

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
