//! The run clock: CLOCK_MONOTONIC (Rust's `Instant` on Linux), zero at the start of a run, so
//! that every call's start time can be placed on one time line with the background writer's
//! per-second throughput.

use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug)]
pub struct RunClock {
    start: Instant,
}

impl RunClock {
    pub fn start() -> RunClock {
        RunClock { start: Instant::now() }
    }

    /// Nanoseconds since the start of the run.
    pub fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Where the run clock's zero lies on CLOCK_MONOTONIC, in ns: the origin that puts kernel
    /// trace events (tracefs `trace_clock` `mono`) on the run's time line. `Instant` reads
    /// CLOCK_MONOTONIC on Linux but keeps its value private, so the origin is found by reading
    /// both clocks back to back; of a few tries, the pair read closest together is used, which
    /// puts the error below a microsecond.
    pub fn origin_monotonic_ns(&self) -> u64 {
        (0..5)
            .map(|_| {
                let before = monotonic_ns();
                let since_start = self.start.elapsed().as_nanos() as u64;
                let after = monotonic_ns();
                (after - before, (before / 2 + after / 2).saturating_sub(since_start))
            })
            .min_by_key(|(gap, _)| *gap)
            .map(|(_, origin)| origin)
            .unwrap_or(0)
    }

    /// Times `call`, returning its result, its start (ns since the run start) and its latency (ns).
    #[inline]
    pub fn time<T>(&self, call: impl FnOnce() -> T) -> (T, u64, u64) {
        let t0 = Instant::now();
        let out = call();
        let t1 = Instant::now();
        let start_ns = t0.duration_since(self.start).as_nanos() as u64;
        (out, start_ns, t1.duration_since(t0).as_nanos() as u64)
    }
}

/// CLOCK_MONOTONIC now, in ns (the clock of `Instant` and of tracefs' `mono` trace clock).
pub fn monotonic_ns() -> u64 {
    use nix::time::{clock_gettime, ClockId};
    // CLOCK_MONOTONIC always exists on Linux.
    clock_gettime(ClockId::CLOCK_MONOTONIC).map_or(0, |ts| ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_on_monotonic_matches_instant() {
        let clock = RunClock::start();
        std::thread::sleep(Duration::from_millis(2));
        let origin = clock.origin_monotonic_ns();
        // A call timed now starts at now_ns() on the run clock, i.e. origin + now_ns() on
        // CLOCK_MONOTONIC; both readings are taken within a few microseconds.
        let run_ns = clock.now_ns();
        let mono = monotonic_ns();
        let placed = origin + run_ns;
        assert!(placed <= mono + 1_000, "origin {origin} + {run_ns} > {mono}");
        assert!(mono - placed < 1_000_000, "origin off by {} ns", mono - placed);
    }
}
