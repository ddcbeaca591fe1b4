//! Comparing configurations: two sets of runs, figure by figure, with a verdict a reader can
//! act on — faster, slower, no difference within ±5%, or why no verdict is possible.
//!
//! - [`figures`]: the run-level figures of a result (ops/s, p50, p99, max, background MB/s)
//! - [`expect`]: `--expect 'fsync.p99<50ms'`, a bound on one figure, met or not
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

//!
//! [`verdict`] holds that rule; [`render`] prints a comparison for a reader.

pub mod expect;
pub mod figures;
mod render;
pub mod stats;
pub mod table;
mod verdict;

pub(crate) use figures::run_figures;
pub use figures::{Direction, Figure, Metric, RunFigures};
pub use render::render_comparison;
use stats::Bootstrap;
use verdict::{decide_all, estimate};
pub use verdict::{FigureComparison, Verdict};

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

#[cfg(test)]
pub(crate) mod test_data {
    use super::*;

    pub(crate) fn runs(values: &[(f64, f64)]) -> Vec<RunFigures> {
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

    /// Five runs on a 5 ms flush: about 200 fsyncs/s, p99 about 6 ms.
    pub(crate) fn flush_5ms() -> Vec<RunFigures> {
        runs(&[
            (200.0, 6e6),
            (204.0, 6.2e6),
            (198.0, 5.9e6),
            (201.0, 6.1e6),
            (199.0, 6.0e6),
        ])
    }

    /// Five runs on a 10 ms flush: half the rate, twice the p99.
    pub(crate) fn flush_10ms() -> Vec<RunFigures> {
        runs(&[
            (101.0, 12e6),
            (99.0, 12.3e6),
            (100.0, 11.8e6),
            (102.0, 12.1e6),
            (98.0, 12.2e6),
        ])
    }

    pub(crate) fn verdict_of(c: &[FigureComparison], metric: Metric) -> &Verdict {
        &c.iter().find(|c| c.figure.metric == metric).unwrap().verdict
    }
}

#[cfg(test)]
mod tests {
    use super::test_data::{flush_10ms, flush_5ms, runs, verdict_of};
    use super::*;

    #[test]
    fn a_doubled_flush_time_is_slower_on_every_figure() {
        let a = flush_5ms();
        let b = flush_10ms();
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
        let a = flush_5ms();
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
}
