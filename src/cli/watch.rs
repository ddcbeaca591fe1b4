//! The options of `fsynclab watch`, and their reading into the tracer's settings.

use std::time::Duration;

use clap::Args;

use super::RecordArgs;
use crate::error::Usage;
use crate::units::parse_duration;

pub(crate) const WATCH_HELP: &str = "\
Attaches a BPF program to the kernel (as root) and prints each sync call (fsync, fdatasync,
sync_file_range, msync, syncfs, sync, and the durable writes: to a file opened O_SYNC or
O_DSYNC, or with pwritev2's RWF_DSYNC) slower than --threshold as it ends, split into parts
that add up to it: time on a CPU, waiting for a CPU, and its sleeps, each long one (over
--stack-over) named from the kernel stack it slept in (waiting for data writeback, for a
journal commit, a device cache flush, dirty throttling...) and the task that woke it; with
the cache flushes, writes and jbd2 commits that completed on the machine meanwhile. Only the
traced tasks' calls are followed, in the kernel; only slow calls cross to user space.
Ctrl-C, SIGTERM or --duration ends it (a watch of --pid, also the end of the last process
it watches) with the percentiles of every call, per process and
kind, and records it in the results store as a run of scenario `watch` (`fsynclab runs`
lists it, `fsynclab explain ID` shows its slow calls with their parts, `fsynclab report
ID` draws it), with what the tracer cost (the BPF programs' own run time only with
--bpf-stats: counting it times every run of the programs, which the watched calls pay for).
Memory stays bounded however long it watches:
the percentiles come from histograms kept in the kernel, and only the 100 slowest calls
over --threshold are kept with their parts (every one is printed as it comes). Processes
that end (a shell loop's dd, git, dpkg) are taken out of the kernel's maps every 5 s and
their calls summed by name, one row each (`dd (93 exited)`), so the maps keep room for
the processes after them.
Killed however, it leaves no BPF program behind (nothing is pinned).
Where the kernel allows it, the sync calls are hooked by their own kernel functions
(fentry/fexit on __x64_sys_fsync..., and the filesystems' write functions for the durable
writes), which no other call passes; where it refuses (no fentry), by the raw_syscalls trace
points, which every system call of the machine passes. The line after the start says
which. --detail chooses the other hooks, which every task pays for at each switch, wakeup
or block request (`--detail latency` attaches none of them). A watch of the whole machine
is at `latency` unless told: each call still split into time on a CPU, waiting for one and
asleep, without taxing the machine's every switch; `--detail disk` names each sleep (the
default of a watch of --pid, --comm or --cgroup).

Examples:
  fsynclab watch --pid $(pidof postgres | tr ' ' ,)   PostgreSQL's slow WAL fdatasyncs
  fsynclab watch --comm etcd --threshold 50ms
  fsynclab watch --cgroup system.slice/postgresql.service   a service and what it starts
  fsynclab watch --duration 30s                       every process of the machine
  fsynclab watch --duration 30s --detail disk         ... each sleep named, at a cost to all

Set FSYNCLAB_NO_BPF=1 to make it refuse as where the kernel has no BPF.";

#[derive(Args, Debug)]
pub struct WatchArgs {
    /// Processes to watch (every thread of each), comma-separated or repeated; they may have
    /// started long before
    #[arg(long, value_name = "PID", value_delimiter = ',')]
    pub pid: Vec<String>,
    /// Watch every task with this command name (as in /proc/PID/comm, at most 15 bytes)
    #[arg(long, value_name = "NAME")]
    pub comm: Option<String>,
    /// Watch every task of this cgroup v2 directory and of those below it (a path, or one
    /// under the cgroup2 mount: system.slice/postgresql.service); filtered in the kernel
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<std::path::PathBuf>,
    /// Print the calls at least this slow
    #[arg(long, value_name = "DURATION", default_value = "10ms")]
    pub threshold: String,
    /// Take the kernel stack of sleeps at least this long inside a sync call (shorter ones
    /// are counted, not named)
    #[arg(long, value_name = "DURATION", default_value = "1ms")]
    pub stack_over: String,
    /// How much of each call to split, for how much cost to every task of the machine:
    /// `latency` hooks the sync calls alone (and the journal's, writeback's and throttling's
    /// few events): each call's latency, file and journal commits, split by its task's
    /// scheduler counters into time on a CPU, waiting for one, and asleep (not named);
    /// `sleeps` adds the scheduler's switches and wakeups, which every task pays for: the
    /// time on a CPU, waiting for one, and each sleep named by its stack and waker; `disk`
    /// adds the block requests: the cache flushes and writes that completed on the call's
    /// disk meanwhile, and which completion ended a sleep. Default: `disk` for a watch of
    /// --pid, --comm or --cgroup, `latency` for the whole machine
    #[arg(long, value_name = "LEVEL")]
    pub detail: Option<String>,
    /// End after this long (default: at Ctrl-C)
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// Count the BPF programs' runs and run time (the kernel's run-time statistics), printed
    /// at the end and recorded; off by default, as the kernel then reads the clock around
    /// every run of the programs, a cost to every call watched
    #[arg(long)]
    pub bpf_stats: bool,
    #[command(flatten)]
    pub record: RecordArgs,
}

/// The durations read, each refused in one line of fsynclab's own (clap's would add its
/// usage block): (threshold, stack-over, duration).
impl WatchArgs {
    pub(crate) fn durations(&self) -> Result<(Duration, Duration, Option<Duration>), Usage> {
        let read = |flag: &str, text: &str| parse_duration(text).map_err(|e| Usage(format!("--{flag} {text}: {e}")));
        let duration = self.duration.as_deref().map(|d| read("duration", d)).transpose()?;
        if duration == Some(Duration::ZERO) {
            return Err(Usage(
                "--duration 0s: expected more than 0s (or leave it out to watch until Ctrl-C)".into(),
            ));
        }
        Ok((
            read("threshold", &self.threshold)?,
            read("stack-over", &self.stack_over)?,
            duration,
        ))
    }
}
