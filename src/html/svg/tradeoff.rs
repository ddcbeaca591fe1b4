//! The trade-off seed 000 is about, across the runs a page shows: the worst and p99
//! latency of each run's main sync call against what its background writer achieved
//! (MB/s). Ts'o's patches moved the worst fsync from 6.2 s to 1.8 s and the writer from 24
//! to 21 MB/s; a point down and to the left is that trade.

use std::fmt::Write as _;

use super::{begin, frame, latency_rows, latency_text, nice_step, trim_float, LEFT, LINE_COLOURS, TOP};
use crate::html::{escape, PageRun};

const W: f64 = 640.0;
const H: f64 = 260.0;
/// The plot's background, a colour of its own (tests/html_report.rs finds the plot by it).
pub const FRAME: &str = "#f6f1e3";

/// The plot, when at least one run had a background writer and a sync call.
pub(crate) fn tradeoff(runs: &[PageRun]) -> String {
    let points: Vec<(usize, &PageRun, f64, u64, u64, &str)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let t = r.tradeoff.as_ref()?;
            Some((
                i,
                r,
                t.writer_mb_per_s,
                t.worst_ns.max(1),
                t.p99_ns.max(1),
                t.sync_op.as_str(),
            ))
        })
        .collect();
    if points.is_empty() {
        return String::new();
    }
    let max_mb = points.iter().map(|p| p.2).fold(0.0, f64::max).max(1e-3) * 1.1;
    let lo = points.iter().map(|p| p.4.min(p.3)).min().unwrap_or(1);
    let hi = points.iter().map(|p| p.3.max(p.4)).max().unwrap_or(1);
    let d_lo = (lo as f64).log10().floor() as i32;
    let d_hi = ((hi as f64).log10().ceil() as i32).max(d_lo + 1);
    let span = f64::from(d_hi - d_lo);
    let y_of = |ns: u64| TOP + H - (((ns as f64).log10() - f64::from(d_lo)) / span).clamp(0.0, 1.0) * H;
    let x_of = |mb: f64| LEFT + (mb / max_mb).clamp(0.0, 1.0) * W;
    let width = LEFT + W + 240.0;
    let height = TOP + H + 40.0;
    let mut svg = begin("tradeoff", width, height, "sync latency against background throughput");
    frame(&mut svg, W, H, FRAME);
    latency_rows(&mut svg, (d_lo, d_hi), W, H);
    let step = nice_step(max_mb, 8.0);
    let mut mb = 0.0;
    while mb <= max_mb + 1e-9 {
        let x = x_of(mb);
        let _ = write!(
            svg,
            "<line x1=\"{x:.1}\" y1=\"{:.0}\" x2=\"{x:.1}\" y2=\"{:.0}\" stroke=\"#999\"/><text x=\"{x:.1}\" y=\"{:.0}\" text-anchor=\"middle\">{}</text>",
            TOP + H,
            TOP + H + 4.0,
            TOP + H + 16.0,
            trim_float(mb)
        );
        mb += step;
    }
    let _ = write!(
        svg,
        "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"middle\">background writer, MB/s</text>",
        LEFT + W / 2.0,
        TOP + H + 32.0
    );
    for (k, &(i, run, mb, worst, p99, op)) in points.iter().enumerate() {
        let colour = LINE_COLOURS[i % LINE_COLOURS.len()];
        let x = x_of(mb);
        let (yw, yp) = (y_of(worst), y_of(p99));
        let _ = write!(
            svg,
            "<line x1=\"{x:.1}\" y1=\"{yw:.1}\" x2=\"{x:.1}\" y2=\"{yp:.1}\" stroke=\"{colour}\"/><circle cx=\"{x:.1}\" cy=\"{yp:.1}\" r=\"9\" fill=\"#fff\" stroke=\"{colour}\" stroke-width=\"2\"><title>{}: p99 {op} {}</title></circle><circle class=\"tradeoff-worst\" cx=\"{x:.1}\" cy=\"{yw:.1}\" r=\"5\" fill=\"{colour}\"><title>{}: worst {op} {} at {mb:.1} MB/s</title></circle>",
            escape(&run.label),
            latency_text(p99),
            escape(&run.label),
            latency_text(worst),
        );
        let _ = write!(
            svg,
            "<text x=\"{:.0}\" y=\"{:.0}\" fill=\"{colour}\">&#9679; {}</text>",
            LEFT + W + 16.0,
            TOP + 14.0 + k as f64 * 16.0,
            escape(&run.label)
        );
    }
    let _ = write!(
        svg,
        "<text x=\"{:.0}\" y=\"{:.0}\">dot: worst, ring: p99</text>",
        LEFT + W + 16.0,
        TOP + 14.0 + points.len() as f64 * 16.0 + 8.0
    );
    svg.push_str("</svg>\n");
    svg
}
