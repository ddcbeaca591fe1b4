//! Explaining slow calls: a kernel trace of the measured threads during the run, the time
//! of each slow call split into causes, and a timeline of the machine's writeback state.
//!
//! How a run uses it (each part stands alone):
//! 1. [`Tracer::start`] with the threads to watch and the filesystem under test
//!    ([`TracedFs::of_path`]); [`Timeline::start`] beside it;
//! 2. the measurement, timing each call on the run clock with the calling thread's id;
//! 3. [`Tracer::stop`] → [`Trace`], [`Timeline::stop`] → [`TimelineRecord`];
//! 4. [`attribute`] the trace and the calls → one [`Attribution`] per slow call, whose
//!    [`Part`]s add up to its latency.
//!
//! - [`tracer`]: what is traced in a private tracefs instance (made and removed by
//!   [`crate::testbed::tracefs`]) and how it is read; [`events`]: the typed events
//! - [`stacks`]: what a sleeping thread waited for; [`attribution`]: the split per call
//! - [`timeline`]: the sampler
//! - [`command`]: the same for a command run under `exec --explain`, whose sync calls are
//!   read from the system-call events of its process tree ([`syscalls`])
//! - [`bpf`]: the tracer in the kernel (a BPF program) that `fsynclab watch` runs

pub(crate) mod attribution;
pub(crate) mod bpf;
pub(crate) mod command;
pub(crate) mod events;
pub(crate) mod explanation;
pub(crate) mod run;
pub(crate) mod stacks;
pub(crate) mod syscalls;
pub(crate) mod text;
pub(crate) mod timeline;
pub(crate) mod tracefs;
pub(crate) mod tracer;

pub(crate) use timeline::TimelineRecord;
