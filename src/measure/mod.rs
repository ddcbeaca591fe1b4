//! Measurement: the run clock, per-call samples, latency histograms and per-second
//! throughput. Nothing here does I/O; roles call into it around each system call.

pub mod clock;
pub mod histogram;
pub mod samples;
pub mod throughput;

pub use clock::RunClock;
pub use histogram::{LatencyHistogram, LatencySummary};
pub use samples::{OpStats, Recorder, Sample};
pub use throughput::{PerSecond, SecondBucket};
