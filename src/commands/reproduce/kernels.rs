//! `reproduce --kernel A,B`: every group's runs made on each kernel and the findings judged
//! per kernel, side by side, with what changed between them.
//!
//! The kernels are a `kernel=` axis of every group's matrix plan (the last axis, so a
//! cell's run on each kernel follows the other's: host run, guest run, next cell, and both
//! kernels see the same machine conditions), checked as a matrix's kernel axis is before
//! anything is made. Each seed's runs are split by that axis (the pair dropped, so the
//! seed's rules see the axes they always see) and judged per kernel. For each finding the
//! first kernel is the reference A: the verdicts compared, and the finding's own figure
//! (where its seed names one: seed 004's overwrite fdatasync rate) or else the group's main
//! figure on the finding's first configuration, as the ratio B/A of medians with its
//! bootstrap 95% interval and a two-sided Mann-Whitney test ([`crate::compare::stats`])
//! where each side has at least [`MIN_RUNS`] runs, else said to be undecidable. A change is
//! called when p < 0.05 and the interval lies clear of 1: on the same kernel on both sides
//! (an A/A run) that happens at most as often as the test's 5% (docs/kernels.md measures it).

use serde::Serialize;

use super::confidence::Estimate;
use super::experiment::{CellRuns, Experiment, Measured, Row, Run, Size};
use super::verdict::Verdict;
use super::SeedReport;
use crate::compare::figures::{run_figures, Figure, Metric};
use crate::compare::stats;
use crate::compare::{Settings, MIN_RUNS};
use crate::error::Usage;
use crate::explain::run::ExplainOptions;
use crate::matrix::plan::{Axis, Plan, KERNEL_AXIS};
use crate::testbed::Key;

/// `--kernel host,6.1.0-56-amd64`'s kernels, checked before anything is made: an empty or
/// repeated value, a kernel that is not bootable here (the matrix kernel axis's check), or a
/// group without a scratch filesystem (a guest's disk is the scratch filesystem's) is one
/// line. None (or `host` alone): the reproduction runs on this kernel, as without the flag.
pub(super) fn check(
    spec: Option<&str>,
    timeout: Option<&str>,
    experiments: &[&'static dyn Experiment],
    size: Size,
) -> Result<Vec<String>, Usage> {
    let Some(spec) = spec else {
        return Ok(Vec::new());
    };
    let mut kernels: Vec<String> = Vec::new();
    for k in spec.split(',').map(str::trim) {
        if k.is_empty() {
            return Err(Usage(format!(
                "reproduce --kernel {spec}: an empty value; give kernels separated by commas, like host,6.1.0-56-amd64"
            )));
        }
        if kernels.iter().any(|x| x == k) {
            return Err(Usage(format!("reproduce --kernel {spec}: {k} is given twice")));
        }
        kernels.push(k.to_string());
    }
    if kernels == ["host"] {
        return Ok(Vec::new());
    }
    for e in experiments {
        for g in e.groups(size) {
            let scratch =
                g.target.iter().any(|(k, _)| *k == Key::Scratch) || g.axes.iter().any(|(k, _)| *k == "scratch");
            if !scratch {
                return Err(Usage(format!(
                    "reproduce --kernel: seed {}'s {} runs are not made on a scratch filesystem, which a guest kernel needs (its disk); leave seed {} out",
                    e.seed(),
                    g.scenario,
                    e.seed()
                )));
            }
        }
    }
    if let Some(g) = experiments.first().and_then(|e| e.groups(size).into_iter().next()) {
        let mut plan = g.plan(size);
        with_axis(&mut plan, &kernels, timeout);
        plan.check_kernels().map_err(|e| {
            let text = e.0.replacen("--axis kernel=", "reproduce --kernel ", 1);
            Usage(text.replacen("--axis kernel:", "reproduce --kernel:", 1))
        })?;
    }
    Ok(kernels)
}

fn with_axis(plan: &mut Plan, kernels: &[String], timeout: Option<&str>) {
    plan.axes.push(Axis {
        key: KERNEL_AXIS.into(),
        values: kernels.to_vec(),
    });
    plan.kernel_timeout = timeout.map(str::to_string);
}

/// The heading's machine: this host's, and the kernel the runs were made on when one other
/// than the host's was given alone.
pub(super) fn machine_line(kernels: &[String], host: String) -> String {
    match kernels {
        [one] if one != "host" => format!("every run on kernel {one} in a VM; host {host}"),
        _ => host,
    }
}

/// Adds the kernel axis, last, to every group's plan.
pub(super) fn apply<'a>(plans: impl Iterator<Item = &'a mut Plan>, kernels: &[String], timeout: Option<&str>) {
    if kernels.is_empty() {
        return;
    }
    for plan in plans {
        with_axis(plan, kernels, timeout);
    }
}

/// The arguments of a guest's run for a reproduction: traced as the host's runs are (the
/// explanation is the rows' *why*), at the group's threshold, where the host traces.
pub(super) fn guest_args(mut args: Vec<String>, explain: &ExplainOptions) -> Vec<String> {
    if explain.trace {
        if let Some(i) = args.iter().position(|a| a == "--no-explain") {
            let over = format!("{}us", explain.threshold.over_ns / 1_000);
            args.splice(i..=i, ["--explain-over".to_string(), over]);
        }
    }
    args
}

/// The runs of `m` made on `kernel`, with the kernel pair dropped from their axes; the
/// failures of its runs (their lines name the kernel) and those naming none of `kernels`.
pub(super) fn split(m: &Measured, kernel: &str, kernels: &[String]) -> Measured {
    let pair = |k: &str| format!("{KERNEL_AXIS}={k} ");
    let mut out = Measured::default();
    for c in &m.cells {
        if c.axes.iter().any(|(k, v)| k == KERNEL_AXIS && v == kernel) {
            let mut c = c.clone();
            c.axes.retain(|(k, _)| k != KERNEL_AXIS);
            out.cells.push(c);
        }
    }
    out.failures = m
        .failures
        .iter()
        .filter(|f| f.contains(&pair(kernel)) || !kernels.iter().any(|k| f.contains(&pair(k))))
        .cloned()
        .collect();
    out
}

/// A seed's findings judged on one kernel.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct KernelRows {
    pub(crate) kernel: String,
    pub(crate) rows: Vec<Row>,
}

/// What changed for one finding between the reference kernel (the first) and another.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Change {
    pub(crate) claim: String,
    pub(crate) reference: String,
    pub(crate) kernel: String,
    pub(crate) same_verdict: bool,
    /// `the same: reproduced` or `reproduced on A, partly on B`.
    pub(crate) verdicts: String,
    /// The figure compared and the configuration it was measured on: `fsync.max (scratch=ext4)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) figure: Option<String>,
    pub(crate) unit: String,
    pub(crate) runs_reference: usize,
    pub(crate) runs_kernel: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) median_reference: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) median_kernel: Option<f64>,
    /// median on the kernel / median on the reference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ratio: Option<f64>,
    /// The ratio's bootstrap 95% interval, with at least 2 runs a side.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) interval: Option<[f64; 2]>,
    /// The two-sided Mann-Whitney p-value, with at least [`MIN_RUNS`] runs a side.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) p_value: Option<f64>,
    /// A change called: p below 0.05 and the interval clear of 1.
    pub(crate) significant: bool,
    /// Whether the runs can tell a change from noise, in words.
    pub(crate) confidence: String,
}

/// A seed's report: its rows as before without kernels (or on the one kernel given), else
/// its rows on each kernel and what changed from the first to each other.
pub(super) fn seed_report(
    e: &'static dyn Experiment,
    size: Size,
    m: &Measured,
    matrices: Vec<String>,
    kernels: &[String],
) -> SeedReport {
    let judged = |m: &Measured| -> Vec<Row> {
        e.rows(m)
            .into_iter()
            .map(|row| super::disturbances::with_disturbances(row, m))
            .collect()
    };
    let mut report = SeedReport {
        seed: e.seed(),
        title: e.title(),
        era: e.era(size),
        matrices,
        rows: Vec::new(),
        by_kernel: Vec::new(),
        changes: Vec::new(),
    };
    match kernels {
        [] => report.rows = judged(m),
        [one] => report.rows = judged(&split(m, one, kernels)),
        [first, others @ ..] => {
            let reference = split(m, first, kernels);
            let rows_a = judged(&reference);
            for k in others {
                let mk = split(m, k, kernels);
                let rows_b = judged(&mk);
                for (a, b) in rows_a.iter().zip(&rows_b) {
                    report
                        .changes
                        .push(change(e, size, (first, a, &reference), (k, b, &mk)));
                }
                report.by_kernel.push(KernelRows {
                    kernel: k.clone(),
                    rows: rows_b,
                });
            }
            report.by_kernel.insert(
                0,
                KernelRows {
                    kernel: first.clone(),
                    rows: rows_a,
                },
            );
        }
    }
    report
}

/// The cell (group and axes) of the run `id` of `m`, and the run.
fn cell_of(m: &Measured, id: i64) -> Option<(&CellRuns, &Run)> {
    m.cells
        .iter()
        .find_map(|c| c.runs.iter().find(|r| r.id == Some(id)).map(|r| (c, r)))
}

/// The values of `figure` over the runs of cell (`group`, `axes`) of `m`.
fn values(m: &Measured, group: &str, axes: &[(String, String)], figure: &Figure) -> Vec<f64> {
    m.cells
        .iter()
        .filter(|c| c.group == group && c.axes == axes)
        .flat_map(|c| &c.runs)
        .filter_map(|r| run_figures("", &r.result).ok()?.values.get(figure).copied())
        .filter(|v| v.is_finite())
        .collect()
}

/// One finding on reference kernel A against kernel B: (kernel, row, its runs) each.
fn change(e: &dyn Experiment, size: Size, a: (&str, &Row, &Measured), b: (&str, &Row, &Measured)) -> Change {
    let (ka, ra, ma) = a;
    let (kb, rb, mb) = b;
    let (same_verdict, verdicts) = compare_verdicts(ka, ra.judgement.verdict, kb, rb.judgement.verdict);
    let mut out = Change {
        claim: ra.claim.clone(),
        reference: ka.to_string(),
        kernel: kb.to_string(),
        same_verdict,
        verdicts,
        figure: None,
        unit: String::new(),
        runs_reference: 0,
        runs_kernel: 0,
        median_reference: None,
        median_kernel: None,
        ratio: None,
        interval: None,
        p_value: None,
        significant: false,
        confidence: "no run on one of the kernels: nothing to compare".into(),
    };
    // The finding's own figure, where its seed names one.
    if let Some(f) = ra.figure.as_ref().or(rb.figure.as_ref()) {
        let values = |row: &Row| row.figure.as_ref().map_or_else(Vec::new, |f| f.values.clone());
        out.figure = Some(f.name.clone());
        out.unit = f.unit.to_string();
        weigh(&mut out, &values(ra), &values(rb), |v| v);
        return out;
    }
    // Else the group's main figure on the finding's first configuration, on whichever
    // kernel has it.
    let found = ra
        .runs
        .first()
        .and_then(|id| cell_of(ma, *id))
        .or_else(|| rb.runs.first().and_then(|id| cell_of(mb, *id)));
    let Some((cell, run)) = found else {
        return out;
    };
    let (group, axes) = (cell.group, cell.axes.clone());
    let named = e
        .groups(size)
        .into_iter()
        .find(|g| g.name == group)
        .and_then(|g| g.figures.first().and_then(|f| Figure::parse(f)));
    let Some(mut figure) = named.or_else(|| run_figures("", &run.result).ok()?.main_figure()) else {
        return out;
    };
    // A call's rate is taken over the run's whole duration, its setup included, which a
    // guest's CPU slows under TCG (a datasync run's fdatasync.ops/s fell 17x where its
    // calls took 1.9x as long): the calls' median latency stands for it.
    if figure.metric == Metric::OpsPerSec {
        figure = Figure::new(&figure.subject, Metric::P50);
    }
    let (va, vb) = (values(ma, group, &axes, &figure), values(mb, group, &axes, &figure));
    let shown: Vec<String> = axes.iter().map(|(k, v)| format!("{k}={v}")).collect();
    out.figure = Some(match shown.is_empty() {
        true => figure.to_string(),
        false => format!("{figure} ({})", shown.join(" ")),
    });
    out.unit = figure.unit().to_string();
    weigh(&mut out, &va, &vb, |v| figure.in_unit(v));
    out
}

/// The medians of `va` (reference) and `vb` in the figure's unit, their ratio with its
/// interval and p, and whether that calls a change, into `out`.
fn weigh(out: &mut Change, va: &[f64], vb: &[f64], in_unit: impl Fn(f64) -> f64) {
    out.runs_reference = va.len();
    out.runs_kernel = vb.len();
    out.median_reference = stats::median(va).map(&in_unit);
    out.median_kernel = stats::median(vb).map(&in_unit);
    out.ratio = match (out.median_reference, out.median_kernel) {
        (Some(x), Some(y)) if x > 0.0 => Some(y / x),
        _ => None,
    };
    if va.len() >= 2 && vb.len() >= 2 {
        out.interval = Estimate::of(va, vb).map(|e| [e.low, e.high]);
    }
    let alpha = Settings::default().alpha;
    out.confidence = match (va.len(), vb.len()) {
        (0, _) | (_, 0) => "the figure is missing on one of the kernels: nothing to compare".into(),
        (1, 1) => "one run a side: cannot tell a change from noise".into(),
        (x, y) if x < MIN_RUNS || y < MIN_RUNS => {
            format!("{x} runs against {y}: fewer than {MIN_RUNS} a side cannot tell a change from noise")
        }
        (x, y) => match stats::mann_whitney_u(va, vb) {
            None => "no test possible on these runs".into(),
            Some(t) => {
                out.p_value = Some(t.p_value);
                let clear_of_one = out.interval.is_some_and(|[low, high]| low > 1.0 || high < 1.0);
                out.significant = t.p_value < alpha && clear_of_one;
                let floor = stats::smallest_p_value(x, y);
                if out.significant {
                    format!(
                        "a significant change (Mann-Whitney p = {}, {x} runs against {y})",
                        p_text(t.p_value)
                    )
                } else if t.p_value < alpha {
                    format!(
                        "no change called: p = {} ({x} runs against {y}) but the interval reaches 1",
                        p_text(t.p_value)
                    )
                } else if floor >= alpha {
                    format!(
                        "{x} runs against {y} cannot reach p < {alpha} (the smallest p possible is {floor:.3}): cannot tell a change from noise"
                    )
                } else {
                    format!(
                        "not significant (Mann-Whitney p = {:.3}, {x} runs against {y}): no change beyond noise shown",
                        t.p_value
                    )
                }
            }
        },
    };
}

/// `0.029`, or `<0.001`.
fn p_text(p: f64) -> String {
    if p < 0.001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

/// Whether the verdicts agree, and in words: `the same: reproduced` or `reproduced on host,
/// partly on 6.1.0-56-amd64`.
fn compare_verdicts(ka: &str, a: Verdict, kb: &str, b: Verdict) -> (bool, String) {
    if a == b {
        (true, format!("the same: {a}"))
    } else {
        (false, format!("{a} on {ka}, {b} on {kb}"))
    }
}

#[cfg(test)]
#[path = "kernels_tests.rs"]
mod tests;
