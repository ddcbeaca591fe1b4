//! The in-kernel latency histograms of `fsynclab watch`: every sync call's latency counted in
//! a log-linear bucket (8 per power of two) keyed by process and kind, so that percentiles
//! of all calls need no per-call record in user space and the memory stays bounded however
//! long it watches.
//!
//! Bucket `b` below 8 holds exactly `b` ns. Above, `b = (log - 2) * 8 + sub` where `log` is
//! floor(log2(ns)) and `sub` the next three bits: the bucket spans
//! `[(8 + sub) << (log - 3), (9 + sub) << (log - 3))`, an eighth of its power of two. A
//! percentile is reported as its bucket's middle, within 1/16 (6.25%) of the true value, the
//! error bound of HDR histograms with one significant binary digit beyond three bits.

/// The `latency` map's bucket that counts the calls that returned an error (`FAILED_BUCKET`
/// in watch_records.h); they are counted in their latency's bucket too.
pub(crate) const FAILED_BUCKET: u16 = u16::MAX;

/// The key of the `latency` map (`struct latency_key`).
pub(crate) struct LatencyKey {
    pub(crate) pid: u32,
    pub(crate) kind: u32,
    pub(crate) bucket: u16,
}

impl LatencyKey {
    pub(crate) fn parse(bytes: &[u8]) -> Option<LatencyKey> {
        let pid = u32::from_ne_bytes(bytes.get(0..4)?.try_into().ok()?);
        let kind = u16::from_ne_bytes(bytes.get(4..6)?.try_into().ok()?);
        let bucket = u16::from_ne_bytes(bytes.get(6..8)?.try_into().ok()?);
        Some(LatencyKey {
            pid,
            kind: u32::from(kind),
            bucket,
        })
    }
}

/// The bucket a latency falls in, as the program computes it (`bucket_of`).
#[cfg(test)]
pub(crate) fn bucket_of(ns: u64) -> u16 {
    if ns < 8 {
        return ns as u16;
    }
    let log = 63 - ns.leading_zeros();
    ((log - 2) * 8 + ((ns >> (log - 3)) & 7) as u32) as u16
}

/// The middle of a bucket, in ns.
pub(crate) fn middle_ns(bucket: u16) -> u64 {
    let b = u64::from(bucket);
    if b < 8 {
        return b;
    }
    let log = b / 8 + 2;
    let sub = b % 8;
    let width = 1u64 << (log - 3);
    (8 + sub) * width + width / 2
}

/// Counts per bucket of one process's calls of one kind, and how many of them failed.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Buckets {
    counts: std::collections::BTreeMap<u16, u64>,
    failed: u64,
}

impl Buckets {
    /// `count` calls in `bucket`, or `count` failed calls when it is [`FAILED_BUCKET`].
    pub(crate) fn add(&mut self, bucket: u16, count: u64) {
        if bucket == FAILED_BUCKET {
            self.failed += count;
        } else {
            *self.counts.entry(bucket).or_default() += count;
        }
    }

    pub(crate) fn merge(&mut self, other: &Buckets) {
        for (&b, &n) in &other.counts {
            self.add(b, n);
        }
        self.failed += other.failed;
    }

    /// How many of the calls returned an error.
    pub(crate) fn failed(&self) -> u64 {
        self.failed
    }

    pub(crate) fn count(&self) -> u64 {
        self.counts.values().sum()
    }

    /// The percentiles a result's operation statistics hold, each a bucket's middle (the
    /// mean from the middles too); zeros when empty.
    pub(crate) fn summary(&self) -> crate::measure::LatencySummary {
        let q = |q: f64| self.quantile_ns(q).unwrap_or(0);
        let total = self.count();
        let sum: u128 = self
            .counts
            .iter()
            .map(|(&b, &n)| u128::from(middle_ns(b)) * u128::from(n))
            .sum();
        crate::measure::LatencySummary {
            min: self.counts.keys().next().map_or(0, |&b| middle_ns(b)),
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            p999: q(0.999),
            max: q(1.0),
            mean: if total == 0 {
                0
            } else {
                (sum / u128::from(total)) as u64
            },
        }
    }

    /// The latency below which `q` (0..=1) of the calls fall: the middle of the bucket that
    /// holds the call of rank ceil(q * count) (nearest rank).
    pub(crate) fn quantile_ns(&self, q: f64) -> Option<u64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (&b, &n) in &self.counts {
            seen += n;
            if seen >= rank {
                return Some(middle_ns(b));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_latency_is_reported_within_a_sixteenth_of_itself() {
        for ns in [1u64, 7, 8, 15, 16, 1000, 12_345, 9_999_999, 1 << 40, (1 << 40) + 12345] {
            let m = middle_ns(bucket_of(ns));
            let err = (m as f64 - ns as f64).abs() / ns as f64;
            assert!(err <= 1.0 / 16.0, "{ns} -> {m}");
        }
    }

    #[test]
    fn failed_calls_are_counted_apart_from_the_latency_buckets() {
        let mut a = Buckets::default();
        a.add(bucket_of(1_000_000), 3);
        a.add(FAILED_BUCKET, 1);
        let mut b = Buckets::default();
        b.add(bucket_of(2_000_000), 1);
        b.add(FAILED_BUCKET, 1);
        a.merge(&b);
        assert_eq!((a.count(), a.failed()), (4, 2));
        assert!(
            a.quantile_ns(1.0).unwrap() < 2_200_000,
            "no latency bucket for the failures"
        );
    }

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let mut b = Buckets::default();
        b.add(bucket_of(1_000_000), 99);
        b.add(bucket_of(50_000_000), 1);
        let p50 = b.quantile_ns(0.5).unwrap();
        let p99 = b.quantile_ns(0.99).unwrap();
        let max = b.quantile_ns(1.0).unwrap();
        assert!((940_000..1_070_000).contains(&p50), "{p50}");
        assert_eq!(p99, p50);
        assert!((47_000_000..53_200_000).contains(&max), "{max}");
        assert_eq!(Buckets::default().quantile_ns(0.5), None);
    }
}
