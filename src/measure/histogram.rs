//! Latency distributions in HDR histograms (Gil Tene's HdrHistogram, via the `hdrhistogram`
//! crate), with exact minimum, maximum and mean kept beside them.
//!
//! Error bound: three significant digits, so every percentile is within 0.1% of the true
//! nearest-rank value. The range is 1 ns to 1 hour; longer calls are clamped to an hour
//! (and still reported exactly as the maximum).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

const SIGNIFICANT_DIGITS: u8 = 3;
const MAX_TRACKABLE_NS: u64 = 3_600_000_000_000;

/// Percentiles and moments of one kind of call, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub min: u64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    pub mean: u64,
}

#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
    min: u64,
    max: u64,
    sum: u128,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    pub fn new() -> LatencyHistogram {
        LatencyHistogram {
            hist: Histogram::new_with_bounds(1, MAX_TRACKABLE_NS, SIGNIFICANT_DIGITS).expect("valid bounds"),
            min: u64::MAX,
            max: 0,
            sum: 0,
        }
    }

    #[inline]
    pub fn record(&mut self, latency_ns: u64) {
        self.hist.saturating_record(latency_ns.clamp(1, MAX_TRACKABLE_NS));
        self.min = self.min.min(latency_ns);
        self.max = self.max.max(latency_ns);
        self.sum += latency_ns as u128;
    }

    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// Adds every value of `other` (a histogram kept by another thread).
    pub fn merge(&mut self, other: &LatencyHistogram) {
        if other.count() == 0 {
            return;
        }
        // Same bounds and precision on both sides, so adding cannot fail.
        let _ = self.hist.add(&other.hist);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
    }

    /// The value at `quantile` (0.0..=1.0), nearest rank, within the histogram's error bound.
    pub fn quantile(&self, quantile: f64) -> u64 {
        if self.count() == 0 {
            return 0;
        }
        // HDR reports the highest value equivalent to the bucket; clamp to what was seen.
        self.hist.value_at_quantile(quantile).clamp(self.min, self.max)
    }

    pub fn summary(&self) -> LatencySummary {
        let n = self.count();
        if n == 0 {
            return LatencySummary::default();
        }
        LatencySummary {
            min: self.min,
            p50: self.quantile(0.50),
            p90: self.quantile(0.90),
            p99: self.quantile(0.99),
            p999: self.quantile(0.999),
            max: self.max,
            mean: (self.sum / n as u128) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nearest-rank percentile of a sorted slice: the smallest value with at least q*n values
    /// at or below it.
    fn nearest_rank(sorted: &[u64], q: f64) -> u64 {
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    fn within_bound(got: u64, want: u64) -> bool {
        (got as f64 - want as f64).abs() <= want as f64 * 0.001 + 1.0
    }

    #[test]
    fn percentiles_match_a_sorted_reference() {
        // A skewed, deterministic spread from 1 us to ~10 s, like fsync latencies behind writeback.
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut values = Vec::new();
        let mut h = LatencyHistogram::new();
        for _ in 0..100_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let exp = (state % 70) as f64 / 10.0; // 10^0 .. 10^7 us
            let v = (10f64.powf(exp) * 1000.0) as u64 + state % 1000;
            values.push(v);
            h.record(v);
        }
        values.sort_unstable();
        for q in [0.5, 0.9, 0.99, 0.999] {
            let (got, want) = (h.quantile(q), nearest_rank(&values, q));
            assert!(within_bound(got, want), "q={q}: hdr {got} vs sorted {want}");
        }
        let s = h.summary();
        assert_eq!(s.min, values[0]);
        assert_eq!(s.max, *values.last().unwrap());
        let mean = values.iter().map(|v| *v as u128).sum::<u128>() / values.len() as u128;
        assert_eq!(s.mean as u128, mean);
    }

    #[test]
    fn small_samples_are_exact_at_the_ends() {
        let mut h = LatencyHistogram::new();
        for v in [2_014_200_000u64, 900_000, 2_604_600_000] {
            h.record(v);
        }
        let s = h.summary();
        assert_eq!(s.min, 900_000);
        assert_eq!(s.max, 2_604_600_000);
        assert!(within_bound(s.p50, 2_014_200_000));
        assert!(within_bound(s.p999, 2_604_600_000));
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let (mut a, mut b, mut all) = (
            LatencyHistogram::new(),
            LatencyHistogram::new(),
            LatencyHistogram::new(),
        );
        for v in 1..1000u64 {
            let h = if v % 3 == 0 { &mut a } else { &mut b };
            h.record(v * 997);
            all.record(v * 997);
        }
        a.merge(&b);
        assert_eq!(a.summary(), all.summary());
    }

    #[test]
    fn empty_is_zero() {
        assert_eq!(LatencyHistogram::new().summary(), LatencySummary::default());
    }
}
