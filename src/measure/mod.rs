//! Measurement: the run clock, the kinds of timed calls, per-call samples, latency
//! histograms, per-second throughput and the few statistics reports need. Nothing here
//! does I/O; roles call into it around each system call.

pub mod clock;
pub mod histogram;
pub(crate) mod interner;
pub mod op;
pub mod samples;
pub mod stats;
pub mod task;
pub mod throughput;

pub use clock::RunClock;
pub use histogram::{LatencyHistogram, LatencySummary};
pub use op::OpKind;
pub use samples::{OpStats, Recorder, Sample};
pub use task::TaskName;
pub use throughput::{PerSecond, SecondBucket};
