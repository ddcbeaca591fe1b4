//! The HTML page `fsynclab report` writes: one self-contained file (inline SVG and CSS, no
//! script, nothing fetched when it is opened; its only links are to its own parts) that
//! shows what the text report cannot:
//! - where runs had a background writer, the trade-off seed 000 is about: each run's worst
//!   and p99 sync latency against the writer's MB/s;
//! - per run, its kernel timeline (dirty and writeback memory against the dirty limits,
//!   requests in flight, cache flushes, an emulated disk's cache) with its explained slow
//!   calls as bars, each linked to its parts in a table under it;
//! - per run and operation kind, latency over time on the same clock: a heat map where
//!   calls are dense, the slowest calls as exact points, and under it the background
//!   writer's throughput second by second, on the same time axis;
//! - the latency CDFs of the runs, overlaid per operation kind;
//! - the matrix table, best per row in bold, significant differences marked.
//!
//! Size stays bounded whatever the run's length: the heat map is binned ([`HEAT_COLUMNS`] ×
//! [`HEAT_ROWS`] cells at most), the CDF has [`CDF_POINTS`] points, and only the slowest
//! [`SLOW_POINTS`] calls of a kind (those at or above its p99) are drawn one by one.

mod svg;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::compare::table::{self, MatrixTable};
use crate::compare::{Figure, Metric, RunFigures};
use crate::explain::attribution::Attribution;
use crate::explain::TimelineRecord;
use crate::result::RunResult;
use crate::store::{SampleColumns, StoredRun};

pub use svg::{CDF_POINTS, HEAT_COLUMNS, HEAT_ROWS, SLOW_POINTS};

/// The kernel timeline's colours and the trade-off plot's background, which nothing else on
/// the page uses.
pub mod kernel_colours {
    pub use super::svg::{BACKGROUND_LIMIT, CACHE, DIRTY, FLUSHES, IN_FLIGHT, LIMIT, TRADEOFF_FRAME, WRITEBACK};
}

/// One run as the page shows it.
#[derive(Clone, Debug, Default)]
pub struct PageRun {
    /// What names the run: its store id, a file name, a matrix cell.
    pub label: String,
    pub scenario: String,
    /// Where it ran, in a few words (`ext4 hdd-5400 mq-deadline`, `ext4 at /work`).
    pub testbed: String,
    /// What may set it apart from the runs beside it, by name: its testbed's traits
    /// (filesystem, device, scheduler, kernel), then its parameters as `name=value`.
    pub traits: Vec<(String, String)>,
    pub started_at: String,
    /// Length of the measured part, seconds.
    pub duration_s: f64,
    pub params: BTreeMap<String, String>,
    pub figures: Option<RunFigures>,
    pub samples: SampleColumns,
    /// Its sync and write calls: the samples, or for a run kept without them (a watch, whose
    /// calls are counted in the kernel's histograms) what its operation statistics count.
    pub calls: u64,
    /// The background writer's bytes per second of the run (second index, bytes).
    pub background: Vec<(u64, u64)>,
    /// `stream`, `random`, when there was a background writer.
    pub background_kind: Option<String>,
    /// The machine's writeback state sampled during the run.
    pub(crate) timeline: Option<TimelineRecord>,
    /// The slowest explained calls, slowest first (at most 20).
    pub(crate) slow_calls: Vec<Attribution>,
    /// An emulated disk's cache occupancy: (seconds since the run started, bytes).
    pub(crate) cache_occupancy: Vec<[f64; 2]>,
    /// Its main sync call's latency against the background writer's throughput.
    pub(crate) tradeoff: Option<Tradeoff>,
}

/// One run's point of the trade-off plot.
#[derive(Clone, Debug)]
pub(crate) struct Tradeoff {
    /// The sync kind called most often (`fsync`).
    pub(crate) sync_op: String,
    pub(crate) worst_ns: u64,
    pub(crate) p99_ns: u64,
    pub(crate) writer_mb_per_s: f64,
}

impl Tradeoff {
    /// The point of `result`, when it had a background writer and sync calls.
    fn of(result: &RunResult) -> Option<Tradeoff> {
        let writer = result.background.as_ref()?;
        let (op, stats) = result
            .ops
            .iter()
            .filter(|(op, s)| op.is_sync() && s.count > 0)
            .max_by_key(|(_, s)| s.count)?;
        Some(Tradeoff {
            sync_op: op.to_string(),
            worst_ns: stats.latency_ns.max,
            p99_ns: stats.latency_ns.p99,
            writer_mb_per_s: writer.mb_per_s,
        })
    }
}

impl PageRun {
    /// A run from its result (its head will do: the samples are taken from `samples`), with
    /// its figures when it has them.
    pub(crate) fn from_result(label: &str, result: &RunResult, samples: SampleColumns) -> PageRun {
        let background = result.background.as_ref();
        PageRun {
            label: label.to_string(),
            scenario: result.scenario.clone(),
            testbed: result.environment.testbed(),
            traits: result
                .environment
                .traits()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .chain(result.params.iter().map(|(k, v)| (k.clone(), format!("{k}={v}"))))
                .collect(),
            started_at: result.started_at.clone(),
            duration_s: result.duration_s,
            params: result.params.clone(),
            figures: crate::compare::run_figures(label, result).ok(),
            calls: match samples.len() {
                0 => result.ops.values().map(|o| o.count).sum(),
                n => n as u64,
            },
            samples,
            background: background
                .map_or_else(Vec::new, |b| b.per_second.iter().map(|s| (s.second, s.bytes)).collect()),
            background_kind: background.map(|b| b.kind.to_string()),
            timeline: result.timeline.clone(),
            slow_calls: result
                .explain
                .as_ref()
                .map(|e| svg::page_calls(&e.calls))
                .unwrap_or_default(),
            cache_occupancy: result
                .environment
                .device_profile
                .as_ref()
                .and_then(|p| p.activity.as_ref())
                .map(|a| a.cache_occupancy.clone())
                .unwrap_or_default(),
            tradeoff: Tradeoff::of(result),
        }
    }

    /// A run read from the store; one this version cannot read is an error that says so.
    pub fn from_stored(run: &StoredRun) -> anyhow::Result<PageRun> {
        let head = crate::recording::head_of(run)?;
        Ok(PageRun::from_result(
            &format!("run {}", run.id),
            &head,
            run.samples.clone(),
        ))
    }
}

/// Names each run by what sets it apart from the others: `run 3` and `run 4` of an ext4
/// and an xfs run become `run 3 (ext4)` and `run 4 (xfs)`, in every table, legend and
/// heading of the page. A trait that differs counts (the scenario, a testbed's trait, a
/// parameter's value); the ones all runs share say nothing and are left out.
pub fn name_apart(runs: &mut [PageRun]) {
    if runs.len() < 2 {
        return;
    }
    let value = |run: &PageRun, key: &str| -> Option<String> {
        match key {
            "scenario" => Some(run.scenario.clone()),
            _ => run.traits.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()),
        }
    };
    let mut keys: Vec<String> = vec!["scenario".into()];
    for run in runs.iter() {
        for (k, _) in &run.traits {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    let differing: Vec<String> = keys
        .into_iter()
        .filter(|k| runs.iter().any(|r| value(r, k) != value(&runs[0], k)))
        .collect();
    if differing.is_empty() {
        return;
    }
    for run in runs.iter_mut() {
        let apart: Vec<String> = differing
            .iter()
            .map(|k| match (k.as_str(), value(run, k)) {
                ("kernel", Some(v)) => format!("kernel {v}"),
                (_, Some(v)) => v,
                (k, None) => format!("no {k}"),
            })
            .collect();
        run.label = format!("{} ({})", run.label, apart.join(", "));
    }
}

/// What a page holds.
#[derive(Clone, Debug, Default)]
pub struct Page {
    pub title: String,
    /// Every run gets its timelines and a line in each CDF: about 0.5 MB of page for a
    /// 25-second fsync-tps run of 576,000 calls, whatever the count. For a matrix, pass one
    /// run a cell (the one with the median figure, say), not every repetition.
    pub runs: Vec<PageRun>,
    pub matrix: Option<MatrixTable>,
}

/// Escapes text for HTML element content and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff;max-width:1100px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px}
td.n{text-align:right;font-variant-numeric:tabular-nums}.note{color:#555;font-size:12px}
svg{display:block;margin:6px 0}svg text{font:11px system-ui,sans-serif;fill:#333}
.sig{color:#b00}table.calls td{vertical-align:top;font-size:12px}tr:target{background:#fff3bf}
.lost{color:#b00;font-weight:bold}
";

/// The page as one HTML document.
pub fn render(page: &Page) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        escape(&page.title),
        escape(&page.title)
    );
    // A matrix's table is what its page is for: it comes first.
    if let Some(t) = &page.matrix {
        matrix_section(&mut h, t);
    }
    runs_table(&mut h, &page.runs);
    let tradeoff = svg::tradeoff(&page.runs);
    if !tradeoff.is_empty() {
        let _ = writeln!(h, "<h2>Sync latency against the background writer</h2>\n<p class=\"note\">The trade-off seed 000 is about: each run's worst and p99 latency of its main sync call (log scale) against what its background writer wrote per second. Down and to the left is better for the sync calls; to the right, for the writer.</p>");
        h.push_str(&tradeoff);
    }
    if svg::has_frontier(&page.runs) {
        let _ = writeln!(h, "<h2>Durability against latency</h2>\n<p class=\"note\">Each power-cut run: the p99 latency of its sync call across, the share of its acknowledged records lost or torn at the cuts up. A configuration off the floor lost what it had acknowledged, however fast it was.</p>");
        h.push_str(&svg::frontier(&page.runs));
    }
    let ranges = svg::LatencyRanges::of(&page.runs);
    if page.runs.iter().any(|r| !r.samples.is_empty()) {
        let _ = writeln!(h, "<h2>Latency distributions</h2>\n<p class=\"note\">Share of calls at or below each latency, one line per run; the tail is the right-hand end of each line.</p>");
        for op in ranges.ops() {
            let _ = writeln!(h, "<h3>{}</h3>", escape(op));
            h.push_str(&svg::cdf(op, &page.runs, &ranges));
        }
    }
    for (index, run) in page.runs.iter().enumerate() {
        let _ = writeln!(h, "<h2>{} — {}</h2>", escape(&run.label), escape(&run.scenario));
        if run.timeline.is_some() {
            let _ = writeln!(h, "<h3>Kernel timeline</h3>\n<p class=\"note\">What the kernel did while the calls below ran, on the same clock: sampled every {}.{}</p>", run.timeline.as_ref().map_or(String::new(), |t| crate::units::format_duration(std::time::Duration::from_nanos(t.interval_ns))), if run.slow_calls.is_empty() { "" } else { " The bars at the bottom are the slowest calls explained (--explain), each linked to where its time went, listed after the calls' pictures." });
            h.push_str(&svg::machine(run, index));
        }
        let _ = writeln!(
            h,
            "<p class=\"note\">Each call at its start time on the run's clock. Where a kind has more than {SLOW_POINTS} calls, the colour of a cell is how many fell in it (darker = more) and only the slowest are points; otherwise every call is a point. Red points are the calls at or above the kind's p99 ({SLOW_POINTS} at most; hover for exact values).{}</p>",
            if run.background.is_empty() { "" } else { " Under the calls, the background writer's throughput per second." }
        );
        for op in &run.samples.op_names {
            let _ = writeln!(h, "<h3>{}</h3>", escape(op));
            h.push_str(&svg::timeline(run, op, &ranges));
        }
        if run.samples.is_empty() {
            h.push_str("<p>No per-call samples were recorded for this run.</p>\n");
        }
        if !run.slow_calls.is_empty() {
            let _ = writeln!(h, "<h3>Slowest calls explained</h3>");
            h.push_str(&svg::call_list(run, index));
        }
    }
    h.push_str("</body></html>\n");
    h
}

fn runs_table(h: &mut String, runs: &[PageRun]) {
    h.push_str("<h2>Runs</h2>\n<table><tr><th>run</th><th>scenario</th><th>testbed</th><th>started</th><th>measured</th><th>calls</th><th>parameters</th></tr>\n");
    for r in runs {
        let params: Vec<String> = r.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{:.1} s</td><td class=\"n\">{}</td><td>{}</td></tr>",
            escape(&r.label),
            escape(&r.scenario),
            escape(&r.testbed),
            escape(&r.started_at),
            r.duration_s,
            r.calls,
            escape(&params.join(" "))
        );
    }
    h.push_str("</table>\n");
    // Figures: one row per run and kind.
    let mut rows = String::new();
    for r in runs {
        let Some(f) = &r.figures else { continue };
        let subjects: Vec<&String> = {
            let mut s: Vec<&String> = f.values.keys().map(|k| &k.subject).collect();
            s.dedup();
            s
        };
        for subject in subjects {
            let cell = |m: Metric| {
                f.values
                    .get(&Figure::new(subject, m))
                    .map_or("-".to_string(), |v| Figure::new(subject, m).format(*v))
            };
            // A subject with none of these figures (powercut's `acked`: what was lost) has
            // its own picture, the frontier.
            let shown = [Metric::OpsPerSec, Metric::P50, Metric::P99, Metric::Max, Metric::MbPerS];
            if shown.iter().all(|m| !f.values.contains_key(&Figure::new(subject, *m))) {
                continue;
            }
            let _ = writeln!(
                rows,
                "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                escape(&r.label),
                escape(subject),
                cell(Metric::OpsPerSec),
                cell(Metric::P50),
                cell(Metric::P99),
                cell(Metric::Max),
                cell(Metric::MbPerS)
            );
        }
    }
    if !rows.is_empty() {
        h.push_str("<table><tr><th>run</th><th>kind</th><th>ops/s</th><th>p50 ms</th><th>p99 ms</th><th>max ms</th><th>MB/s</th></tr>\n");
        h.push_str(&rows);
        h.push_str("</table>\n");
    }
}

fn matrix_section(h: &mut String, t: &MatrixTable) {
    let _ = writeln!(
        h,
        "<h2>Matrix: {} by {}</h2>\n<table><tr>",
        escape(&t.figure.to_string()),
        escape(&t.column_axis)
    );
    for a in &t.row_axes {
        let _ = write!(h, "<th>{}</th>", escape(a));
    }
    for c in &t.columns {
        let _ = write!(h, "<th>{}={}</th>", escape(&t.column_axis), escape(c));
    }
    h.push_str("</tr>\n");
    for row in &t.rows {
        h.push_str("<tr>");
        for k in &row.key {
            let _ = write!(h, "<td>{}</td>", escape(k));
        }
        for cell in &row.cells {
            match cell {
                None => h.push_str("<td class=\"n\">-</td>"),
                Some(c) => {
                    let v = escape(&t.figure.format(c.median));
                    let v = if c.best { format!("<b>{v}</b>") } else { v };
                    let v = if c.lost_acknowledged {
                        format!("{v} <span class=\"lost\" title=\"lost acknowledged writes at a power cut\">!</span>")
                    } else {
                        v
                    };
                    let (mark, title) = match &c.versus_reference {
                        Some(cmp) => (
                            if c.significant() {
                                "<span class=\"sig\">*</span>"
                            } else {
                                ""
                            },
                            format!(
                                "{} runs; against {}={}: {}{}",
                                c.runs,
                                t.column_axis,
                                t.reference,
                                cmp.verdict,
                                cmp.p_adjusted
                                    .map_or(String::new(), |p| format!(" (adjusted p = {p:.4})"))
                            ),
                        ),
                        None => ("", format!("{} runs; the reference column", c.runs)),
                    };
                    let _ = write!(h, "<td class=\"n\" title=\"{}\">{v}{mark}</td>", escape(&title));
                }
            }
        }
        h.push_str("</tr>\n");
    }
    let _ = writeln!(
        h,
        "</table>\n<p class=\"note\">{}</p>",
        escape(&table::legend(t, "bold", "*"))
    );
}

#[cfg(test)]
mod tests;
