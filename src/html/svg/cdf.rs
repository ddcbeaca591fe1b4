//! Latency distributions of one kind, every run's line on the same axes.

use std::fmt::Write as _;

use super::{
    begin, frame, grid_row, latency_columns, latency_text, legend_entry, trim_float, LatencyRanges, Swatch, CDF_H,
    CDF_POINTS, LEFT, LINE_COLOURS, PLOT_W, SVG_W, TOP,
};
use crate::html::{escape, PageRun};

/// The latency CDF of one kind in every run that has it, on a log latency axis and a
/// "nines" share axis (0, 90%, 99%, 99.9%...) so that the tail gets the room it matters.
pub(crate) fn cdf(op: &str, runs: &[PageRun], ranges: &LatencyRanges) -> String {
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
    let mut svg = begin("cdf", SVG_W, height, &format!("{} latency CDF", escape(op)));
    frame(&mut svg, PLOT_W, CDF_H, "#fff");
    for k in 0..=top_nines as i32 {
        let label = match k {
            0 => "0%".to_string(),
            1 => "90%".to_string(),
            k => format!("{}%", trim_float(100.0 - 100.0 / 10f64.powi(k))),
        };
        grid_row(&mut svg, y_of(f64::from(k)), PLOT_W, "#eee", label);
    }
    latency_columns(&mut svg, (d_lo, d_hi), CDF_H);
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
        let label = escape(&runs[*i].label);
        let max = latency_text(v[n - 1]);
        let ly = TOP + CDF_H + 30.0 + 16.0 * j as f64;
        legend_entry(
            &mut svg,
            ly,
            Swatch::Line,
            colour,
            format_args!("{label} ({n} calls, max {max})"),
        );
    }
    svg.push_str("</svg>\n");
    svg
}
