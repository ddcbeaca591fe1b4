//! The tracer in the kernel: a BPF program (watch.bpf.c, compiled by build.rs, loaded with
//! libbpf) that splits each slow sync call of the traced tasks into parts as it happens, for
//! `fsynclab watch`.
//!
//! [`BpfTracer::start`] loads the program, tells it which tasks to follow ([`Filter`]) and
//! its thresholds, and attaches it: fentry/fexit on the sync system calls' functions where
//! the kernel allows them, else BTF trace points on every system call's entry and exit (the
//! program keeps the sync calls by number), and as the [`Detail`] asks, on the scheduler
//! (switch, wakeup), the block layer (request issue, completion); and jbd2 (commit start,
//! end) ([`hooks`]). Each attachment
//! is a BPF link whose file descriptor this process owns, never pinned: when the process ends,
//! however it ends (SIGKILL included), the kernel closes them and detaches the program.
//! [`BpfTracer::follow`] hands each slow call to the caller as it comes
//! ([`record::SlowCall`]); [`BpfTracer::latencies`] reads the in-kernel histograms of every
//! call's latency, per process and kind; [`BpfTracer::run_time`] what the programs cost the
//! kernel, counted only when [`Settings::run_time_stats`] asks for it (the kernel then times
//! every run of every program, which the traced calls pay for).
//!
//! Why libbpf (libbpf-rs) and a C program: libbpf is maintained with the kernel's BPF tree
//! and is the reference CO-RE loader; aya's BPF-side crates need a nightly toolchain, which
//! this project cannot assume. The parts: `load` (the programs chosen for this kernel,
//! loaded, configured and attached), `follow` (the slow calls as the kernel sends them),
//! `maps` (the histograms, names and losses the kernel keeps, and the processes that ended
//! taken out), `ended` (a watch's ended processes, folded by name), `record` (the record of
//! a slow call), `attribute` (that record as the explanation results carry), `symbols`
//! (kernel addresses to names), `histogram` (the latency histograms' buckets), `cost` (the
//! programs' own run time), `run` (the tracer behind a run's and a command's `--explain`),
//! `plug` (that tracer behind [`super::tracer::Tracer`]), `tie` (their chosen calls tied to
//! its records).

use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::Duration;

use libbpf_rs::{Link, Object};

pub(crate) mod attribute;
mod cost;
mod cursor;
pub(crate) mod ended;
mod follow;
pub(crate) mod histogram;
pub(crate) mod hooks;
mod kind;
pub(crate) mod latency_record;
#[cfg(test)]
mod layout;
mod load;
mod maps;
pub(crate) mod record;
pub(crate) mod run;
mod settings;
pub(crate) mod symbols;
mod sync_hooks;
pub(crate) mod tie;

pub(crate) use maps::EndedProcess;
pub(crate) use settings::{Detail, Filter, Settings, Writes};

/// Where the kernel gives its BTF and each loaded module's.
const MODULES_BTF: &str = "/sys/kernel/btf";

/// The BPF object build.rs compiled (empty when clang was missing at build time).
static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/watch.bpf.o"));

/// Setting it (to anything) makes the tracer refuse as if the kernel had no BPF: how a test
/// checks the refusal on a machine that has it.
pub(crate) const DISABLE_ENV: &str = "FSYNCLAB_NO_BPF";

/// The program loaded and attached; dropping it detaches everything.
pub(crate) struct BpfTracer {
    object: Object,
    _links: Vec<Link>,
    /// While held, the kernel counts the programs' runs and run time (`bpf_enable_stats`,
    /// reference-counted by the kernel: no sysctl is written, and it ends with the process).
    _stats: Option<OwnedFd>,
    /// The settings asked for the run-time statistics.
    stats_asked: bool,
    /// The settings asked for every call's latency.
    every_call: bool,
    /// The kernel hooks attached (hooks.rs).
    hooks: crate::explain::bpf::hooks::BpfHooks,
}

/// What the programs cost the kernel: how often they ran and for how long in all (0 where
/// they were not asked for, or the kernel could not count).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct RunTime {
    /// The run-time statistics were asked for ([`Settings::run_time_stats`]).
    pub(crate) asked: bool,
    pub(crate) runs: u64,
    pub(crate) ns: u64,
}

/// What the kernel side could not keep: calls not followed (no task storage for the task),
/// records not sent (ring buffer full), histogram entries not made (histogram map full),
/// latencies not sent (their ring full), processes of a command not followed (the map of
/// processes full).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Lost {
    pub(crate) calls: u64,
    pub(crate) records: u64,
    pub(crate) histogram: u64,
    pub(crate) latencies: u64,
    pub(crate) processes: u64,
}

impl Lost {
    /// Everything lost, summed.
    pub(crate) fn total(&self) -> u64 {
        self.calls + self.records + self.histogram + self.latencies + self.processes
    }
}

/// Why the tracer cannot run here, in one line saying what to do; `None` when it can try.
pub(crate) fn unavailable() -> Option<String> {
    if std::env::var_os(DISABLE_ENV).is_some() {
        return Some(format!(
            "the BPF tracer is turned off ({DISABLE_ENV} is set): unset it to trace"
        ));
    }
    if OBJECT.is_empty() {
        return Some(
            "this fsynclab was built without its BPF program (no clang): run scripts/setup.sh and rebuild".into(),
        );
    }
    // SAFETY: geteuid cannot fail and touches no memory of ours.
    if unsafe { libc::geteuid() } != 0 {
        return Some("tracing with BPF needs root: run it with sudo".into());
    }
    if !Path::new(MODULES_BTF).join("vmlinux").exists() {
        return Some(
            "this kernel has no BTF (/sys/kernel/btf/vmlinux; CONFIG_DEBUG_INFO_BTF): BPF tracing needs it".into(),
        );
    }
    None
}

pub(super) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
