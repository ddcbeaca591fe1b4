//! `--format text`: what a person reads after a run — where it ran, one row per operation
//! kind (count, errors, min, p50, p90, p99, p99.9, max, mean), the background writer's
//! throughput beside it (the trade-off is the point), scenario tables, the slowest calls
//! with where their time went (`--explain`), the timeline in one line with the failed
//! calls on it, and findings.

use std::fmt::Write;

use super::Exporter;
use crate::result::{Cell, RunResult, Table};
use crate::role::writer::BackgroundSummary;
use crate::units::{format_latency_ns, human_size};

pub(crate) struct Text;

impl Exporter for Text {
    fn render(&self, r: &RunResult) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{}{}",
            r.scenario,
            if r.interrupted { "  (interrupted)" } else { "" }
        );
        let _ = writeln!(out, "  target   {}", r.environment.target);
        let _ = writeln!(out, "           {}", r.environment.target_line());
        if let Some(j) = &r.environment.journal {
            let _ = writeln!(out, "  journal  {}", j.describe());
        }
        let _ = writeln!(out, "  machine  {}", r.environment.machine_line());
        let _ = writeln!(out, "  params   {}", params_line(r));
        if !r.ops.is_empty() {
            out.push('\n');
            out.push_str(&ops_table(r));
        }
        if let Some(b) = &r.background {
            out.push('\n');
            out.push_str(&background_line(b));
        }
        for t in &r.tables {
            out.push('\n');
            out.push_str(&table(t));
        }
        if let Some(e) = &r.explain {
            out.push('\n');
            out.push_str(&crate::explain::text::slowest_calls(e));
        }
        if let Some(t) = &r.timeline {
            out.push_str(&crate::explain::text::timeline_line(t));
        }
        for line in super::failures::lines(r) {
            let _ = writeln!(out, "{line}");
        }
        if !r.findings.is_empty() {
            out.push('\n');
            for f in &r.findings {
                let _ = writeln!(out, "{f}");
            }
        }
        out
    }
}

fn params_line(r: &RunResult) -> String {
    r.params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn ops_table(r: &RunResult) -> String {
    let header = [
        "op", "count", "errors", "min", "p50", "p90", "p99", "p99.9", "max", "mean",
    ];
    let mut rows = vec![header.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
    for (op, s) in &r.ops {
        let l = &s.latency_ns;
        let mut row = vec![op.to_string(), s.count.to_string(), s.errors.to_string()];
        row.extend([l.min, l.p50, l.p90, l.p99, l.p999, l.max, l.mean].map(format_latency_ns));
        rows.push(row);
    }
    align(&rows)
}

pub(crate) fn background_line(b: &BackgroundSummary) -> String {
    let mut s = format!(
        "background {}: {} in {:.1} s = {:.1} MiB/s, {:.0} writes/s (write p50 {}, p99 {}, max {})",
        b.kind,
        human_size(b.bytes),
        b.seconds,
        b.mb_per_s,
        b.ops_per_s,
        format_latency_ns(b.latency_ns.p50),
        format_latency_ns(b.latency_ns.p99),
        format_latency_ns(b.latency_ns.max),
    );
    if let Some(e) = &b.error {
        let _ = write!(s, "; stopped by {e}");
    }
    s.push('\n');
    s
}

fn table(t: &Table) -> String {
    let mut rows = vec![t.columns.clone()];
    for r in &t.rows {
        rows.push(
            r.iter()
                .map(|cell| match cell {
                    Cell::Text(s) => s.clone(),
                    Cell::Count(n) => n.to_string(),
                    Cell::Figure(x) => format!("{x:.1}"),
                    Cell::Other(v) => v.to_string(),
                })
                .collect(),
        );
    }
    format!("{}\n{}", t.title, align(&rows))
}

/// Columns padded to their widest cell: the first left-aligned, the rest right-aligned.
fn align(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c == 0 {
                let _ = write!(line, "{cell:<w$}", w = widths[c]);
            } else {
                let _ = write!(line, "  {cell:>w$}", w = widths[c]);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
