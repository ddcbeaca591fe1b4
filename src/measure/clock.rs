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
