//! The cost fsynclab adds to every timed call: two CLOCK_MONOTONIC reads (`RunClock::time`)
//! plus recording the latency in an HDR histogram and the per-second throughput buckets —
//! what the random writer does around each 4 KiB pwrite. Run: `cargo bench --bench clock_overhead`.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

use std::hint::black_box;
use std::time::Instant;

use fsynclab::measure::{LatencyHistogram, PerSecond, RunClock};

fn main() {
    const N: u64 = 5_000_000;
    let clock = RunClock::start();

    // Bare loop: the baseline the others are measured against.
    let t = Instant::now();
    for i in 0..N {
        black_box(i);
    }
    let bare = t.elapsed().as_nanos() as f64 / N as f64;

    // Timing only.
    let t = Instant::now();
    for i in 0..N {
        black_box(clock.time(|| black_box(i)));
    }
    let timed = t.elapsed().as_nanos() as f64 / N as f64;

    // Timing and recording, as the background writer does per call.
    let mut hist = LatencyHistogram::new();
    let mut per_second = PerSecond::new();
    let t = Instant::now();
    for i in 0..N {
        let (_, start, lat) = clock.time(|| black_box(i));
        hist.record(lat);
        per_second.add(start + lat, 4096);
    }
    let recorded = t.elapsed().as_nanos() as f64 / N as f64;
    black_box((hist.count(), per_second));

    println!("per call: bare loop {bare:.1} ns, timed {timed:.1} ns, timed+recorded {recorded:.1} ns");
    println!(
        "overhead of timing: {:.1} ns; of timing and recording: {:.1} ns",
        timed - bare,
        recorded - bare
    );
}
