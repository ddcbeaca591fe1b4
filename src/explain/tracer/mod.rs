//! The plug point for tracers: what `--explain` asks of one, and the one place that chooses
//! and starts it. A tracer follows whom it is told to in the kernel while a run or a command
//! goes, and once stopped splits the slow calls into parts that add up to each
//! ([`super::explanation::Explanation`]). Two stand behind the trait, each a folder of its
//! own for how it traces, and a file here that plugs it in:
//! - [`super::tracefs`], plugged in by [`tracefs`]: tracefs's events in a private instance,
//!   read and attributed in user space ([`super::attribution`]): every kind of call, the
//!   commits and flushes a wait was tied to;
//! - [`super::bpf`], plugged in by [`bpf`]: the BPF program of `fsynclab watch`, which splits
//!   the calls in the kernel.
//!
//! A third backend is a folder beside them, a file here with a type implementing [`Tracer`],
//! a [`TracerKind`] for `--tracer` to name it, and its arm in [`start`] and [`unavailable`].

use anyhow::Result;

mod bpf;
mod tracefs;

use super::explanation::Explanation;
use super::tracefs::TracedFs;
use crate::measure::{RunClock, Sample};

/// The tracer behind `--explain` (`--tracer`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum TracerKind {
    /// tracefs's events, read and attributed in user space: every kind of call, the
    /// commits and flushes a wait was tied to, the kernel timeline.
    #[default]
    Tracefs,
    /// The BPF program of `fsynclab watch`, on fsynclab's own process: the sync calls, and
    /// the measuring threads' writes and calls on names and files (open, close, rename,
    /// truncate...), split in the kernel ([`super::bpf::run`]).
    Bpf,
}

/// Names a file to save a run's raw trace in, with its calls written in as markers: how the
/// fixtures in tests/fixtures/trace-*.txt were captured (tracefs only).
pub(crate) const SAVE_TRACE: &str = "FSYNCLAB_SAVE_TRACE";
/// `0`: no kernel stacks (every sleep is then unattributed): what `cargo bench --bench
/// explain_overhead` uses to tell their cost from the rest (tracefs only).
pub(crate) const TRACE_STACKS: &str = "FSYNCLAB_TRACE_STACKS";

impl TracerKind {
    /// The tracer `--explain` uses where `--tracer` is not given: BPF where it can run
    /// (root, BTF, a build with its program), tracefs where it cannot, or where
    /// FSYNCLAB_SAVE_TRACE or FSYNCLAB_TRACE_STACKS ask for what only tracefs does.
    pub(crate) fn here() -> TracerKind {
        let tracefs_asked = std::env::var_os(SAVE_TRACE).is_some() || std::env::var_os(TRACE_STACKS).is_some();
        if tracefs_asked || super::bpf::unavailable().is_some() {
            TracerKind::Tracefs
        } else {
            TracerKind::Bpf
        }
    }

    /// How a line names it: `tracefs`, `BPF`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            TracerKind::Tracefs => "tracefs",
            TracerKind::Bpf => "BPF",
        }
    }
}

/// Why tracing with `kind` cannot work here, if it cannot: no root, or no tracefs in the
/// kernel (no BPF, for `--tracer bpf`).
pub(crate) fn unavailable(kind: TracerKind) -> Option<String> {
    if !crate::sys::is_root() {
        return Some("tracing the kernel needs root".into());
    }
    match kind {
        TracerKind::Tracefs => {
            (!crate::testbed::tracefs::in_kernel()).then(|| "this kernel has no tracefs (CONFIG_TRACING)".into())
        }
        TracerKind::Bpf => super::bpf::unavailable(),
    }
}

/// Whose calls a tracer follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Whom {
    /// A run's measuring threads: the calling thread `tid` and the worker threads of
    /// [`crate::role::pool`]. Their calls are timed in user space, and given to
    /// [`Tracer::finish`].
    Run { tid: u32 },
    /// Every process and thread the calling thread `tid` starts from now on (exec's
    /// command): the tracer times their sync calls itself, and [`Tracer::finish`] returns
    /// them.
    StartedBy { tid: u32 },
}

/// A tracer following its tasks in the kernel.
pub(crate) trait Tracer {
    /// Stops tracing and explains the slow calls into `explanation` (of its threshold, for
    /// its traced thread). `measured` are the calls timed in user space (a run's, whose
    /// samples of the calling thread have tid 0); `None` where the tracer timed them itself
    /// (a command's), and then returns them, in order of their start, each with its
    /// process's name. A tracer that failed says so in the explanation's notes.
    fn finish(self: Box<Self>, measured: Option<&[Sample]>, explanation: &mut Explanation) -> Vec<Sample>;
}

/// Starts the tracer of `kind` on `whom`, for the filesystem `fs` (whose journal and disk
/// are traced), its events placed on `clock`.
pub(crate) fn start(kind: TracerKind, whom: Whom, fs: TracedFs, clock: RunClock) -> Result<Box<dyn Tracer>> {
    Ok(match kind {
        TracerKind::Tracefs => Box::new(tracefs::Tracefs::start(whom, fs, clock)?),
        TracerKind::Bpf => Box::new(bpf::Bpf::start(whom, clock)?),
    })
}

/// The thread a sample's call was made on: the traced thread where the sample says 0 (a
/// run's calls on its main thread).
pub(crate) fn tid_of(sample: &Sample, main: u32) -> u32 {
    if sample.tid == 0 {
        main
    } else {
        sample.tid
    }
}

/// The name of the process that made the call of thread `tid` starting at `start_ns`, among
/// the calls a tracer timed.
pub(crate) fn process_of(samples: &[Sample], tid: u32, start_ns: u64) -> Option<String> {
    samples
        .iter()
        .find(|s| s.tid == tid && s.t_ns == start_ns)
        .and_then(|s| s.process)
        .map(|p| p.to_string())
}
