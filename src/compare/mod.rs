//! Comparing configurations: two sets of runs, figure by figure, with a verdict a reader can
//! act on — faster, slower, no difference within ±5%, or why no verdict is possible.
//!
//! - [`figures`]: the run-level figures of a result (ops/s, p50, p99, max, background MB/s)
//! - [`stats`]: medians, the bootstrap interval of a ratio, Mann–Whitney U, Benjamini–Hochberg
//! - [`table`]: a matrix of configurations as seed 002 showed it, best per row in bold
//!
//! The decision, for one figure of sets A (the reference) and B:
//! 1. fewer than [`MIN_RUNS`] runs on a side: no verdict, and the reason;
//! 2. the ratio r = median(B) / median(A), its bootstrap 95% interval, and the two-sided
//!    Mann–Whitney p-value, adjusted by Benjamini–Hochberg over every figure compared at once
//!    (one `compare` of many figures, or every cell of a matrix: many looks, one family);
//! 3. r within the ±5% band: no difference (a real but smaller difference is not one a
//!    reader should act on); outside it and adjusted p < α = 0.05: B is faster or slower,
//!    as the figure's direction says; outside it but not significant: inconclusive, with
//!    the smallest p-value those run counts can reach when that is what stands in the way.

pub mod figures;
pub mod stats;
pub mod table;

use std::fmt;

pub use figures::{run_figures, Direction, Figure, Metric, RunFigures};
use stats::{Bootstrap, RankTest, RatioEstimate};

/// Fewer runs than this on a side give no verdict: a rank test of two against anything
/// cannot reach p < 0.05 (with three a side it cannot either, but says so with a number).
pub const MIN_RUNS: usize = 3;

/// How comparisons decide.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// Half-width of the "no difference" band around a ratio of 1: 0.05 for ±5%.
    pub band: f64,
    /// Significance level of the adjusted p-values.
    pub alpha: f64,
    pub bootstrap: Bootstrap,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            band: 0.05,
            alpha: 0.05,
            bootstrap: Bootstrap::default(),
        }
    }
}

/// The verdict on B against the reference A for one figure.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// B is better by more than the band, significantly.
    Faster,
    /// B is worse by more than the band, significantly.
    Slower,
    /// The medians differ by no more than the band.
    NoDifference,
    /// The medians differ by more than the band, but not significantly; the reason says
    /// what would help.
    Inconclusive(String),
    /// Nothing can be said; the reason says why.
    NoVerdict(String),
}

impl Verdict {
    /// Faster or slower: a difference the statistics support.
    pub fn is_significant(&self) -> bool {
        matches!(self, Verdict::Faster | Verdict::Slower)
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Faster => f.write_str("faster"),
            Verdict::Slower => f.write_str("slower"),
            Verdict::NoDifference => f.write_str("no difference"),
            Verdict::Inconclusive(why) => write!(f, "inconclusive: {why}"),
            Verdict::NoVerdict(why) => write!(f, "no verdict: {why}"),
        }
    }
}

/// One figure of A against B.
#[derive(Clone, Debug, PartialEq)]
pub struct FigureComparison {
    pub figure: Figure,
    pub runs_a: usize,
    pub runs_b: usize,
    /// Medians in the figure's stored unit (ns for latencies); `None` without runs.
    pub median_a: Option<f64>,
    pub median_b: Option<f64>,
    /// median(B) / median(A) with its bootstrap interval, when both sides have runs.
    pub ratio: Option<RatioEstimate>,
    pub test: Option<RankTest>,
    /// The Benjamini–Hochberg adjusted p-value over the family the comparison was made in.
    pub p_adjusted: Option<f64>,
    pub verdict: Verdict,
}

/// The estimates of one figure before the family's p-values are adjusted.
fn estimate(figure: &Figure, a: &[f64], b: &[f64], settings: &Settings) -> FigureComparison {
    let enough = a.len() >= MIN_RUNS && b.len() >= MIN_RUNS;
    FigureComparison {
        figure: figure.clone(),
        runs_a: a.len(),
        runs_b: b.len(),
        median_a: stats::median(a),
        median_b: stats::median(b),
        ratio: stats::ratio_of_medians(a, b, &settings.bootstrap),
        test: if enough { stats::mann_whitney_u(a, b) } else { None },
        p_adjusted: None,
        verdict: Verdict::NoVerdict(String::new()),
    }
}

/// Adjusts the p-values of `family` together and gives each comparison its verdict.
fn decide_all(family: &mut [FigureComparison], settings: &Settings) {
    let tested: Vec<usize> = (0..family.len()).filter(|&i| family[i].test.is_some()).collect();
    let p: Vec<f64> = tested
        .iter()
        .filter_map(|&i| family[i].test.map(|t| t.p_value))
        .collect();
    for (&i, adj) in tested.iter().zip(stats::benjamini_hochberg(&p)) {
        family[i].p_adjusted = Some(adj);
    }
    for c in family.iter_mut() {
        c.verdict = decide(c, settings, tested.len());
    }
}

/// The verdict of one comparison of a family of `family` tested comparisons.
fn decide(c: &FigureComparison, settings: &Settings, family: usize) -> Verdict {
    if c.runs_a < MIN_RUNS || c.runs_b < MIN_RUNS {
        return Verdict::NoVerdict(format!(
            "{} runs against {}; at least {MIN_RUNS} a side are needed to tell a difference from run-to-run noise",
            c.runs_a, c.runs_b
        ));
    }
    let (Some(ratio), Some(p)) = (c.ratio, c.p_adjusted) else {
        return Verdict::NoVerdict(format!(
            "the reference median of {} is not positive, so no ratio can be formed",
            c.figure
        ));
    };
    let r = ratio.ratio;
    if (1.0 - settings.band..=1.0 + settings.band).contains(&r) {
        return Verdict::NoDifference;
    }
    if p < settings.alpha {
        let b_higher = r > 1.0;
        let better = match c.figure.direction() {
            Direction::HigherIsBetter => b_higher,
            Direction::LowerIsBetter => !b_higher,
        };
        return if better { Verdict::Faster } else { Verdict::Slower };
    }
    let floor = stats::smallest_p_value(c.runs_a, c.runs_b);
    let why = if floor >= settings.alpha {
        format!(
            "medians differ by {:+.0}%, but {} against {} runs cannot reach p < {}: the smallest p-value possible is {:.3}; run more repetitions",
            (r - 1.0) * 100.0,
            c.runs_a,
            c.runs_b,
            settings.alpha,
            floor
        )
    } else {
        let adjusted = if family > 1 {
            format!(", {p:.3} adjusted for the {family} comparisons made together")
        } else {
            String::new()
        };
        format!(
            "medians differ by {:+.0}%, but not significantly (p = {:.3}{adjusted}); more repetitions may tell",
            (r - 1.0) * 100.0,
            c.test.map_or(p, |t| t.p_value)
        )
    };
    Verdict::Inconclusive(why)
}

/// Compares the runs of `b` against the reference `a`, every figure either side has (in
/// figure order), the p-values adjusted over all of them as one family.
pub fn compare_sets(a: &[RunFigures], b: &[RunFigures], settings: &Settings) -> Vec<FigureComparison> {
    let mut figures: Vec<&Figure> = a.iter().chain(b).flat_map(|r| r.values.keys()).collect();
    figures.sort();
    figures.dedup();
    let side =
        |set: &[RunFigures], f: &Figure| -> Vec<f64> { set.iter().filter_map(|r| r.values.get(f).copied()).collect() };
    let mut family: Vec<FigureComparison> = figures
        .into_iter()
        .map(|f| estimate(f, &side(a, f), &side(b, f), settings))
        .collect();
    decide_all(&mut family, settings);
    family
}

/// Compares many pairs of value sets of one figure as one family (the cells of a matrix
/// against their row's reference): each pair is (reference A, candidate B).
pub fn compare_pairs(figure: &Figure, pairs: &[(Vec<f64>, Vec<f64>)], settings: &Settings) -> Vec<FigureComparison> {
    let mut family: Vec<FigureComparison> = pairs.iter().map(|(a, b)| estimate(figure, a, b, settings)).collect();
    decide_all(&mut family, settings);
    family
}

/// A plain-text table of a comparison, one figure a line: medians, ratio with its interval,
/// the adjusted p-value and the verdict.
pub fn render_comparison(label_a: &str, label_b: &str, comparisons: &[FigureComparison]) -> String {
    let mut rows: Vec<[String; 6]> = vec![[
        "figure".into(),
        format!("A: {label_a}"),
        format!("B: {label_b}"),
        "B/A [95% CI]".into(),
        "p (BH)".into(),
        "verdict".into(),
    ]];
    for c in comparisons {
        let med = |m: Option<f64>, n: usize| match m {
            Some(v) => format!("{} {} (n={n})", c.figure.format(v), c.figure.unit()),
            None => "-".into(),
        };
        let ratio = c
            .ratio
            .map_or("-".into(), |r| format!("{:.3} [{:.3}, {:.3}]", r.ratio, r.low, r.high));
        let p = c.p_adjusted.map_or("-".into(), |p| format!("{p:.4}"));
        rows.push([
            c.figure.to_string(),
            med(c.median_a, c.runs_a),
            med(c.median_b, c.runs_b),
            ratio,
            p,
            c.verdict.to_string(),
        ]);
    }
    let mut widths = [0usize; 6];
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for r in &rows {
        let mut line = String::new();
        for (i, (cell, w)) in r.iter().zip(widths).enumerate() {
            if i == 5 {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  "));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(&format!(
        "medians of run-level figures; B/A = ratio of medians, 95% bootstrap percentile interval; p = two-sided Mann-Whitney U, Benjamini-Hochberg adjusted over the {} figures; no difference = within ±5%\n",
        comparisons.len()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(values: &[(f64, f64)]) -> Vec<RunFigures> {
        values
            .iter()
            .enumerate()
            .map(|(i, &(ops, p99))| RunFigures {
                run: format!("r{i}"),
                values: [
                    (Figure::new("fsync", Metric::OpsPerSec), ops),
                    (Figure::new("fsync", Metric::P99), p99),
                ]
                .into_iter()
                .collect(),
            })
            .collect()
    }

    fn verdict_of(c: &[FigureComparison], metric: Metric) -> &Verdict {
        &c.iter().find(|c| c.figure.metric == metric).unwrap().verdict
    }

    #[test]
    fn a_doubled_flush_time_is_slower_on_every_figure() {
        let a = runs(&[
            (200.0, 6e6),
            (204.0, 6.2e6),
            (198.0, 5.9e6),
            (201.0, 6.1e6),
            (199.0, 6.0e6),
        ]);
        let b = runs(&[
            (101.0, 12e6),
            (99.0, 12.3e6),
            (100.0, 11.8e6),
            (102.0, 12.1e6),
            (98.0, 12.2e6),
        ]);
        let c = compare_sets(&a, &b, &Settings::default());
        assert_eq!(verdict_of(&c, Metric::OpsPerSec), &Verdict::Slower, "fewer ops/s");
        assert_eq!(verdict_of(&c, Metric::P99), &Verdict::Slower, "higher p99");
        let ops = &c[0];
        assert!((ops.ratio.unwrap().ratio - 0.5).abs() < 0.01);
        // Both figures at the smallest p of 5 against 5, adjusted over 2: unchanged.
        assert!((ops.p_adjusted.unwrap() - 2.0 / 252.0).abs() < 1e-12);
        // And the other way round, faster.
        let c = compare_sets(&b, &a, &Settings::default());
        assert_eq!(verdict_of(&c, Metric::OpsPerSec), &Verdict::Faster);
        assert_eq!(verdict_of(&c, Metric::P99), &Verdict::Faster);
    }

    #[test]
    fn the_same_configuration_shows_no_difference() {
        let a = runs(&[
            (200.0, 6e6),
            (204.0, 6.2e6),
            (198.0, 5.9e6),
            (201.0, 6.1e6),
            (199.0, 6.0e6),
        ]);
        let b = runs(&[
            (202.0, 6.1e6),
            (197.0, 6.0e6),
            (203.0, 6.2e6),
            (200.0, 5.8e6),
            (199.5, 6.05e6),
        ]);
        let c = compare_sets(&a, &b, &Settings::default());
        assert!(c.iter().all(|c| c.verdict == Verdict::NoDifference), "{c:?}");
    }

    #[test]
    fn three_runs_a_side_cannot_be_significant_and_say_why() {
        let a = runs(&[(200.0, 6e6), (204.0, 6.2e6), (198.0, 5.9e6)]);
        let b = runs(&[(101.0, 12e6), (99.0, 12.3e6), (100.0, 11.8e6)]);
        let c = compare_sets(&a, &b, &Settings::default());
        match verdict_of(&c, Metric::OpsPerSec) {
            Verdict::Inconclusive(why) => assert!(why.contains("smallest p-value possible is 0.100"), "{why}"),
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn a_difference_lost_to_the_adjustment_says_so() {
        // Four runs a side, fully separated on ops/s (p = 2/70 = 0.029), but two figures
        // compared at once: 0.057 after Benjamini-Hochberg.
        let a = runs(&[(200.0, 6e6), (204.0, 6.2e6), (198.0, 5.9e6), (201.0, 6.1e6)]);
        let b = runs(&[(101.0, 6.05e6), (99.0, 6.15e6), (100.0, 5.95e6), (102.0, 6.0e6)]);
        let c = compare_sets(&a, &b, &Settings::default());
        match verdict_of(&c, Metric::OpsPerSec) {
            Verdict::Inconclusive(why) => assert!(
                why.contains("p = 0.029, 0.057 adjusted for the 2 comparisons made together"),
                "{why}"
            ),
            v => panic!("{v:?}"),
        }
        assert_eq!(verdict_of(&c, Metric::P99), &Verdict::NoDifference);
    }

    #[test]
    fn fewer_than_three_runs_give_no_verdict() {
        let a = runs(&[(200.0, 6e6), (204.0, 6.2e6)]);
        let b = runs(&[(101.0, 12e6), (99.0, 12.3e6), (100.0, 11.8e6)]);
        let c = compare_sets(&a, &b, &Settings::default());
        match verdict_of(&c, Metric::P99) {
            Verdict::NoVerdict(why) => assert!(why.contains("2 runs against 3"), "{why}"),
            v => panic!("{v:?}"),
        }
        assert!(
            c[0].median_a.is_some() && c[0].ratio.is_some(),
            "medians are still shown"
        );
    }

    #[test]
    fn rendered_comparison_names_each_figure_and_verdict() {
        let a = runs(&[
            (200.0, 6e6),
            (204.0, 6.2e6),
            (198.0, 5.9e6),
            (201.0, 6.1e6),
            (199.0, 6.0e6),
        ]);
        let b = runs(&[
            (101.0, 12e6),
            (99.0, 12.3e6),
            (100.0, 11.8e6),
            (102.0, 12.1e6),
            (98.0, 12.2e6),
        ]);
        let text = render_comparison("flush=5ms", "flush=10ms", &compare_sets(&a, &b, &Settings::default()));
        let want = "\
figure       A: flush=5ms     B: flush=10ms    B/A [95% CI]          p (BH)  verdict
fsync.ops/s  200 ops/s (n=5)  100 ops/s (n=5)  0.500 [0.488, 0.510]  0.0079  slower
fsync.p99    6.00 ms (n=5)    12.1 ms (n=5)    2.017 [1.935, 2.051]  0.0079  slower
";
        assert!(text.starts_with(want), "{text}");
    }
}
