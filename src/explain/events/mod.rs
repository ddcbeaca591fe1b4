//! Typed kernel events, parsed from the text tracefs prints (`trace`, `trace_pipe`).
//!
//! Each line is `TASK-PID [CPU] FLAGS SECONDS.MICROS: EVENT: BODY` (Documentation/trace/
//! ftrace.rst, "Output format"); the body of each event follows the `print fmt` in
//! `events/SYSTEM/EVENT/format` of the running kernel. A `stacktrace` trigger adds a line
//! `... SECONDS.MICROS: <stack trace>` followed by one ` => function` line per frame, and a
//! reader that falls behind gets `CPU:N [LOST M EVENTS]`. Events fsynclab does not use are
//! kept as [`EventKind::Other`], so nothing is silently dropped.
//!
//! Only the fields the attribution and the explanation's text use are typed; the others are ignored.
//! Task names (comm) may hold spaces and dashes (`lto cgu.10-9946`), so fields are cut at
//! the next known key rather than at whitespace. With the `record-tgid` option a line also
//! holds the thread group after the task, `TASK-PID (TGID) [CPU]` (`(-------)` when not
//! known). System-call events print their own shape, `sys_NAME(arg: 0x1f, ...)` on entry
//! and `sys_NAME -> 0x0` on exit (kernel/trace/trace_syscalls.c), the values in hex.
//!
//! The parts: `body` (each event's body, field by field), `lines` (a trace's lines: events,
//! stacks and lost-event notes, in time order; [`TraceParser`] reads them as they come).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::measure::TaskName;

mod body;
mod lines;
#[cfg(test)]
mod tests;
mod word;

#[cfg(test)]
pub(crate) use lines::parse_trace;
pub(crate) use lines::{ParsedTrace, TraceParser};
pub(crate) use word::Word;

/// A kernel stack, innermost frame first: shared by every event (and off-CPU interval) that
/// took the same stack, since a trace holds a few hundred distinct stacks and a hundred
/// thousand sleeps.
pub(crate) type Frames = std::sync::Arc<[String]>;

/// A block device number, as the kernel prints it in events (`7,0` or `7:0`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct Dev {
    pub(crate) major: u32,
    pub(crate) minor: u32,
}

impl Dev {
    /// The number as event filters compare it: the kernel's internal `dev_t`, major in the
    /// bits above 20 (`MKDEV`, include/linux/kdev_t.h), not the user-space encoding.
    pub(crate) fn kernel_dev_t(self) -> u64 {
        (u64::from(self.major) << 20) | u64::from(self.minor)
    }
}

impl fmt::Display for Dev {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

impl FromStr for Dev {
    type Err = String;

    fn from_str(s: &str) -> Result<Dev, String> {
        let (major, minor) = s
            .split_once([',', ':'])
            .ok_or_else(|| format!("not a device number: {s}"))?;
        Ok(Dev {
            major: major.parse().map_err(|_| format!("not a device number: {s}"))?,
            minor: minor.parse().map_err(|_| format!("not a device number: {s}"))?,
        })
    }
}

/// One event from the trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Event {
    /// When it fired, ns on the trace clock (`mono`: CLOCK_MONOTONIC); the text format has
    /// microsecond resolution.
    pub(crate) ts_ns: u64,
    pub(crate) cpu: u32,
    /// The task running when it fired (for a stack, the task that is switching out).
    pub(crate) pid: u32,
    /// Its thread group (process), when the trace recorded it (`record-tgid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tgid: Option<u32>,
    /// That task's name as the trace knew it (`<...>` when it did not), interned: a trace
    /// holds a million events and a few dozen names.
    pub(crate) comm: TaskName,
    pub(crate) kind: EventKind,
}

impl Event {
    /// The bytes this event holds: itself and what its kind keeps on the heap (a stack's
    /// frames are shared, and counted once by the parser that read them).
    pub(crate) fn held_bytes(&self) -> u64 {
        let heap = match &self.kind {
            EventKind::Jbd2RunStats(_) => std::mem::size_of::<Jbd2RunStats>(),
            EventKind::BalanceDirtyPages(_) => std::mem::size_of::<BalanceDirtyPages>(),
            EventKind::GlobalDirtyState(_) => std::mem::size_of::<GlobalDirtyState>(),
            EventKind::SyscallEnter { args, .. } => std::mem::size_of_val::<[(Word, u64)]>(args),
            EventKind::Marker { text } => text.capacity(),
            EventKind::Other { body, .. } => body.len(),
            _ => 0,
        };
        (std::mem::size_of::<Event>() + heap) as u64
    }
}

/// A jbd2 commit phase event: `jbd2_start_commit` ... `jbd2_end_commit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Jbd2Phase {
    Start,
    Locking,
    Flushing,
    Logging,
    End,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub(crate) enum EventKind {
    /// `sched:sched_switch`: `prev` leaves the CPU in `prev_state` (`R`/`R+` preempted,
    /// `S` sleeping, `D` uninterruptible), `next` gets it.
    SchedSwitch {
        prev_comm: TaskName,
        prev_pid: u32,
        prev_state: Word,
        next_comm: TaskName,
        next_pid: u32,
    },
    /// `sched:sched_waking` (or `sched_wakeup`, `sched_wakeup_new`): task `pid` was made
    /// runnable by the event's own task.
    /// Made in an interrupt (the line's hardirq/softirq/NMI flag: `h`, `H`, `s`, `z`, `Z`),
    /// the event's task being only the one it interrupted.
    SchedWakeup {
        comm: TaskName,
        pid: u32,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        in_interrupt: bool,
    },
    /// `sched:sched_process_fork`: `parent_pid` made task `child_pid` (a process or a thread).
    SchedProcessFork {
        parent_pid: u32,
        child_pid: u32,
        child_comm: TaskName,
    },
    /// `sched:sched_process_exec`: the event's task ran a new program, which names it
    /// `comm` from now on (the file's name, cut to 15 bytes, as the kernel names it).
    SchedProcessExec { comm: TaskName },
    /// `syscalls:sys_enter_NAME`: the event's task enters system call `name` (without the
    /// `sys_` prefix) with these arguments, by name.
    SyscallEnter { name: Word, args: Box<[(Word, u64)]> },
    /// `syscalls:sys_exit_NAME`: system call `name` returns `ret` (a negative errno when it
    /// failed).
    SyscallExit { name: Word, ret: i64 },
    /// The kernel stack a `stacktrace` trigger printed, innermost frame first, offsets and
    /// module names removed.
    Stack { frames: Frames },
    /// `jbd2:jbd2_{start_commit,commit_locking,commit_flushing,commit_logging,end_commit}`.
    Jbd2Commit {
        phase: Jbd2Phase,
        dev: Dev,
        transaction: u32,
    },
    /// `jbd2:jbd2_run_stats`, at the end of a commit (boxed, as the other large and rare
    /// events are: every event is as large as the largest kind).
    Jbd2RunStats(Box<Jbd2RunStats>),
    /// `writeback:balance_dirty_pages`.
    BalanceDirtyPages(Box<BalanceDirtyPages>),
    /// `writeback:folio_wait_writeback`: the task waits for page `index` of inode `ino` to
    /// finish writeback.
    FolioWaitWriteback { bdi: Word, ino: u64, index: u64 },
    /// `writeback:writeback_start` / `writeback_written`: a flusher work item on `bdi`.
    Writeback {
        done: bool,
        bdi: Word,
        nr_pages: i64,
        reason: Word,
    },
    /// `writeback:global_dirty_state`.
    GlobalDirtyState(Box<GlobalDirtyState>),
    /// `block:block_rq_issue`: a request goes to the driver.
    BlockRqIssue {
        dev: Dev,
        rwbs: Word,
        bytes: u64,
        sector: u64,
        sectors: u32,
    },
    /// `block:block_rq_complete`: a request is done (`error` is a negative errno or 0).
    BlockRqComplete {
        dev: Dev,
        rwbs: Word,
        sector: u64,
        sectors: u32,
        error: i32,
    },
    /// `ext4:ext4_sync_file_enter` / `ext4_sync_file_exit`.
    Ext4SyncFile { exit: bool, dev: Dev, ino: u64 },
    /// `xfs:xfs_log_force`: a log force up to `lsn` (0: everything), asked by `caller`.
    XfsLogForce { dev: Dev, lsn: u64, caller: Word },
    /// `xfs:xfs_file_fsync`.
    XfsFileFsync { dev: Dev, ino: u64 },
    /// `btrfs:btrfs_transaction_commit`: the commit of transaction `generation`.
    BtrfsTransactionCommit { generation: u64 },
    /// `btrfs:btrfs_sync_file`.
    BtrfsSyncFile { ino: u64, datasync: bool },
    /// A line written to `trace_marker`.
    Marker { text: String },
    /// Any other event, unparsed.
    Other { name: Word, body: Box<str> },
}

/// `jbd2:jbd2_run_stats`, at the end of a commit: how long each phase took, in ms
/// (jiffies converted by the kernel, so one jiffy is the resolution).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Jbd2RunStats {
    pub(crate) dev: Dev,
    pub(crate) transaction: u32,
    pub(crate) wait_ms: u32,
    pub(crate) request_delay_ms: u32,
    pub(crate) running_ms: u32,
    pub(crate) locked_ms: u32,
    pub(crate) flushing_ms: u32,
    pub(crate) logging_ms: u32,
    pub(crate) handle_count: u32,
    pub(crate) blocks: u32,
    pub(crate) blocks_logged: u32,
}

/// `writeback:balance_dirty_pages`: the task dirtied pages and is throttled; `pause_ms` is
/// the sleep now starting, `paused_ms` what it slept already in this call. Page counts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct BalanceDirtyPages {
    pub(crate) bdi: Word,
    pub(crate) limit_pages: u64,
    pub(crate) setpoint_pages: u64,
    pub(crate) dirty_pages: u64,
    pub(crate) paused_ms: u64,
    pub(crate) pause_ms: i64,
}

/// `writeback:global_dirty_state`, page counts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct GlobalDirtyState {
    pub(crate) dirty_pages: u64,
    pub(crate) writeback_pages: u64,
    pub(crate) background_thresh_pages: u64,
    pub(crate) thresh_pages: u64,
}

/// The request flags of a block event (`rwbs`, block/blk-core.c `blk_fill_rwbs`): an
/// optional leading `F` for a preflush, the operation (`W`, `R`, `D`, `F` for a flush,
/// `N`), then `F` for FUA, `A` readahead, `S` sync, `M` metadata.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Rwbs {
    pub(crate) preflush: bool,
    pub(crate) op: char,
    pub(crate) fua: bool,
}

impl Rwbs {
    pub(crate) fn parse(rwbs: &str) -> Rwbs {
        let b: Vec<char> = rwbs.chars().collect();
        let preflush = b.len() >= 2 && b[0] == 'F';
        let i = usize::from(preflush);
        Rwbs {
            preflush,
            op: b.get(i).copied().unwrap_or('N'),
            fua: b.get(i + 1) == Some(&'F'),
        }
    }

    /// A device cache flush: a flush request, or a write that carries one.
    pub(crate) fn is_flush(self) -> bool {
        self.op == 'F' || self.preflush
    }

    pub(crate) fn is_write(self) -> bool {
        self.op == 'W'
    }
}
