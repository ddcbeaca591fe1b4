//! How sure a verdict is, and *inconclusive* when the runs cannot decide (issue 26, item 4).
//!
//! Two `--quick` runs of the same build on the same machine gave 3 of 13 verdicts the other
//! way round: a verdict read off one run's figure against a fixed noise band is a coin
//! where the runs spread. Every rule of [`super::verdict`] is therefore applied to the whole
//! spread of what the runs allow, not to the median alone:
//!
//! - **a ratio of two configurations** (deadline KB/s / bfq KB/s): the ratio of the medians
//!   with its bootstrap 95% interval and the two-sided Mann–Whitney p, as `fsynclab compare`
//!   computes them ([`crate::compare::stats`]). The verdict is decided when the rule gives
//!   the same verdict at both ends of the interval, and, when that verdict says the two
//!   configurations differ (the interval lies outside 1 ± the noise band), the p-value is
//!   below [`ALPHA`] (adjusted by Benjamini–Hochberg over the comparisons a row makes
//!   together, [`adjust`]). With fewer than two runs a side there is no interval: such a
//!   ratio cannot be told from run-to-run noise.
//! - **a threshold** ("a stall of seconds": at least 1 s): decided when every run (at least
//!   two) is on the same side of every bar, inconclusive when the runs straddle one.
//!
//! Otherwise the verdict is [`Verdict::Inconclusive`], with why and what the median alone
//! would have said. Every judgement carries its [`Confidence`]: the runs it rests on, the
//! interval, p.

use super::verdict::{Confidence, Judgement, Verdict};
use crate::compare::stats::{self, Bootstrap};

/// Significance level of a difference, as `fsynclab compare` uses.
pub(crate) const ALPHA: f64 = 0.05;

/// `median(b) / median(a)` of two sets of runs, with its interval and p.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Estimate {
    pub(crate) runs_a: usize,
    pub(crate) runs_b: usize,
    pub(crate) ratio: f64,
    pub(crate) low: f64,
    pub(crate) high: f64,
    pub(crate) p: Option<f64>,
    /// Comparisons `p` was adjusted over (1: none).
    pub(crate) family: usize,
}

impl Estimate {
    /// `b` against the reference `a`: None when a side is empty or a's median is not
    /// positive.
    pub(crate) fn of(a: &[f64], b: &[f64]) -> Option<Estimate> {
        let r = stats::ratio_of_medians(a, b, &Bootstrap::default())?;
        let p = if a.len() >= 2 && b.len() >= 2 {
            stats::mann_whitney_u(a, b).map(|t| t.p_value)
        } else {
            None
        };
        Some(Estimate {
            runs_a: a.len(),
            runs_b: b.len(),
            ratio: r.ratio,
            low: r.low,
            high: r.high,
            p,
            family: 1,
        })
    }

    fn runs_words(&self) -> String {
        match (self.runs_a, self.runs_b) {
            (1, 1) => "1 run a side".into(),
            (a, b) if a == b => format!("{a} runs a side"),
            (a, b) => format!("{b} runs against {a}"),
        }
    }

    pub(crate) fn confidence(&self) -> Confidence {
        let has_interval = self.runs_a >= 2 && self.runs_b >= 2;
        let mut shown = format!("{}, {:.2}x", self.runs_words(), self.ratio);
        if has_interval {
            shown += &format!(" [{:.2}, {:.2}]", self.low, self.high);
        }
        if let Some(p) = self.p {
            shown += &format!(", p={}", p_text(p));
            if self.family > 1 {
                shown += &format!(" (adjusted over {})", self.family);
            }
        }
        Confidence {
            runs: vec![self.runs_a, self.runs_b],
            ratio: Some(rounded(self.ratio)),
            interval: has_interval.then_some([rounded(self.low), rounded(self.high)]),
            p: self.p.map(rounded),
            family: (self.family > 1).then_some(self.family),
            shown,
        }
    }
}

/// To 4 decimals, as the JSON rows carry it: a figure read back from the store may differ
/// from the one measured in its last bits, and `--show` must print the same rows.
fn rounded(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

fn p_text(p: f64) -> String {
    if p < 0.001 {
        "<0.001".into()
    } else {
        format!("{p:.3}")
    }
}

/// Adjusts the p-values of comparisons made together (one row's) by Benjamini–Hochberg.
pub(crate) fn adjust(family: &mut [Estimate]) {
    let tested: Vec<usize> = (0..family.len()).filter(|&i| family[i].p.is_some()).collect();
    let p: Vec<f64> = tested.iter().filter_map(|&i| family[i].p).collect();
    let n = tested.len();
    for (&i, adjusted) in tested.iter().zip(stats::benjamini_hochberg(&p)) {
        family[i].p = Some(adjusted);
        family[i].family = n;
    }
}

/// Why an estimate cannot decide `rule`'s verdict, or None when it can. `noise` is the
/// band around 1 within which no difference is claimed (and so no p needed).
pub(crate) fn undecided(e: &Estimate, rule: impl Fn(f64) -> Judgement, noise: f64) -> Option<String> {
    if e.runs_a < 2 || e.runs_b < 2 {
        return Some(format!(
            "{}: a ratio of {:.2}x cannot be told from run-to-run noise (an interval needs 2 runs a side, and p < {ALPHA} needs 4)",
            e.runs_words(),
            e.ratio
        ));
    }
    let (at_low, at_high) = (rule(e.low).verdict, rule(e.high).verdict);
    if at_low != at_high {
        return Some(format!(
            "the interval [{:.2}, {:.2}] spans {at_low} and {at_high}",
            e.low, e.high
        ));
    }
    let differ = e.low > 1.0 + noise || e.high < 1.0 - noise;
    if !differ {
        return None;
    }
    let floor = stats::smallest_p_value(e.runs_a, e.runs_b);
    match e.p {
        Some(p) if p < ALPHA => None,
        _ if floor >= ALPHA => Some(format!(
            "{} cannot reach p < {ALPHA} (the smallest p possible is {:.3}): 4 runs a side can",
            e.runs_words(),
            floor
        )),
        Some(p) => Some(format!("p={} is not below {ALPHA}", p_text(p))),
        None => Some("no rank test could be made".into()),
    }
}

/// `rule`'s verdict on an estimate's ratio, decided or inconclusive, with its confidence.
pub(crate) fn decide(e: &Estimate, rule: impl Fn(f64) -> Judgement, noise: f64) -> Judgement {
    let at_median = rule(e.ratio);
    if !at_median.verdict.is_result() {
        return at_median;
    }
    let judgement = match undecided(e, &rule, noise) {
        Some(why) => inconclusive(why, &at_median),
        None => at_median,
    };
    judgement.with_confidence(e.confidence())
}

/// Inconclusive for `why`, saying what the median alone gives.
pub(crate) fn inconclusive(why: String, at_median: &Judgement) -> Judgement {
    Judgement::new(
        Verdict::Inconclusive,
        format!("{why}; the median alone gives {}: {}", at_median.verdict, at_median.why),
    )
}

/// A threshold rule (`at_least`) over every run's figure: the median's verdict, decided when
/// every run (at least two) gives it, inconclusive when they straddle a bar.
pub(crate) fn threshold(values: &[f64], rule: impl Fn(f64) -> Judgement, format: impl Fn(f64) -> String) -> Judgement {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let Some(median) = stats::median(&v) else {
        return rule(f64::NAN);
    };
    let at_median = rule(median);
    let (lowest, highest) = (v[0], v[v.len() - 1]);
    let shown = match v.len() {
        1 => "1 run".to_string(),
        n => format!("{n} runs, {} to {}", format(lowest), format(highest)),
    };
    let why = if v.len() < 2 {
        Some("1 run: one figure cannot show how far the next run's would be".to_string())
    } else {
        let (a, b) = (rule(lowest).verdict, rule(highest).verdict);
        (a != b).then(|| {
            format!(
                "the runs straddle a bar: from {} ({a}) to {} ({b})",
                format(lowest),
                format(highest)
            )
        })
    };
    let judgement = match why {
        Some(why) => inconclusive(why, &at_median),
        None => at_median,
    };
    judgement.with_confidence(Confidence {
        runs: vec![v.len()],
        shown,
        ..Default::default()
    })
}

/// Asserts that `j` is inconclusive, its reason starting with `why` and giving what the
/// median alone would have judged (`median`, e.g. "reproduced: 1.30x").
#[cfg(test)]
pub(super) fn assert_undecided(j: &Judgement, why: &str, median: &str) {
    assert_eq!(j.verdict, Verdict::Inconclusive, "{}", j.why);
    assert!(j.why.starts_with(why), "{}", j.why);
    assert!(j.why.contains(&format!("the median alone gives {median}")), "{}", j.why);
}

#[cfg(test)]
mod tests {
    use super::super::verdict::{at_least, effect, NOISE};
    use super::*;

    fn hifumi(r: f64) -> Judgement {
        effect(1050.83 / 775.45, r, NOISE)
    }

    /// Issue 26, item 4.
    #[test]
    fn one_run_a_side_cannot_tell_a_ratio_from_noise() {
        let e = Estimate::of(&[775.0], &[1007.5]).unwrap();
        let j = decide(&e, hifumi, NOISE);
        assert_undecided(
            &j,
            "1 run a side: a ratio of 1.30x cannot be told from run-to-run noise",
            "reproduced: 1.30x",
        );
        let c = j.confidence.unwrap();
        assert_eq!(c.shown, "1 run a side, 1.30x");
        assert_eq!((c.runs, c.interval, c.p), (vec![1, 1], None, None));
    }

    /// Issue 26, item 4.
    #[test]
    fn a_ratio_whose_interval_spans_the_noise_band_is_inconclusive() {
        let a = [100.0, 102.0, 98.0, 101.0];
        let b = [96.0, 125.0, 104.0, 121.0];
        let e = Estimate::of(&a, &b).unwrap();
        assert!(e.low < 1.0 + NOISE && e.high > 1.0 + NOISE, "{e:?}");
        let j = decide(&e, hifumi, NOISE);
        assert_eq!(j.verdict, Verdict::Inconclusive, "{}", j.why);
        assert!(j.why.starts_with("the interval ["), "{}", j.why);
        assert!(j.why.contains("spans not reproduced and "), "{}", j.why);
    }

    /// Issue 26, item 4: a difference needs p < 0.05, which three runs a side cannot give
    /// however far apart; no difference needs the interval inside the band only.
    #[test]
    fn a_difference_needs_runs_enough_for_its_p_and_no_difference_its_interval() {
        let three = Estimate::of(&[100.0, 101.0, 99.0], &[240.0, 250.0, 245.0]).unwrap();
        let j = decide(&three, hifumi, NOISE);
        assert_eq!(j.verdict, Verdict::Inconclusive, "{}", j.why);
        assert!(
            j.why.starts_with(
                "3 runs a side cannot reach p < 0.05 (the smallest p possible is 0.100): 4 runs a side can"
            ),
            "{}",
            j.why
        );
        let same = Estimate::of(&[100.0, 101.0, 99.0], &[101.0, 100.0, 102.0]).unwrap();
        let j = decide(&same, hifumi, NOISE);
        assert_eq!(j.verdict, Verdict::NotReproduced, "{}", j.why);
        assert!(j.confidence.unwrap().shown.starts_with("3 runs a side, 1.01x ["));
    }

    /// Issue 26, item 4.
    #[test]
    fn runs_far_apart_give_the_verdict_with_its_interval_and_p() {
        let a = [100.0, 101.0, 99.0, 102.0, 98.0];
        let b = [240.0, 250.0, 245.0, 238.0, 252.0];
        let j = decide(&Estimate::of(&a, &b).unwrap(), hifumi, NOISE);
        assert_eq!(j.verdict, Verdict::Reproduced, "{}", j.why);
        let c = j.confidence.unwrap();
        assert!(c.shown.starts_with("5 runs a side, 2.45x ["), "{}", c.shown);
        assert!(c.shown.ends_with("], p=0.008"), "{}", c.shown);
        let [low, high] = c.interval.unwrap();
        assert!(low > 2.3 && high < 2.6 && low <= 2.45 && 2.45 <= high, "{c:?}");
        // The same comparison made with another: p adjusted over both.
        let mut two = [Estimate::of(&a, &b).unwrap(), Estimate::of(&a, &a).unwrap()];
        adjust(&mut two);
        assert_eq!(two[0].family, 2);
        assert!(
            two[0].confidence().shown.ends_with(" (adjusted over 2)"),
            "{:?}",
            two[0]
        );
    }

    /// Issue 26, item 4: seed 000's worst fsync was 10.55 s in one reproduction and 18.26 s
    /// in the other; both are a stall of seconds, and runs on either side of 1 s are not.
    #[test]
    fn runs_that_straddle_a_threshold_are_inconclusive() {
        let secs = |s: f64| format!("{s:.2} s");
        let rule = |v: f64| at_least(v, 1.0, 0.2, "worst fsync", secs);
        let held = threshold(&[10.55, 18.26], rule, secs);
        assert_eq!(held.verdict, Verdict::Reproduced, "{}", held.why);
        assert_eq!(held.confidence.unwrap().shown, "2 runs, 10.55 s to 18.26 s");
        let split = threshold(&[0.8, 1.6, 1.2], rule, secs);
        assert_eq!(split.verdict, Verdict::Inconclusive, "{}", split.why);
        assert!(
            split
                .why
                .starts_with("the runs straddle a bar: from 0.80 s (partly) to 1.60 s (reproduced)"),
            "{}",
            split.why
        );
        let one = threshold(&[6.3], rule, secs);
        assert_eq!(one.verdict, Verdict::Inconclusive, "{}", one.why);
        assert_eq!(threshold(&[], rule, secs).verdict, Verdict::NotMeasured);
    }
}
