//! What to trace: the threads watched ([`Watch`]), the filesystem under test as tracing
//! sees it ([`TracedFs`]: its device, its disk, the name its journal thread carries), and
//! the settings of one trace ([`TraceConfig`]). Data only, read by the tracer that runs it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::super::events::Dev;
use crate::environment::device_numbers;
use crate::kernel::{block, mount_of, mounts};

/// The threads whose calls are measured: by thread id, and/or every thread with a given
/// name (comm), which also catches threads made after the tracer started.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Watch {
    pub(crate) tids: Vec<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) comms: Vec<String>,
    /// The thread whose descendants (processes and threads) are followed, in an instance
    /// of their own; in a finished trace, `tids` then lists every descendant seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) process_tree: Option<u32>,
}

impl Watch {
    #[cfg(test)]
    pub(crate) fn threads(tids: &[u32]) -> Watch {
        Watch {
            tids: tids.to_vec(),
            ..Watch::default()
        }
    }

    /// Every process and thread the calling thread starts from now on (it, too, is traced).
    pub(crate) fn descendants_of_this_thread() -> Watch {
        Watch {
            process_tree: Some(current_tid()),
            ..Watch::default()
        }
    }

    /// Every thread named `comm` (at most 15 bytes, as the kernel keeps it).
    #[cfg(test)]
    pub(crate) fn comm(comm: &str) -> Watch {
        Watch {
            comms: vec![comm.chars().take(15).collect()],
            ..Watch::default()
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.tids.is_empty() && self.comms.is_empty() && self.process_tree.is_none()
    }
}

/// The calling thread's id (`gettid(2)`), as the kernel names it in events.
pub(crate) fn current_tid() -> u32 {
    crate::sys::current_tid()
}

/// A task and its name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Task {
    pub(crate) pid: u32,
    pub(crate) comm: String,
}

/// The filesystem under test, as far as tracing cares.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct TracedFs {
    /// `ext4`, `xfs`, `btrfs`, ... (`ext2`/`ext3` are served by the ext4 driver).
    pub(crate) fstype: String,
    /// The block device the filesystem is on (a partition's own numbers).
    pub(crate) dev: Option<Dev>,
    /// Its kernel name (`loop0`, `vda1`), as jbd2 names its thread.
    pub(crate) dev_name: Option<String>,
    /// The whole disk, where block events are reported.
    pub(crate) disk: Option<Dev>,
}

impl TracedFs {
    /// The filesystem that holds `path`, from /proc/self/mountinfo and sysfs.
    pub(crate) fn of_path(path: &Path) -> TracedFs {
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let mounts = mounts();
        let Some(m) = mount_of(&mounts, &canonical) else {
            return TracedFs::default();
        };
        let (major, minor) = device_numbers(m);
        let dev = Dev { major, minor };
        let dev_name = block::name(major, minor);
        let disk = block::disk_dir(major, minor)
            .and_then(|d| std::fs::read_to_string(d.join("dev")).ok())
            .and_then(|s| s.trim().parse().ok());
        TracedFs {
            fstype: m.fstype.clone(),
            dev: dev_name.is_some().then_some(dev),
            dev_name,
            disk,
        }
    }

    pub(super) fn is_ext4(&self) -> bool {
        matches!(self.fstype.as_str(), "ext2" | "ext3" | "ext4")
    }
}

/// What to trace.
#[derive(Clone, Debug)]
pub(crate) struct TraceConfig {
    pub(crate) watch: Watch,
    pub(crate) fs: TracedFs,
    /// CLOCK_MONOTONIC at the run clock's zero ([`crate::measure::RunClock::origin_monotonic_ns`]).
    pub(crate) origin_ns: u64,
    /// Ring buffer per CPU, KiB.
    pub(crate) buffer_kb_per_cpu: u32,
    /// Keep the raw trace text in [`Trace::text`] (for fixtures and debugging).
    pub(crate) keep_text: bool,
    /// Record the kernel stack at each sleep of a watched thread: what tells the causes of
    /// a wait apart, and most of the tracing's cost (`cargo bench --bench explain_overhead`).
    pub(crate) stacks: bool,
    /// Bytes of memory the events read may hold, after which tracing stops (see the
    /// module's comment).
    pub(crate) budget_bytes: u64,
}

/// The default [`TraceConfig::budget_bytes`]: about a million events.
pub(crate) const TRACE_BUDGET_BYTES: u64 = 64 << 20;

impl TraceConfig {
    pub(crate) fn new(watch: Watch, fs: TracedFs, origin_ns: u64) -> TraceConfig {
        TraceConfig {
            watch,
            fs,
            origin_ns,
            buffer_kb_per_cpu: 8192,
            keep_text: false,
            stacks: true,
            budget_bytes: TRACE_BUDGET_BYTES,
        }
    }
}
