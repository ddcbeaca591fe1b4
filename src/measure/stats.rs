//! The few statistics the reports compute over small lists of figures (runs of a table
//! cell, latencies of one sweep): arithmetic mean, median, nearest-rank percentile, a rate.
//! Latency distributions of whole runs come from HDR histograms instead ([`super::histogram`]).

/// The arithmetic mean; 0 for an empty list.
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

/// The median (the mean of the two middle values for an even count); 0 for an empty list.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The nearest-rank percentile `q` (0..=1) of `values`, which it sorts: the smallest value
/// with at least `q * n` values at or below it (the definition sysbench 0.4 uses for its
/// "approx. 95 percentile"). 0 for an empty list.
pub fn nearest_rank(values: &mut [u64], q: f64) -> u64 {
    if values.is_empty() {
        return 0;
    }
    values.sort_unstable();
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

/// The population standard deviation (sysbench's thread fairness divides by n).
pub fn population_stddev(values: &[f64]) -> f64 {
    let m = mean(values);
    mean(&values.iter().map(|v| (v - m).powi(2)).collect::<Vec<_>>()).sqrt()
}

/// `count` per second over `ns` nanoseconds; 0 when no time passed.
pub fn per_second(count: f64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        count / (ns as f64 / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(mean(&[1.0, 2.0]), 1.5);
        assert_eq!(mean(&[]), 0.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(nearest_rank(&mut [5, 1, 4, 2, 3], 0.95), 5);
        assert_eq!(nearest_rank(&mut [5, 1, 4, 2, 3], 0.5), 3);
        assert_eq!(nearest_rank(&mut [], 0.5), 0);
        assert_eq!(population_stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]), 2.0);
        assert_eq!(per_second(10.0, 2_000_000_000), 5.0);
        assert_eq!(per_second(10.0, 0), 0.0);
    }
}
