//! Whether a finding still holds: the verdict a row of `fsynclab reproduce` gives, and the
//! rules that turn a published figure and a measured one into it.
//!
//! The rules compare *effects*, not raw figures: a 2010 SATA disk and today's emulated one
//! differ in every absolute number, but "deadline is 5x faster than CFQ" is a ratio that
//! can be measured again. An effect is a ratio oriented so that above 1 is the direction the
//! post claimed; it is judged on a log scale against the published one:
//!
//! - within `noise` of 1 (no difference a single run can tell): *not reproduced*;
//! - against the claimed direction, beyond the noise: *reversed*;
//! - in the claimed direction, at least half the published effect (log scale: a 5x claim
//!   needs 2.2x, a 1.4x claim 1.18x): *reproduced*;
//! - in the claimed direction but smaller: *partly*.
//!
//! A finding whose figure is missing (a run failed, was interrupted, or gave no number) is
//! *not measured*: no result, and not counted as one (issue 24).
//!
//! Thresholds ("a stall of seconds") are judged with [`at_least`]. Every rule returns the
//! verdict with the sentence that says why, so that the table never shows a verdict without
//! its reason. The rules here judge one figure; confidence.rs applies them to the
//! spread of the runs and says *inconclusive* when the runs cannot decide.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What became of a published finding on this kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Verdict {
    /// The effect is there, at least half as large as published.
    Reproduced,
    /// The effect is there, in the claimed direction, but smaller.
    Partly,
    /// No effect beyond what one run differs from another by.
    NotReproduced,
    /// The opposite of the claim, beyond the noise.
    Reversed,
    /// Measured, but the runs cannot decide: their spread covers more than one verdict, or
    /// a difference is not significant (confidence.rs). Not counted as any of the
    /// verdicts above.
    Inconclusive,
    /// Nothing to judge: the figure is missing (a run failed or was interrupted).
    NotMeasured,
}

impl Verdict {
    /// Whether the verdict is a result about the finding (not measured is none).
    pub(crate) fn is_result(self) -> bool {
        self != Verdict::NotMeasured
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Reproduced => "reproduced",
            Verdict::Partly => "partly",
            Verdict::NotReproduced => "not reproduced",
            Verdict::Reversed => "reversed",
            Verdict::Inconclusive => "inconclusive",
            Verdict::NotMeasured => "not measured",
        })
    }
}

/// What a verdict rests on, as the table shows it beside the verdict.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Confidence {
    /// Runs behind each side: the reference then the other for a ratio, one entry for a
    /// threshold.
    pub(crate) runs: Vec<usize>,
    /// The ratio of the medians, for a comparison.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ratio: Option<f64>,
    /// Its bootstrap 95% interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) interval: Option<[f64; 2]>,
    /// The Mann–Whitney p-value (adjusted over `family` comparisons when above 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) family: Option<usize>,
    /// The words shown beside the verdict: `4 runs a side, 2.41x [2.3, 2.5], p=0.029`.
    pub(crate) shown: String,
}

/// A verdict and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Judgement {
    pub(crate) verdict: Verdict,
    pub(crate) why: String,
    /// What the verdict rests on (runs, interval, p); absent when nothing was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) confidence: Option<Confidence>,
}

impl Judgement {
    pub(crate) fn new(verdict: Verdict, why: impl Into<String>) -> Judgement {
        Judgement {
            verdict,
            why: why.into(),
            confidence: None,
        }
    }

    /// The same judgement with what it rests on.
    pub(crate) fn with_confidence(mut self, confidence: Confidence) -> Judgement {
        self.confidence = Some(confidence);
        self
    }

    /// Nothing was measured (a run failed, was interrupted, or its figure is missing).
    pub(crate) fn unmeasured(what: &str) -> Judgement {
        Judgement::new(Verdict::NotMeasured, what)
    }

    /// The same verdict, its reason extended with `more` (the explanation's causes, the
    /// kernel change behind it).
    pub(crate) fn and(mut self, more: &str) -> Judgement {
        if !more.is_empty() {
            self.why = format!("{}; {more}", self.why);
        }
        self
    }
}

/// How far from 1 an effect must be before one run can tell it from noise: runs of one
/// configuration on the emulated disks differ by a few percent (the matrix samples in
/// docs/compare.md), so 10%.
pub(crate) const NOISE: f64 = 0.10;

/// Judges a measured effect against a published one. Both are ratios oriented so that
/// above 1 is the direction the post claimed (`deadline KB/s / CFQ KB/s`); `published`
/// must be above 1. `noise` is the band around 1 that counts as no difference.
pub(crate) fn effect(published: f64, measured: f64, noise: f64) -> Judgement {
    if !(measured.is_finite() && measured > 0.0) {
        return Judgement::unmeasured("the ratio is not a positive number");
    }
    let shown = format!("{measured:.2}x against the published {published:.2}x");
    if (1.0 - noise..=1.0 + noise).contains(&measured) {
        return Judgement::new(
            Verdict::NotReproduced,
            format!("{shown}: within {:.0}% of no difference", noise * 100.0),
        );
    }
    if measured < 1.0 {
        return Judgement::new(Verdict::Reversed, format!("{shown}: the other way round"));
    }
    // Half the published effect on a log scale; a published effect inside the noise band
    // is reached by anything beyond it.
    let half = published.max(1.0).sqrt().max(1.0 + noise);
    if measured >= half {
        Judgement::new(Verdict::Reproduced, shown)
    } else {
        Judgement::new(
            Verdict::Partly,
            format!("{shown}: the same direction, less than half the effect (log scale)"),
        )
    }
}

/// Judges a measured amount against a threshold the claim implies ("a stall of seconds":
/// at least 1 s), with a lower bar below which nothing of it is left: at or above `full`
/// reproduced, at or above `some` partly, below not reproduced. `what` names the figure
/// with its unit, as `format` shows `measured`.
pub(crate) fn at_least(measured: f64, full: f64, some: f64, what: &str, format: impl Fn(f64) -> String) -> Judgement {
    if !measured.is_finite() {
        return Judgement::unmeasured(what);
    }
    let (verdict, relation) = if measured >= full {
        (Verdict::Reproduced, format!("at least {}", format(full)))
    } else if measured >= some {
        (
            Verdict::Partly,
            format!("below {} but at least {}", format(full), format(some)),
        )
    } else {
        (Verdict::NotReproduced, format!("below {}", format(some)))
    };
    Judgement::new(verdict, format!("{what} {} is {relation}", format(measured)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    /// Issue 20.
    fn an_effect_at_least_half_the_published_one_is_reproduced() {
        // Seed 001's SAN: deadline 35611 KB/s against CFQ 6725 KB/s, 5.30x.
        let published = 35611.0 / 6725.0;
        assert_eq!(effect(published, 5.0, NOISE).verdict, Verdict::Reproduced);
        assert_eq!(effect(published, 2.4, NOISE).verdict, Verdict::Reproduced);
        let partly = effect(published, 2.0, NOISE);
        assert_eq!(partly.verdict, Verdict::Partly);
        assert!(
            partly.why.starts_with("2.00x against the published 5.30x"),
            "{}",
            partly.why
        );
        // Larger than published is still the finding.
        assert_eq!(effect(published, 9.0, NOISE).verdict, Verdict::Reproduced);
    }

    #[test]
    /// Issue 20.
    fn no_difference_is_not_reproduced_and_the_opposite_is_reversed() {
        let none = effect(1.355, 1.04, NOISE);
        assert_eq!(none.verdict, Verdict::NotReproduced);
        assert!(none.why.contains("within 10% of no difference"), "{}", none.why);
        let reversed = effect(1.355, 0.7, NOISE);
        assert_eq!(reversed.verdict, Verdict::Reversed);
        assert!(reversed.why.contains("the other way round"), "{}", reversed.why);
        // Hifumi's 264 s -> 253 s is 1.04x, inside the noise band: anything clearly faster
        // reproduces it.
        assert_eq!(effect(264.0 / 253.0, 1.2, NOISE).verdict, Verdict::Reproduced);
    }

    #[test]
    /// Issue 20.
    fn a_ratio_that_is_not_a_number_is_not_measured() {
        for bad in [f64::NAN, f64::INFINITY, 0.0, -1.0] {
            let j = effect(2.0, bad, NOISE);
            assert_eq!(j.verdict, Verdict::NotMeasured);
            assert_eq!(j.why, "the ratio is not a positive number");
        }
    }

    #[test]
    /// Issue 20.
    fn thresholds_say_which_bar_was_reached() {
        let secs = |v: f64| format!("{v:.1} s");
        let j = at_least(6.3, 1.0, 0.2, "worst fsync", secs);
        assert_eq!(j.verdict, Verdict::Reproduced);
        assert_eq!(j.why, "worst fsync 6.3 s is at least 1.0 s");
        assert_eq!(at_least(0.5, 1.0, 0.2, "worst fsync", secs).verdict, Verdict::Partly);
        let no = at_least(0.09, 1.0, 0.2, "worst write", secs);
        assert_eq!(no.verdict, Verdict::NotReproduced);
        assert_eq!(no.why, "worst write 0.1 s is below 0.2 s");
        assert_eq!(at_least(f64::NAN, 1.0, 0.2, "x", secs).verdict, Verdict::NotMeasured);
    }

    /// Issue 24, item 7: after Ctrl-C, a finding with no figure said "NOT REPRODUCED: not
    /// measured" and was counted as not reproduced. Not measured is its own verdict, and not
    /// a result.
    #[test]
    fn a_finding_without_a_figure_is_not_measured_and_no_result() {
        let j = Judgement::unmeasured("no run");
        assert_eq!(j.verdict, Verdict::NotMeasured);
        assert_eq!(j.why, "no run");
        assert!(!j.verdict.is_result());
        assert_eq!(Verdict::NotMeasured.to_string(), "not measured");
        assert_eq!(
            serde_json::to_string(&Verdict::NotMeasured).unwrap(),
            "\"not-measured\""
        );
        for v in [
            Verdict::Reproduced,
            Verdict::Partly,
            Verdict::NotReproduced,
            Verdict::Reversed,
        ] {
            assert!(v.is_result(), "{v}");
        }
    }

    #[test]
    /// Issue 20.
    fn reasons_are_extended_not_replaced() {
        let j = Judgement::new(Verdict::Partly, "1.3x")
            .and("fsync waited on jbd2")
            .and("");
        assert_eq!(j.why, "1.3x; fsync waited on jbd2");
        assert_eq!(Verdict::NotReproduced.to_string(), "not reproduced");
        assert_eq!(
            serde_json::to_string(&Verdict::NotReproduced).unwrap(),
            "\"not-reproduced\""
        );
    }
}
