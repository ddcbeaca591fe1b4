//! What the BPF program is told (`struct config` in watch_records.h): whose calls it follows,
//! which writes, and when it reports a call or takes a stack.

use std::path::PathBuf;
use std::time::Duration;

use super::kind::{SyncKind, OTHER_CALLS, WRITE_CALLS};
use super::nanos;
use super::sync_hooks::SyncHooks;

/// Which tasks' sync calls are followed; the kernel applies it at each call's entry.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Filter {
    /// Every task of the machine.
    All,
    /// The threads of these processes (thread group ids).
    Processes(Vec<u32>),
    /// Every task with this name (comm, at most 15 bytes).
    Comm(String),
    /// Every task of this cgroup (v2) directory or of one below it.
    Cgroup(PathBuf),
}

/// Which writes the program follows beside the sync calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Writes {
    /// The durable ones: to a file opened O_SYNC or O_DSYNC, or made with RWF_DSYNC or
    /// RWF_SYNC (each a sync call of its own, as a database's WAL may make them).
    Durable,
    /// Every write of thread `tid` and of the threads named `comm` (a run's measuring
    /// threads, whose writes the run times), and no write of any other thread (a run's
    /// background writer's writes are its load, not its measure: watch_records.h).
    All { tid: u32, comm: String },
}

/// How much of a call the program splits, for how much cost to every task of the machine
/// (`watch --detail`): each level adds a group of hooks that run for more than the sync
/// calls. Ordered: each level has everything of the one before.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Detail {
    /// The sync calls' own hooks, and the journal's, writeback's and dirty throttling's
    /// events (a few a second): each call's latency (the percentiles, the slow calls with
    /// their file), the journal commits it made, why the flusher wrote meanwhile; a slow
    /// call split by its task's scheduler counters (read at its entry and exit: no hook on
    /// the scheduler) into time on a CPU, waiting for one, and asleep, its sleeps not named.
    Latency,
    /// And the scheduler's switches and wakeups (with, where the kernel hides the
    /// preemption count, the interrupts' entries and exits): the time on a CPU, waiting for
    /// one, and each sleep named by its kernel stack and the task that ended it.
    Sleeps,
    /// And the block layer's requests: the device cache flushes and writes that completed
    /// during the call on its disk, the commit it waited for, and which completion ended a
    /// sleep.
    Disk,
}

impl Detail {
    pub(crate) const ALL: [Detail; 3] = [Detail::Latency, Detail::Sleeps, Detail::Disk];

    /// Its name as `--detail` takes it and a result records it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Detail::Latency => "latency",
            Detail::Sleeps => "sleeps",
            Detail::Disk => "disk",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<Detail> {
        Detail::ALL.into_iter().find(|d| d.name() == name)
    }
}

/// What the program reports, and when it takes a stack.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub(crate) filter: Filter,
    /// A call at least this slow is sent with its parts.
    pub(crate) report_threshold: Duration,
    /// A sleep at least this long has its kernel stack taken (at its wakeup).
    pub(crate) stack_threshold: Duration,
    /// Count the programs' runs and run time (the kernel's run-time statistics, which read
    /// the clock around every run of every program: off unless asked, `watch --bpf-stats`).
    pub(crate) run_time_stats: bool,
    /// With [`Filter::Processes`]: the processes this thread starts from now on, and those
    /// they start, are followed too (`exec --explain --tracer bpf`'s command).
    pub(crate) follow_forks_of: Option<u32>,
    /// Every call's latency is sent ([`BpfTracer::follow_every`]), not only the slow calls.
    pub(crate) every_call: bool,
    pub(crate) writes: Writes,
    /// Which groups of hooks beside the sync calls' are attached.
    pub(crate) detail: Detail,
}

impl Settings {
    /// `struct config`, byte for byte, for the sync calls found by `sync_hooks`.
    pub(super) fn config_bytes(&self, sync_hooks: SyncHooks) -> Vec<u8> {
        let mut config = Vec::with_capacity(96);
        let (filter, comm) = match &self.filter {
            Filter::All => (0u32, ""),
            Filter::Processes(_) => (1, ""),
            Filter::Comm(c) => (2, c.as_str()),
            Filter::Cgroup(_) => (3, ""),
        };
        config.extend_from_slice(&filter.to_ne_bytes());
        config.extend_from_slice(&self.follow_forks_of.unwrap_or(0).to_ne_bytes());
        for kind in SyncKind::SYSCALLS {
            config.extend_from_slice(&kind.syscall_number().unwrap_or(-1).to_ne_bytes());
        }
        config.extend_from_slice(&nanos(self.report_threshold).to_ne_bytes());
        config.extend_from_slice(&nanos(self.stack_threshold).to_ne_bytes());
        config.extend_from_slice(&comm_bytes(comm));
        config.extend_from_slice(&u32::from(self.every_call).to_ne_bytes());
        // WRITES_SYNC, WRITES_ALL.
        let (writes, write_tid, write_comm) = match &self.writes {
            Writes::Durable => (1u32, 0u32, ""),
            Writes::All { tid, comm } => (2, *tid, comm.as_str()),
        };
        config.extend_from_slice(&writes.to_ne_bytes());
        for nr in WRITE_CALLS {
            config.extend_from_slice(&nr.to_ne_bytes());
        }
        config.extend_from_slice(&write_tid.to_ne_bytes());
        config.extend_from_slice(&0u32.to_ne_bytes());
        config.extend_from_slice(&comm_bytes(write_comm));
        let mut takes_fd = 0u32;
        for (i, (nr, fd)) in OTHER_CALLS.into_iter().enumerate() {
            config.extend_from_slice(&nr.to_ne_bytes());
            takes_fd |= u32::from(fd) << i;
        }
        config.extend_from_slice(&takes_fd.to_ne_bytes());
        // HOOKS_RAW_SYSCALLS, HOOKS_FUNCTIONS.
        config.extend_from_slice(&sync_hooks.config_value().to_ne_bytes());
        // Without the scheduler's hooks a slow call is split by its task's counters.
        config.extend_from_slice(&u32::from(self.detail < Detail::Sleeps).to_ne_bytes());
        config.extend_from_slice(&0u32.to_ne_bytes());
        config
    }
}

/// A task name as the kernel keeps it: at most 15 bytes and a NUL, in 16.
fn comm_bytes(comm: &str) -> [u8; 16] {
    let mut name = [0u8; 16];
    let bytes = comm.as_bytes();
    let n = bytes.len().min(15);
    name[..n].copy_from_slice(&bytes[..n]);
    name
}
