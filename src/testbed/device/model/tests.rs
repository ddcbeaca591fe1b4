use super::*;

#[test]
fn drawn_latencies_have_the_median_and_p99_asked_for_and_repeat() {
    let (median, p99) = (600 * 1_000, 1_300 * 1_000);
    let mut draws = crate::rng::SplitMix64::new(LATENCY_SEED);
    let mut v: Vec<Nanos> = (0..200_000).map(|_| lognormal(&mut draws, median, p99)).collect();
    v.sort_unstable();
    let at = |q: f64| v[((v.len() - 1) as f64 * q) as usize] as f64;
    assert!((at(0.5) / median as f64 - 1.0).abs() < 0.02, "median {}", at(0.5));
    assert!((at(0.99) / p99 as f64 - 1.0).abs() < 0.03, "p99 {}", at(0.99));
    // The same seed, the same latencies: a run is repeatable.
    let mut again = crate::rng::SplitMix64::new(LATENCY_SEED);
    let mut first = crate::rng::SplitMix64::new(LATENCY_SEED);
    for _ in 0..100 {
        assert_eq!(lognormal(&mut again, median, p99), lognormal(&mut first, median, p99));
    }
    // No spread asked for: the median every time.
    assert_eq!(lognormal(&mut draws, median, median), median);
}

#[test]
fn a_disk_with_a_latency_p99_spreads_its_completions() {
    let mut figures = fixtures::hdd(1 << 20);
    figures.mechanics = Mechanics::Solid {
        per_request: Duration::ZERO,
    };
    figures.command_latency = Duration::from_micros(500);
    figures.latency_p99 = Some(Duration::from_millis(2));
    let mut disk = Disk::new(figures);
    let latencies: Vec<Nanos> = (0..1000).map(|_| disk.command_latency_ns()).collect();
    let distinct: std::collections::BTreeSet<_> = latencies.iter().collect();
    assert!(distinct.len() > 900, "drawn, not fixed: {} distinct", distinct.len());
    assert!(latencies.iter().any(|&l| l > 2_000_000), "a tail past the p99");
}
