//! The report's pictures as inline SVG: a latency heat map over the run's clock with the
//! slowest calls as points and the background throughput under it, and overlaid latency
//! CDFs. Pure functions of the runs; coordinates rounded to whole or tenth pixels so that a
//! million calls make a few hundred kilobytes.

use std::fmt::Write as _;

use super::{escape, ReportRun};

/// Time bins of a heat map (2 px each).
pub const HEAT_COLUMNS: usize = 480;
/// Latency bins of a heat map, log-spaced over the kind's range (4 px each).
pub const HEAT_ROWS: usize = 50;
/// At most this many of a kind's slowest calls are drawn as points.
pub const SLOW_POINTS: usize = 1000;
/// Points of a CDF line, spread evenly over its "nines" (0, 90%, 99%, 99.9%...).
pub const CDF_POINTS: usize = 240;

const LEFT: f64 = 64.0;
const TOP: f64 = 8.0;
const PLOT_W: f64 = 960.0;
const HEAT_H: f64 = 200.0;
const BG_H: f64 = 60.0;
const CDF_H: f64 = 240.0;

/// Light (few calls) to dark (many): viridis, reversed so that the empty background is
/// lightest.
const HEAT_COLOURS: [&str; 8] = [
    "#fde725", "#a0da39", "#4ac16d", "#1fa187", "#277f8e", "#365c8d", "#46327e", "#440154",
];
/// Line colours of the runs in a CDF (Tableau 10).
const LINE_COLOURS: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
];

/// The latency range of each operation kind over every run, in whole decades, so the same
/// kind is drawn on the same scale in every run.
pub(crate) struct LatencyRanges {
    /// (op, lowest decade, highest decade), in the order the runs first name the kinds.
    ranges: Vec<(String, i32, i32)>,
}

impl LatencyRanges {
    pub(crate) fn of(runs: &[ReportRun]) -> LatencyRanges {
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

    fn decades(&self, op: &str) -> (i32, i32) {
        self.ranges
            .iter()
            .find(|(n, _, _)| n == op)
            .map_or((3, 9), |e| (e.1, e.2))
    }
}

/// "1µs", "10ms", "1s" for 10^decade ns.
fn decade_label(decade: i32) -> String {
    let (unit, base) = match decade {
        d if d < 3 => ("ns", 0),
        d if d < 6 => ("µs", 3),
        d if d < 9 => ("ms", 6),
        _ => ("s", 9),
    };
    format!("{}{unit}", 10u64.pow((decade - base) as u32))
}

fn latency_text(ns: u64) -> String {
    let v = ns as f64;
    if v >= 1e9 {
        format!("{:.3} s", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.3} ms", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} µs", v / 1e3)
    } else {
        format!("{ns} ns")
    }
}

/// A step of 1, 2 or 5 × 10^k that cuts `span` into at most `max_ticks` pieces.
fn nice_step(span: f64, max_ticks: f64) -> f64 {
    let raw = (span / max_ticks).max(1e-9);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

/// The time axis of a run: its measured part, or further if calls or the writer went on.
fn run_seconds(run: &ReportRun) -> f64 {
    let s = &run.samples;
    let last_end = s
        .t_ns
        .iter()
        .zip(&s.latency_ns)
        .map(|(t, l)| t.saturating_add(*l))
        .max()
        .unwrap_or(0);
    let bg_end = run.background.iter().map(|(sec, _)| sec + 1).max().unwrap_or(0);
    run.duration_s.max(last_end as f64 / 1e9).max(bg_end as f64).max(1e-3)
}

fn x_axis(svg: &mut String, seconds: f64, y: f64) {
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

fn trim_float(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

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
pub(crate) fn timeline(run: &ReportRun, op: &str, ranges: &LatencyRanges) -> String {
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
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {:.0} {height:.0}\" role=\"img\" aria-label=\"{} latency over time\">",
        LEFT + PLOT_W + 16.0,
        LEFT + PLOT_W + 16.0,
        escape(op)
    );
    let _ = write!(
        svg,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{PLOT_W}\" height=\"{HEAT_H}\" fill=\"#f7f7f7\" stroke=\"#bbb\"/>"
    );
    // Latency grid, one line a decade.
    for d in d_lo..=d_hi {
        let y = TOP + HEAT_H - f64::from(d - d_lo) / span * HEAT_H;
        let _ = write!(
            svg,
            "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{:.0}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT + PLOT_W,
            LEFT - 6.0,
            y + 4.0,
            decade_label(d)
        );
    }
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

/// The latency CDF of one kind in every run that has it, on a log latency axis and a
/// "nines" share axis (0, 90%, 99%, 99.9%...) so that the tail gets the room it matters.
pub(crate) fn cdf(op: &str, runs: &[ReportRun], ranges: &LatencyRanges) -> String {
    let (d_lo, d_hi) = ranges.decades(op);
    let span = f64::from(d_hi - d_lo);
    let x_of = |lat: u64| LEFT + (((lat.max(1) as f64).log10() - f64::from(d_lo)) / span).clamp(0.0, 1.0) * PLOT_W;
    // Each run's latencies of the kind, sorted.
    let lines: Vec<(usize, Vec<u64>)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let s = &r.samples;
            let op_index = s.op_names.iter().position(|n| n == op)? as u32;
            let mut v: Vec<u64> =
                s.op.iter()
                    .zip(&s.latency_ns)
                    .filter(|(o, _)| **o == op_index)
                    .map(|(_, l)| *l)
                    .collect();
            v.sort_unstable();
            (!v.is_empty()).then_some((i, v))
        })
        .collect();
    let max_n = lines.iter().map(|(_, v)| v.len()).max().unwrap_or(1);
    // Hazen plotting positions (k + ½)/n: the last call sits at 1 − 1/(2n), log10(2n) nines.
    let top_nines = ((2.0 * max_n as f64).log10().ceil()).clamp(1.0, 6.0);
    let y_of = |nines: f64| TOP + CDF_H - (nines / top_nines).min(1.0) * CDF_H;
    let legend_h = 16.0 * lines.len() as f64;
    let height = TOP + CDF_H + 24.0 + legend_h;
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg class=\"cdf\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {:.0} {height:.0}\" role=\"img\" aria-label=\"{} latency CDF\">",
        LEFT + PLOT_W + 16.0,
        LEFT + PLOT_W + 16.0,
        escape(op)
    );
    let _ = write!(
        svg,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{PLOT_W}\" height=\"{CDF_H}\" fill=\"#fff\" stroke=\"#bbb\"/>"
    );
    for k in 0..=top_nines as i32 {
        let y = y_of(f64::from(k));
        let label = match k {
            0 => "0%".to_string(),
            1 => "90%".to_string(),
            k => format!("{}%", trim_float(100.0 - 100.0 / 10f64.powi(k))),
        };
        let _ = write!(
            svg,
            "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{:.0}\" y2=\"{y:.1}\" stroke=\"#eee\"/><text x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"end\">{label}</text>",
            LEFT + PLOT_W,
            LEFT - 6.0,
            y + 4.0
        );
    }
    for d in d_lo..=d_hi {
        let x = LEFT + f64::from(d - d_lo) / span * PLOT_W;
        let _ = write!(
            svg,
            "<line x1=\"{x:.1}\" y1=\"{TOP}\" x2=\"{x:.1}\" y2=\"{:.0}\" stroke=\"#eee\"/><text x=\"{x:.1}\" y=\"{:.0}\" text-anchor=\"middle\">{}</text>",
            TOP + CDF_H,
            TOP + CDF_H + 16.0,
            decade_label(d)
        );
    }
    for (j, (i, v)) in lines.iter().enumerate() {
        let n = v.len();
        let colour = LINE_COLOURS[j % LINE_COLOURS.len()];
        let nines_max = (2.0 * n as f64).log10();
        let mut points = String::new();
        let mut last_rank = usize::MAX;
        for p in 0..CDF_POINTS {
            let nines = nines_max * p as f64 / (CDF_POINTS - 1) as f64;
            let q = 1.0 - 10f64.powf(-nines);
            let rank = ((q * n as f64 - 0.5).round().max(0.0) as usize).min(n - 1);
            if rank == last_rank {
                continue;
            }
            last_rank = rank;
            let nines_at = -(1.0 - (rank as f64 + 0.5) / n as f64).log10();
            let _ = write!(points, "{:.1},{:.1} ", x_of(v[rank]), y_of(nines_at));
        }
        let _ = write!(
            svg,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\" points=\"{}\"/>",
            points.trim_end()
        );
        let ly = TOP + CDF_H + 30.0 + 16.0 * j as f64;
        let _ = write!(
            svg,
            "<line x1=\"{LEFT}\" y1=\"{:.0}\" x2=\"{:.0}\" y2=\"{:.0}\" stroke=\"{colour}\" stroke-width=\"3\"/><text x=\"{:.0}\" y=\"{:.0}\">{} ({} calls, max {})</text>",
            ly - 4.0,
            LEFT + 24.0,
            ly - 4.0,
            LEFT + 30.0,
            ly,
            escape(&runs[*i].label),
            n,
            latency_text(v[n - 1])
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SampleColumns;

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

    /// A million calls make a bounded picture: binned cells, capped points.
    #[test]
    fn issue11_a_million_calls_make_a_bounded_timeline() {
        let n = 1_000_000u64;
        let samples: Vec<(u64, &str, u64, u64, Option<&str>)> = (0..n)
            .map(|i| (i * 25_000, "fsync", 20_000 + (i * 2_654_435_761) % 2_000_000, 0, None))
            .collect();
        let run = ReportRun {
            label: "big".into(),
            duration_s: 25.0,
            samples: SampleColumns::from_records(&samples),
            background: (0..25).map(|s| (s, 100 << 20)).collect(),
            ..ReportRun::default()
        };
        let ranges = LatencyRanges::of(std::slice::from_ref(&run));
        let svg = timeline(&run, "fsync", &ranges);
        assert_eq!(svg.matches("<circle").count(), SLOW_POINTS);
        assert!(svg.len() < 400_000, "{} bytes", svg.len());
        let cdf = cdf("fsync", std::slice::from_ref(&run), &ranges);
        assert!(cdf.len() < 20_000, "{} bytes", cdf.len());
    }
}
