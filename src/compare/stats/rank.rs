//! The rank test: whether the runs of one configuration tend to be larger than those of
//! another, exactly at the sizes users run and by the normal approximation above them.

/// How the p-value of [`mann_whitney_u`] was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankMethod {
    /// The exact distribution of the rank sum over every way to split the pooled runs into
    /// the two sides (with ties, of the mid-ranks actually seen).
    Exact,
    /// The normal approximation with tie and continuity corrections.
    Normal,
}

/// The result of a two-sided Mann–Whitney U test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RankTest {
    /// U of the first sample: the number of pairs (x from `a`, y from `b`) with x > y,
    /// ties counting one half.
    pub u: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    pub method: RankMethod,
}

/// Pooled sizes up to which [`mann_whitney_u`] counts the exact distribution. The count is
/// a subset-sum table of (n1 + n2) × n1 × (largest rank sum) cells: at 60 pooled runs about
/// 6 million additions, well under a millisecond's worth of thought per comparison.
pub const EXACT_RANK_LIMIT: usize = 60;

/// Two-sided Mann–Whitney U test (Mann & Whitney, Ann. Math. Statist. 18, 1947) of whether
/// the runs of `a` tend to be larger or smaller than those of `b`.
///
/// Why this test: it needs no assumption about how run-level figures are distributed (p99
/// and max latencies are anything but normal), it is as good as the t-test on normal data
/// within a few percent of efficiency, and it can be computed exactly at the sizes a user
/// runs (3 to 20 repetitions a side), where a normal approximation is poor.
///
/// Up to [`EXACT_RANK_LIMIT`] pooled runs the p-value is exact: the rank sum of `a` is
/// compared with its distribution over all C(n1+n2, n1) equally likely splits of the pooled
/// ranks, counted by a subset-sum recurrence over the ranks (with tied values the mid-ranks
/// actually seen are used, which makes this the exact permutation test of the rank sum;
/// without ties it equals the classical table of Mann & Whitney). Two-sided p =
/// min(1, 2·min(P(R ≤ r), P(R ≥ r))), as SciPy's `permutation_test` defines it. Above the
/// limit it uses the normal approximation with the tie correction of the variance and a
/// continuity correction of ½ (Lehmann, "Nonparametrics", 1975, §1.4), as SciPy's
/// `mannwhitneyu(method="asymptotic")` does.
///
/// The smallest p-value a test of n1 and n2 runs can give is 2 / C(n1+n2, n1): 0.1 with three
/// runs a side, 0.029 with four, 0.0079 with five (see [`smallest_p_value`]).
///
/// `None` when a side is empty or holds a NaN.
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Option<RankTest> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 || a.iter().chain(b).any(|v| v.is_nan()) {
        return None;
    }
    let n = n1 + n2;
    // Pool with a flag for the side, sort, and give tied values their mean rank. Ranks are
    // kept doubled so mid-ranks (k + ½) stay integers for the exact count.
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&v| (v, true))
        .chain(b.iter().map(|&v| (v, false)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut ranks2 = vec![0u64; n];
    let mut tie_sizes = Vec::new();
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && pooled[j].0 == pooled[i].0 {
            j += 1;
        }
        // Ranks i+1 ..= j share their mean (i+1+j)/2; doubled: i+1+j.
        for r in ranks2.iter_mut().take(j).skip(i) {
            *r = (i + 1 + j) as u64;
        }
        tie_sizes.push((j - i) as f64);
        i = j;
    }
    let r1_2: u64 = pooled.iter().zip(&ranks2).filter(|(p, _)| p.1).map(|(_, r)| r).sum();
    let u = r1_2 as f64 / 2.0 - (n1 * (n1 + 1)) as f64 / 2.0;

    if n <= EXACT_RANK_LIMIT {
        let (le, ge) = rank_sum_tails(&ranks2, n1, r1_2);
        return Some(RankTest {
            u,
            p_value: (2.0 * le.min(ge)).min(1.0),
            method: RankMethod::Exact,
        });
    }

    let (n1f, n2f, nf) = (n1 as f64, n2 as f64, n as f64);
    let mean = n1f * n2f / 2.0;
    let ties: f64 = tie_sizes.iter().map(|t| t * t * t - t).sum();
    let var = n1f * n2f / 12.0 * ((nf + 1.0) - ties / (nf * (nf - 1.0)));
    if var <= 0.0 {
        // Every value equal: nothing separates the sides.
        return Some(RankTest {
            u,
            p_value: 1.0,
            method: RankMethod::Normal,
        });
    }
    let u_big = u.max(n1f * n2f - u);
    let z = (u_big - mean - 0.5) / var.sqrt();
    Some(RankTest {
        u,
        p_value: (2.0 * normal_sf(z)).min(1.0),
        method: RankMethod::Normal,
    })
}

/// P(R ≤ r) and P(R ≥ r) for the sum R of `k` ranks drawn without replacement from
/// `ranks2` (doubled ranks), every subset equally likely. Counts subsets by size and sum
/// with the 0/1-knapsack recurrence count[k][s] += count[k−1][s − rank], in floating point
/// (the counts reach C(60, 30) ≈ 1.2e17; relative error stays near 1e-16).
fn rank_sum_tails(ranks2: &[u64], k: usize, r: u64) -> (f64, f64) {
    let max_sum: u64 = ranks2.iter().sum();
    let width = max_sum as usize + 1;
    // count[j * width + s]: subsets of size j with doubled sum s.
    let mut count = vec![0f64; (k + 1) * width];
    count[0] = 1.0;
    for (seen, &rank) in ranks2.iter().enumerate() {
        let rank = rank as usize;
        for j in (1..=k.min(seen + 1)).rev() {
            let (lower, upper) = count.split_at_mut(j * width);
            let prev = &lower[(j - 1) * width..];
            let cur = &mut upper[..width];
            for s in (rank..width).rev() {
                cur[s] += prev[s - rank];
            }
        }
    }
    let row = &count[k * width..(k + 1) * width];
    let total: f64 = row.iter().sum();
    let r = r as usize;
    let le: f64 = row[..=r.min(width - 1)].iter().sum();
    let ge: f64 = row[r.min(width)..].iter().sum();
    (le / total, ge / total)
}

/// The smallest two-sided p-value any rank test of `n1` against `n2` runs can reach, 2 /
/// C(n1+n2, n1): with three runs a side it is 0.1, so no difference can be shown at 5%.
pub fn smallest_p_value(n1: usize, n2: usize) -> f64 {
    let (n, k) = (n1 + n2, n1.min(n2));
    let mut splits = 1.0f64;
    for i in 0..k {
        splits = splits * (n - i) as f64 / (i + 1) as f64;
    }
    (2.0 / splits).min(1.0)
}

/// The upper tail of the standard normal distribution, P(Z > z) = erfc(z/√2)/2, with erfc
/// by the Chebyshev fit of Press et al., "Numerical Recipes in C", 2nd ed., §6.2 (`erfcc`),
/// whose fractional error is below 1.2e-7 everywhere.
pub fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let ans = t * poly.exp();
    if x >= 0.0 {
        ans
    } else {
        2.0 - ans
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::stats::tests_support::close;

    // Reference values computed with SciPy 1.x:
    //   from scipy.stats import mannwhitneyu
    //   mannwhitneyu(a, b, alternative="two-sided", method="exact")
    #[test]
    fn exact_rank_test_matches_scipy_without_ties() {
        let a = [1.1, 2.3, 3.7, 4.2, 5.9];
        let b = [6.1, 7.4, 8.8, 9.0, 10.5];
        let t = mann_whitney_u(&a, &b).unwrap();
        assert_eq!(t.method, RankMethod::Exact);
        assert_eq!(t.u, 0.0);
        // mannwhitneyu(a, b, method="exact").pvalue == 0.007936507936507936
        assert!(close(t.p_value, 0.007_936_507_936_507_936, 1e-12), "{}", t.p_value);

        let a = [12.1, 14.3, 11.8, 15.0, 13.2, 16.4];
        let b = [13.9, 17.2, 16.1, 18.3, 15.5];
        let t = mann_whitney_u(&a, &b).unwrap();
        // mannwhitneyu(a, b, method="exact") -> statistic 5.0, pvalue 0.08225108225108226
        assert_eq!(t.u, 5.0);
        assert!(close(t.p_value, 0.082_251_082_251_082_26, 1e-12), "{}", t.p_value);

        // Three runs a side: the smallest p there is, 0.1.
        let t = mann_whitney_u(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!(close(t.p_value, 0.1, 1e-12));
        assert!(close(smallest_p_value(3, 3), 0.1, 1e-12));
        assert!(close(smallest_p_value(5, 5), 2.0 / 252.0, 1e-12));
    }

    // With ties the exact p-value is that of the permutation test of U; reference:
    //   from scipy.stats import permutation_test, mannwhitneyu
    //   permutation_test((a, b), lambda x, y: mannwhitneyu(x, y).statistic,
    //                    permutation_type="independent", n_resamples=float("inf"),
    //                    alternative="two-sided").pvalue
    #[test]
    fn exact_rank_test_with_ties_matches_scipy_permutation_test() {
        let a = [1.0, 2.0, 2.0, 3.0];
        let b = [2.0, 3.0, 3.0, 4.0, 5.0];
        let t = mann_whitney_u(&a, &b).unwrap();
        assert_eq!(t.u, 3.0);
        // permutation_test(...).pvalue == 0.15873015873015872
        assert!(close(t.p_value, 0.158_730_158_730_158_72, 1e-12), "{}", t.p_value);

        let a = [3.0, 1.0, 2.0, 2.0, 4.0, 4.0];
        let b = [4.0, 5.0, 6.0, 5.0, 7.0];
        let t = mann_whitney_u(&a, &b).unwrap();
        assert_eq!(t.u, 1.0);
        // permutation_test(...).pvalue == 0.012987012987012988
        assert!(close(t.p_value, 0.012_987_012_987_012_988, 1e-12), "{}", t.p_value);
    }

    // Large samples: mannwhitneyu(a, b, alternative="two-sided", method="asymptotic"),
    // with a = [round(i * 0.7 % 13 * 10) / 10 for i in range(40)] and
    // b = [round(i * 0.9 % 11 * 10) / 10 + 3 for i in range(35)]: 75 values, 67 distinct.
    #[test]
    fn normal_approximation_matches_scipy_with_ties() {
        let a: Vec<f64> = (0..40)
            .map(|i| ((i as f64 * 0.7) % 13.0 * 10.0).round() / 10.0)
            .collect();
        let b: Vec<f64> = (0..35)
            .map(|i| ((i as f64 * 0.9) % 11.0 * 10.0).round() / 10.0 + 3.0)
            .collect();
        let t = mann_whitney_u(&a, &b).unwrap();
        assert_eq!(t.method, RankMethod::Normal);
        // statistic 489.0, pvalue 0.02537713391997337 (our normal tail is good to 1.2e-7)
        assert_eq!(t.u, 489.0);
        assert!(close(t.p_value, 0.025_377_133_919_973_37, 1e-6), "{}", t.p_value);
    }

    #[test]
    fn normal_tail_matches_scipy() {
        // scipy.stats.norm.sf(z) for z = 0, 1.96, -1, 3.5
        assert!(close(normal_sf(0.0), 0.5, 1.2e-7));
        assert!(close(normal_sf(1.96), 0.024_997_895_148_220_435, 1.2e-7));
        assert!(close(normal_sf(-1.0), 0.841_344_746_068_542_9, 1.2e-7));
        assert!(close(normal_sf(3.5), 0.000_232_629_079_035_525_02, 1.2e-7));
    }
}
