//! A reproduction on several kernels as a person reads it: each finding's verdict and
//! measured figure on each kernel, side by side, and what changed from the first kernel to
//! each other (the verdicts, the figure's ratio B/A with its interval, and whether the runs
//! can tell that from noise), as text, a markdown table or JSON.

use std::fmt::Write as _;

use anyhow::Result;

use super::kernels::Change;
use super::render::{cell, heading, or_dash, seeds_footer, table_row, ReproduceFormat};
use super::verdict::Verdict;
use super::{Reproduction, SeedReport};
use crate::compare::figures::format_significant;

/// The reproduction in `format`: side by side with several kernels, else as [`super::render`]
/// renders it.
pub(super) fn render(r: &Reproduction, format: ReproduceFormat) -> Result<String> {
    if r.kernels.len() < 2 {
        return super::render::render(r, format);
    }
    Ok(match format {
        ReproduceFormat::Text => text(r),
        ReproduceFormat::Markdown => markdown(r),
        ReproduceFormat::Json => serde_json::to_string_pretty(r)? + "\n",
    })
}

/// `fsync.max (scratch=ext4) 10.6 -> 12.1 s, B/A 1.15 [0.98, 1.31]: not significant ...`.
pub(super) fn figure_text(c: &Change) -> String {
    let Some(figure) = &c.figure else {
        return c.confidence.clone();
    };
    let v = |x: Option<f64>| x.map_or("-".to_string(), format_significant);
    let interval = c
        .interval
        .map_or(String::new(), |[low, high]| format!(" [{low:.2}, {high:.2}]"));
    let ratio = c.ratio.map_or(String::new(), |q| format!(", B/A {q:.2}{interval}"));
    format!(
        "{figure} {} -> {} {}{ratio}: {}",
        v(c.median_reference),
        v(c.median_kernel),
        c.unit,
        c.confidence
    )
}

/// `reproduced on host, partly on 6.1 (B = 6.1); fsync.max ...`.
pub(super) fn changed_text(c: &Change) -> String {
    format!("{}; {}", c.verdicts, figure_text(c))
}

/// The changes of a seed's finding `i` (one for each kernel after the first).
fn changes_of(s: &SeedReport, i: usize) -> Vec<&Change> {
    let findings = s.by_kernel.first().map_or(0, |k| k.rows.len());
    s.changes.iter().skip(i).step_by(findings.max(1)).collect()
}

/// `host: 4 reproduced, 3 partly, ...; 6.1.0-56-amd64: ...`.
fn tallies(r: &Reproduction) -> String {
    let mut out = Vec::new();
    for (i, k) in r.kernels.iter().enumerate() {
        let verdicts: Vec<Verdict> = r
            .seeds
            .iter()
            .filter_map(|s| s.by_kernel.get(i))
            .flat_map(|k| &k.rows)
            .map(|row| row.judgement.verdict)
            .collect();
        let t = format!("{k}: {}", super::render::tally_of(&verdicts));
        out.push(t);
    }
    let changed: usize = r
        .seeds
        .iter()
        .flat_map(|s| &s.changes)
        .filter(|c| !c.same_verdict)
        .count();
    let significant: usize = r
        .seeds
        .iter()
        .flat_map(|s| &s.changes)
        .filter(|c| c.significant)
        .count();
    let findings = r.seeds.iter().map(|s| s.changes.len()).sum::<usize>();
    format!(
        "{}; judged differently: {changed} of {findings} findings; a significant change of the main figure: {significant}",
        out.join("; ")
    )
}

fn text(r: &Reproduction) -> String {
    let mut out = format!(
        "{}\nkernels: {} (the first is the reference A)\n",
        heading(r),
        r.kernels.join(", ")
    );
    let width = r.kernels.iter().map(String::len).max().unwrap_or(0).max(9);
    for s in &r.seeds {
        let _ = writeln!(out, "\nseed {}  {}", s.seed, s.title);
        let _ = writeln!(out, "  {:width$}  {}", "era", s.era);
        let _ = writeln!(out, "  {:width$}  {}", "stored as", s.matrices.join(", "));
        let Some(first) = s.by_kernel.first() else {
            continue;
        };
        for (i, row) in first.rows.iter().enumerate() {
            let _ = writeln!(out, "\n  {:width$}  {}", "claim", row.claim);
            let _ = writeln!(
                out,
                "  {:width$}  {} [{}]",
                "published",
                row.published,
                row.sources.join("; ")
            );
            for k in &s.by_kernel {
                let Some(row) = k.rows.get(i) else {
                    continue;
                };
                let _ = writeln!(
                    out,
                    "  {:width$}  {}: {}; {}",
                    k.kernel,
                    row.judgement.verdict.to_string().to_uppercase(),
                    or_dash(&row.measured),
                    row.judgement.why
                );
            }
            for c in changes_of(s, i) {
                let _ = writeln!(out, "  {:width$}  {}", "changed", changed_text(c));
            }
        }
    }
    let _ = writeln!(out, "\nverdicts: {}", tallies(r));
    out
}

fn markdown(r: &Reproduction) -> String {
    let mut out = format!("**{}**\n\n", cell(&heading(r)));
    let kernels: Vec<String> = r.kernels.iter().map(|k| cell(k)).collect();
    let _ = writeln!(
        out,
        "| seed | claim | published | {} | what changed |",
        kernels.join(" | ")
    );
    let _ = writeln!(out, "|---|---|---|{}---|", "---|".repeat(kernels.len()));
    for s in &r.seeds {
        let Some(first) = s.by_kernel.first() else {
            continue;
        };
        for (i, row) in first.rows.iter().enumerate() {
            let sides: Vec<String> = s
                .by_kernel
                .iter()
                .map(|k| match k.rows.get(i) {
                    Some(row) => format!("**{}**: {}", row.judgement.verdict, cell(or_dash(&row.measured))),
                    None => "-".into(),
                })
                .collect();
            let changed: Vec<String> = changes_of(s, i).iter().map(|c| cell(&changed_text(c))).collect();
            let first = [s.seed.to_string(), cell(&row.claim), cell(&row.published)];
            table_row(&mut out, first, sides.into_iter().chain([changed.join("<br>")]));
        }
    }
    seeds_footer(&mut out, r);
    let _ = writeln!(out, "\nVerdicts: {}.", tallies(r));
    out
}
