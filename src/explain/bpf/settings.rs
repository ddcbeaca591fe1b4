//! What the BPF program is told (`struct config` in watch_maps.h): whose calls it follows,
//! which writes, and when it reports a call or takes a stack.

use std::path::PathBuf;
use std::time::Duration;

use super::kind::{SyncKind, OTHER_CALLS, WRITE_CALLS};
use super::nanos;

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
    /// background writer's writes are its load, not its measure: watch_maps.h).
    All { tid: u32, comm: String },
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
}

impl Settings {
    /// `struct config`, byte for byte.
    pub(super) fn config_bytes(&self) -> Vec<u8> {
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
