//! A comparison printed for a reader, as LKP's regression reports read: one line per figure
//! with both medians and how far each side's runs spread (`±` relative standard deviation),
//! the change in percent, the ratio and its interval, the adjusted p-value and the verdict.

use super::{FigureComparison, Verdict};

/// A plain-text table of a comparison, one figure a line: medians with their spread, the
/// change, the ratio with its interval, the adjusted p-value and the verdict.
pub fn render_comparison(label_a: &str, label_b: &str, comparisons: &[FigureComparison]) -> String {
    let mut rows: Vec<[String; 7]> = vec![[
        "figure".into(),
        format!("A: {label_a}"),
        format!("B: {label_b}"),
        "change".into(),
        "B/A [95% CI]".into(),
        "p (BH)".into(),
        "verdict".into(),
    ]];
    for c in comparisons {
        let med = |m: Option<f64>, spread: Option<f64>, n: usize| match m {
            Some(v) => {
                let spread = spread.map_or(String::new(), |s| format!(" ±{:.0}%", s * 100.0));
                format!("{} {}{spread} (n={n})", c.figure.format(v), c.figure.unit())
            }
            None => "-".into(),
        };
        let change = c.change_percent().map_or("-".into(), |p| format!("{p:+.1}%"));
        let ratio = c
            .ratio
            .map_or("-".into(), |r| format!("{:.3} [{:.3}, {:.3}]", r.ratio, r.low, r.high));
        let p = c.p_adjusted.map_or("-".into(), |p| format!("{p:.4}"));
        rows.push([
            c.figure.to_string(),
            med(c.median_a, c.spread_a, c.runs_a),
            med(c.median_b, c.spread_b, c.runs_b),
            change,
            ratio,
            p,
            match &c.verdict {
                // The reason is the same for every figure: said once, under the table.
                Verdict::NoVerdict(_) => "no verdict".to_string(),
                v => v.to_string(),
            },
        ]);
    }
    let mut widths = [0usize; 7];
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for r in &rows {
        let mut line = String::new();
        for (i, (cell, w)) in r.iter().zip(widths).enumerate() {
            if i == 6 {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  "));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(&format!(
        "medians of run-level figures, ± the runs' standard deviation relative to their mean; change = B's median against A's; B/A = ratio of medians, 95% bootstrap percentile interval; p = two-sided Mann-Whitney U, Benjamini-Hochberg adjusted over the {} figures; no difference = within ±5%\n",
        comparisons.len()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::super::test_data::{flush_10ms, flush_5ms};
    use super::super::{compare_sets, Settings};
    use super::*;

    #[test]
    fn rendered_comparison_names_each_figure_and_verdict() {
        let a = flush_5ms();
        let b = flush_10ms();
        let text = render_comparison("flush=5ms", "flush=10ms", &compare_sets(&a, &b, &Settings::default()));
        let want = "\
figure       A: flush=5ms         B: flush=10ms        change   B/A [95% CI]          p (BH)  verdict
fsync.ops/s  200 ops/s ±1% (n=5)  100 ops/s ±2% (n=5)  -50.0%   0.500 [0.488, 0.510]  0.0079  slower
fsync.p99    6.00 ms ±2% (n=5)    12.1 ms ±2% (n=5)    +101.7%  2.017 [1.935, 2.051]  0.0079  slower
";
        assert!(text.starts_with(want), "{text}");
    }
}
