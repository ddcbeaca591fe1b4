//! The statistics behind `fsynclab compare`: medians, a bootstrap interval for the ratio of
//! two medians, a rank test, and the Benjamini–Hochberg adjustment for many comparisons.
//!
//! The unit is a run, never a call: consecutive fsyncs share journal commits and writeback,
//! so the calls of one run are not independent draws and a per-call test would find
//! "significant" differences between two runs of the same configuration. Every function
//! here therefore takes one value per run, a handful at a time, and uses methods that
//! assume nothing about their distribution (rank tests, the bootstrap).
//!
//! Each function names the method it follows; `tests` checks them against values computed
//! with SciPy.

mod adjust;
mod bootstrap;
mod rank;

pub(crate) use crate::rng::SplitMix64;
pub use adjust::benjamini_hochberg;
pub use bootstrap::{ratio_of_medians, Bootstrap, RatioEstimate};
pub use rank::{mann_whitney_u, normal_sf, smallest_p_value, RankMethod, RankTest, EXACT_RANK_LIMIT};

/// The median: the middle value, or the mean of the two middle values of an even count
/// (Hyndman & Fan 1996, definition 7 at p = 0.5). `None` for no values or a NaN.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| v.is_nan()) {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    Some(median_of_sorted(&v))
}

/// The sample standard deviation relative to the mean (LKP's `%stddev`, as a fraction): how
/// far runs of one configuration spread. `None` for fewer than two values or a mean that is
/// not positive.
pub fn relative_stddev(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if mean.is_nan() || mean <= 0.0 {
        return None;
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some(var.sqrt() / mean)
}

pub(crate) fn median_of_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Quantile `q` of sorted values by linear interpolation between order statistics
/// (Hyndman & Fan 1996, definition 7; NumPy's default).
pub(crate) fn quantile_of_sorted(v: &[f64], q: f64) -> f64 {
    let h = (v.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(v.len() - 1);
    v[lo] + (h - lo as f64) * (v[hi] - v[lo])
}

#[cfg(test)]
pub(crate) mod tests_support {
    /// Whether `got` is within a relative `rel` of `want`.
    pub(crate) fn close(got: f64, want: f64, rel: f64) -> bool {
        (got - want).abs() <= rel * want.abs().max(1e-300)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn relative_stddev_of_runs() {
        // [2, 4, 6]: mean 4, sample variance 4, stddev 2: 50%.
        assert_eq!(relative_stddev(&[2.0, 4.0, 6.0]), Some(0.5));
        assert_eq!(relative_stddev(&[5.0, 5.0]), Some(0.0));
        assert_eq!(relative_stddev(&[5.0]), None);
        assert_eq!(relative_stddev(&[0.0, 0.0]), None);
    }
}
