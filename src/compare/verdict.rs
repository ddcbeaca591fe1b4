//! The verdict on one figure of two sets of runs, by the rule of [`super`]: estimates
//! first, then the family's p-values adjusted together, then each comparison decided.

use std::fmt;

use super::figures::{Direction, Figure};
use super::stats::{self, RankTest, RatioEstimate};
use super::{Settings, MIN_RUNS};

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

impl FigureComparison {
    /// The change of B's median from A's in percent (LKP's `%change`), when A's is positive.
    pub fn change_percent(&self) -> Option<f64> {
        self.ratio.map(|r| (r.ratio - 1.0) * 100.0)
    }
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
    /// Each side's runs' standard deviation relative to their mean (LKP's `%stddev`), as a
    /// fraction; `None` with fewer than two runs.
    pub spread_a: Option<f64>,
    pub spread_b: Option<f64>,
    /// median(B) / median(A) with its bootstrap interval, when both sides have runs.
    pub ratio: Option<RatioEstimate>,
    pub test: Option<RankTest>,
    /// The Benjamini–Hochberg adjusted p-value over the family the comparison was made in.
    pub p_adjusted: Option<f64>,
    pub verdict: Verdict,
}

/// The estimates of one figure before the family's p-values are adjusted.
pub(crate) fn estimate(figure: &Figure, a: &[f64], b: &[f64], settings: &Settings) -> FigureComparison {
    let enough = a.len() >= MIN_RUNS && b.len() >= MIN_RUNS;
    FigureComparison {
        figure: figure.clone(),
        runs_a: a.len(),
        runs_b: b.len(),
        median_a: stats::median(a),
        median_b: stats::median(b),
        spread_a: stats::relative_stddev(a),
        spread_b: stats::relative_stddev(b),
        ratio: stats::ratio_of_medians(a, b, &settings.bootstrap),
        test: if enough { stats::mann_whitney_u(a, b) } else { None },
        p_adjusted: None,
        verdict: Verdict::NoVerdict(String::new()),
    }
}

/// Adjusts the p-values of `family` together and gives each comparison its verdict.
pub(crate) fn decide_all(family: &mut [FigureComparison], settings: &Settings) {
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
