//! Durability against latency: each power-cut run a point, its p99 sync latency across (log
//! scale) and the share of its acknowledged records lost or torn up (powercut's `acked.rate`).
//! The points on the floor kept every write; among them, the leftmost is the fastest
//! configuration that an fsync's promise holds for: the frontier the speed tricks move
//! along.

use std::fmt::Write as _;

use super::{
    begin, frame, grid_row, latency_columns, legend_entry, trim_float, Swatch, LEFT, LINE_COLOURS, PLOT_W, SVG_W, TOP,
};
use crate::compare::{Figure, Metric};
use crate::html::{escape, PageRun};

const H: f64 = 220.0;
const LABEL: &str = "p99 sync latency against acknowledged writes lost";

/// A run's point: its label, p99 latency of its main sync call (ns) and loss rate (0..=1).
fn point(run: &PageRun) -> Option<(String, u64, f64)> {
    let f = run.figures.as_ref()?;
    let rate = *f.values.get(&Figure::new("acked", Metric::Rate))?;
    let main = f.main_figure()?;
    let p99 = *f.values.get(&Figure::new(&main.subject, Metric::P99))?;
    let what: Vec<String> = ["pattern", "sync"]
        .iter()
        .filter_map(|k| run.params.get(*k).map(|v| v.to_string()))
        .collect();
    Some((
        format!("{} {} ({})", run.label, what.join("/"), main.subject),
        p99 as u64,
        rate,
    ))
}

/// Whether any run of the page has the figures the frontier needs.
pub(crate) fn has_points(runs: &[PageRun]) -> bool {
    runs.iter().any(|r| point(r).is_some())
}

/// The frontier of `runs`' power-cut results.
pub(crate) fn frontier(runs: &[PageRun]) -> String {
    let points: Vec<(String, u64, f64)> = runs.iter().filter_map(point).collect();
    let lo = points.iter().map(|p| p.1.max(1)).min().unwrap_or(1);
    let hi = points.iter().map(|p| p.1.max(1)).max().unwrap_or(10);
    let d_lo = (lo as f64).log10().floor() as i32;
    let d_hi = ((hi as f64).log10().ceil() as i32).max(d_lo + 1);
    let span = f64::from(d_hi - d_lo);
    let x_of = |ns: u64| LEFT + (((ns.max(1) as f64).log10() - f64::from(d_lo)) / span).clamp(0.0, 1.0) * PLOT_W;
    let y_of = |rate: f64| TOP + H - rate.clamp(0.0, 1.0) * H;
    let legend_h = 16.0 * points.len() as f64;
    let height = TOP + H + 28.0 + legend_h;
    let mut svg = begin("frontier", SVG_W, height, LABEL);
    frame(&mut svg, PLOT_W, H, "#fff");
    for pct in [0, 25, 50, 75, 100] {
        grid_row(
            &mut svg,
            y_of(f64::from(pct) / 100.0),
            PLOT_W,
            "#eee",
            format_args!("{pct}%"),
        );
    }
    latency_columns(&mut svg, (d_lo, d_hi), H);
    for (i, (label, p99, rate)) in points.iter().enumerate() {
        let colour = LINE_COLOURS[i % LINE_COLOURS.len()];
        let (x, y) = (x_of(*p99), y_of(*rate));
        let (label, p99_ms, lost_pct) = (escape(label), trim_float(*p99 as f64 / 1e6), trim_float(rate * 100.0));
        let _ = write!(
            svg,
            "<circle class=\"point\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"5\" fill=\"{colour}\"><title>{label}: p99 {p99_ms} ms, {lost_pct}% of acknowledged writes lost</title></circle>"
        );
        let ly = TOP + H + 32.0 + 16.0 * i as f64;
        legend_entry(
            &mut svg,
            ly,
            Swatch::Square,
            colour,
            format_args!("{label}: p99 {p99_ms} ms, {lost_pct}% lost"),
        );
    }
    svg.push_str("</svg>\n");
    svg
}
