//! Many comparisons made at once: the adjustment that keeps the share of false discoveries
//! among the "significant" ones bounded.

/// Benjamini–Hochberg adjusted p-values (Benjamini & Hochberg, "Controlling the false
/// discovery rate", JRSS B 57(1), 1995): sorted ascending, p(i) becomes
/// min over j ≥ i of m·p(j)/j, capped at 1, and is returned in the input's order. Calling
/// "significant" every comparison whose adjusted value is below α keeps the expected share
/// of false discoveries among them at α or below, for independent or positively dependent
/// tests (the cells of a matrix share a machine, which makes them the latter if anything).
/// Same as SciPy's `false_discovery_control(method="bh")`.
pub fn benjamini_hochberg(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p_values[i].total_cmp(&p_values[j]));
    let mut adjusted = vec![0.0; m];
    let mut running_min = 1.0f64;
    for (rank, &i) in order.iter().enumerate().rev() {
        let scaled = p_values[i] * m as f64 / (rank + 1) as f64;
        running_min = running_min.min(scaled);
        adjusted[i] = running_min.min(1.0);
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::stats::tests_support::close;

    // Reference: scipy.stats.false_discovery_control(p, method="bh")
    #[test]
    fn benjamini_hochberg_matches_scipy() {
        let p = [0.01, 0.04, 0.03, 0.005, 0.2, 0.5];
        let want = [0.03, 0.06, 0.06, 0.03, 0.24, 0.5];
        let got = benjamini_hochberg(&p);
        for (g, w) in got.iter().zip(want) {
            assert!(close(*g, w, 1e-12), "{got:?}");
        }
        assert!(benjamini_hochberg(&[]).is_empty());
    }
}
