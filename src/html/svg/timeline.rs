//! One kind's calls over the run's clock: a heat map where they are dense, the slowest as
//! points, and the background writer's throughput under them.

use std::fmt::Write as _;

use super::{
    begin, frame, latency_rows, latency_text, run_seconds, x_axis, LatencyRanges, BG_H, HEAT_COLOURS, HEAT_COLUMNS,
    HEAT_H, HEAT_ROWS, LEFT, PLOT_W, SLOW_POINTS, SVG_W, TOP,
};
use crate::html::{escape, PageRun};

/// Draws the binned calls, one path per colour level, runs of equal level in a row merged.
/// `counts` is row-major, row 0 the lowest latency.
fn heat_map(svg: &mut String, counts: &[u32], max_count: u32) {
    let cell_w = PLOT_W / HEAT_COLUMNS as f64;
    let cell_h = HEAT_H / HEAT_ROWS as f64;
    // Log scale of the count: a cell of one call stays visible beside one of ten thousand.
    let level = |c: u32| -> Option<usize> {
        (c > 0).then(|| {
            let f = (f64::from(c) + 1.0).ln() / (f64::from(max_count) + 1.0).ln();
            ((f * HEAT_COLOURS.len() as f64).ceil() as usize).clamp(1, HEAT_COLOURS.len()) - 1
        })
    };
    let mut paths = vec![String::new(); HEAT_COLOURS.len()];
    for row in 0..HEAT_ROWS {
        let y = TOP + HEAT_H - (row + 1) as f64 * cell_h;
        let mut col = 0;
        while col < HEAT_COLUMNS {
            let Some(l) = level(counts[row * HEAT_COLUMNS + col]) else {
                col += 1;
                continue;
            };
            let start = col;
            while col < HEAT_COLUMNS && level(counts[row * HEAT_COLUMNS + col]) == Some(l) {
                col += 1;
            }
            let w = (col - start) as f64 * cell_w;
            let _ = write!(
                paths[l],
                "M{:.0} {:.0}h{w:.0}v{cell_h:.0}h-{w:.0}z",
                LEFT + start as f64 * cell_w,
                y
            );
        }
    }
    for (l, d) in paths.iter().enumerate().filter(|(_, d)| !d.is_empty()) {
        let _ = write!(
            svg,
            "<path fill=\"{}\" shape-rendering=\"crispEdges\" d=\"{d}\"/>",
            HEAT_COLOURS[l]
        );
    }
}

/// The latency of one kind over the run's time: heat map, slowest calls, background.
pub(crate) fn timeline(run: &PageRun, op: &str, ranges: &LatencyRanges) -> String {
    let s = &run.samples;
    let Some(op_index) = s.op_names.iter().position(|n| n == op) else {
        return String::new();
    };
    let op_index = op_index as u32;
    let seconds = run_seconds(run);
    let (d_lo, d_hi) = ranges.decades(op);
    let span = f64::from(d_hi - d_lo);
    let row_of = |lat: u64| -> f64 { (((lat.max(1) as f64).log10() - f64::from(d_lo)) / span).clamp(0.0, 1.0) };
    let t_ns_total = seconds * 1e9;

    // Bin every call of the kind.
    let mut counts = vec![0u32; HEAT_COLUMNS * HEAT_ROWS];
    let mut latencies: Vec<(u64, usize)> = Vec::new();
    for i in 0..s.len() {
        if s.op[i] != op_index {
            continue;
        }
        let col = ((s.t_ns[i] as f64 / t_ns_total * HEAT_COLUMNS as f64) as usize).min(HEAT_COLUMNS - 1);
        let row = ((row_of(s.latency_ns[i]) * HEAT_ROWS as f64) as usize).min(HEAT_ROWS - 1);
        counts[row * HEAT_COLUMNS + col] += 1;
        latencies.push((s.latency_ns[i], i));
    }
    let max_count = counts.iter().copied().max().unwrap_or(0);

    let bg_h = if run.background.is_empty() { 0.0 } else { BG_H + 16.0 };
    let height = TOP + HEAT_H + 24.0 + bg_h;
    let mut svg = begin("timeline", SVG_W, height, &format!("{} latency over time", escape(op)));
    frame(&mut svg, PLOT_W, HEAT_H, "#f7f7f7");
    // Latency grid, one line a decade.
    latency_rows(&mut svg, (d_lo, d_hi), PLOT_W, HEAT_H);
    // Few calls: every one is a point, the slow ones (at or above the kind's p99, nearest
    // rank) in red. Many: a heat map, with only the slowest as points.
    let sparse = latencies.len() <= SLOW_POINTS;
    if !sparse && max_count > 0 {
        heat_map(&mut svg, &counts, max_count);
    }
    if !latencies.is_empty() {
        latencies.sort_unstable_by_key(|&(lat, _)| std::cmp::Reverse(lat));
        let n = latencies.len();
        let p99_rank = ((0.99 * n as f64).ceil() as usize).clamp(1, n);
        let slow = n - p99_rank + 1;
        let shown = if sparse { n } else { slow.min(SLOW_POINTS) };
        // Slowest last, so they are drawn on top.
        for (k, &(lat, i)) in latencies.iter().take(shown).enumerate().rev() {
            let x = LEFT + s.t_ns[i] as f64 / t_ns_total * PLOT_W;
            let y = TOP + HEAT_H - row_of(lat) * HEAT_H;
            let colour = if k < slow { "#d62728" } else { "#3b528b" };
            let _ = write!(
                svg,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2.5\" fill=\"{colour}\"><title>{} at {:.6} s: {}</title></circle>",
                escape(op),
                s.t_ns[i] as f64 / 1e9,
                latency_text(lat)
            );
        }
    }
    x_axis(&mut svg, seconds, TOP + HEAT_H);
    // Background throughput, per second, on the same time axis.
    if !run.background.is_empty() {
        let top = TOP + HEAT_H + 24.0;
        let mb = |b: u64| b as f64 / f64::from(1u32 << 20);
        let max_mb = run.background.iter().map(|(_, b)| mb(*b)).fold(0.0, f64::max).max(1e-9);
        let bar_w = PLOT_W / seconds;
        let _ = write!(svg, "<rect x=\"{LEFT}\" y=\"{top:.0}\" width=\"{PLOT_W}\" height=\"{BG_H}\" fill=\"#f7f7f7\" stroke=\"#bbb\"/><path fill=\"#4c78a8\" d=\"");
        for &(sec, bytes) in &run.background {
            let h = mb(bytes) / max_mb * BG_H;
            if h > 0.0 {
                let _ = write!(
                    svg,
                    "M{:.1} {:.1}h{:.1}v{h:.1}h-{:.1}z",
                    LEFT + sec as f64 * bar_w,
                    top + BG_H - h,
                    bar_w.max(1.0),
                    bar_w.max(1.0)
                );
            }
        }
        let _ = write!(
            svg,
            "\"/><text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{:.0} MB/s</text><text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">0</text><text x=\"{:.0}\" y=\"{:.0}\">background {} writer, MB/s per second</text>",
            LEFT - 6.0,
            top + 10.0,
            max_mb,
            LEFT - 6.0,
            top + BG_H,
            LEFT + 6.0,
            top + 12.0,
            escape(run.background_kind.as_deref().unwrap_or(""))
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::super::cdf;
    use super::*;
    use crate::store::SampleColumns;

    /// A million calls make a bounded picture: binned cells, capped points.
    #[test]
    /// Issue 11.
    fn a_million_calls_make_a_bounded_timeline() {
        let n = 1_000_000u64;
        let samples: Vec<(u64, &str, u64, u64, Option<&str>)> = (0..n)
            .map(|i| (i * 25_000, "fsync", 20_000 + (i * 2_654_435_761) % 2_000_000, 0, None))
            .collect();
        let run = PageRun {
            label: "big".into(),
            duration_s: 25.0,
            samples: SampleColumns::from_records(&samples),
            background: (0..25).map(|s| (s, 100 << 20)).collect(),
            ..PageRun::default()
        };
        let ranges = LatencyRanges::of(std::slice::from_ref(&run));
        let svg = timeline(&run, "fsync", &ranges);
        assert_eq!(svg.matches("<circle").count(), SLOW_POINTS);
        assert!(svg.len() < 400_000, "{} bytes", svg.len());
        let cdf = cdf("fsync", std::slice::from_ref(&run), &ranges);
        assert!(cdf.len() < 20_000, "{} bytes", cdf.len());
    }
}
