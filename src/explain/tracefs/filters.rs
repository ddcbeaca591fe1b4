//! Which events are enabled, per system, and the filters that keep them to the watched
//! threads, the journal threads and the filesystem's device; and, for a process tree
//! (`exec --explain`), the events of its instance, which the kernel itself keeps to the tree.

use super::{Task, TracedFs, Watch};
use crate::kernel::process;

/// The events enabled, per system, with the filter each gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Filter {
    /// Context switches of the watched and journal threads.
    Switch,
    /// Wakeups of the watched and journal threads.
    Wakeup,
    /// Fired by a watched thread itself.
    Current,
    /// On the filesystem's device (`dev`).
    FsDev,
    /// On the disk (`dev`).
    Disk,
    /// On the disk's bdi (`name`).
    Bdi,
    None,
}

/// The events of the threads followed: what they did on and off the CPU, and their own
/// writeback waits. Wakeups are traced as `sched_waking`, which fires in the waker's own
/// context (`sched_wakeup` fires on the woken task's CPU, in the idle task's context when
/// the waker queued the wakeup there, which hides who woke it).
const THREAD_EVENTS: [(&str, Filter); 5] = [
    ("sched/sched_switch", Filter::Switch),
    ("sched/sched_waking", Filter::Wakeup),
    ("writeback/balance_dirty_pages", Filter::Current),
    ("writeback/folio_wait_writeback", Filter::Current),
    ("writeback/global_dirty_state", Filter::Current),
];

/// The events of the filesystem and the disk under it, and with `threads` those of the
/// threads followed (left out when a process tree's own instance has them).
pub(super) fn events_for(fs: &TracedFs, threads: bool) -> Vec<(&'static str, Filter)> {
    let mut v = if threads { THREAD_EVENTS.to_vec() } else { Vec::new() };
    v.extend([
        ("writeback/writeback_start", Filter::Bdi),
        ("writeback/writeback_written", Filter::Bdi),
        ("block/block_rq_issue", Filter::Disk),
        ("block/block_rq_complete", Filter::Disk),
    ]);
    if fs.is_ext4() {
        v.extend([
            ("jbd2/jbd2_start_commit", Filter::FsDev),
            ("jbd2/jbd2_commit_locking", Filter::FsDev),
            ("jbd2/jbd2_commit_flushing", Filter::FsDev),
            ("jbd2/jbd2_commit_logging", Filter::FsDev),
            ("jbd2/jbd2_end_commit", Filter::FsDev),
            ("jbd2/jbd2_run_stats", Filter::FsDev),
        ]);
    }
    match fs.fstype.as_str() {
        "xfs" => v.push(("xfs/xfs_log_force", Filter::FsDev)),
        "btrfs" => v.push(("btrfs/btrfs_transaction_commit", Filter::None)),
        _ => {}
    }
    v
}

/// The threads that commit the filesystem's journal: `jbd2/<dev>-<inode>` for ext3/ext4
/// (the name cut to 15 bytes, as the kernel keeps it), `btrfs-transaction` for btrfs (all
/// of them: its name does not say which filesystem). xfs writes its log from shared
/// workqueues, whose threads cannot be told apart; its log forces are traced as events.
pub(super) fn journal_threads(fs: &TracedFs) -> Vec<Task> {
    let prefix = match (fs.is_ext4(), fs.fstype.as_str(), &fs.dev_name) {
        (true, _, Some(name)) => format!("jbd2/{name}-"),
        (_, "btrfs", _) => "btrfs-transacti".to_string(),
        _ => return Vec::new(),
    };
    let prefix: String = prefix.chars().take(15).collect();
    process::pids()
        .into_iter()
        .filter_map(|pid| {
            let comm = process::comm(pid)?;
            comm.starts_with(&prefix).then_some(Task { pid, comm })
        })
        .collect()
}

/// `open(2)` flag bits: O_DSYNC, which O_SYNC includes, and what O_SYNC adds
/// (include/uapi/asm-generic/fcntl.h).
pub(crate) const O_DSYNC: u64 = 0o10000;
pub(crate) const O_SYNC_ONLY: u64 = 0o4000000;
/// `msync(2)`'s MS_SYNC (include/uapi/asm-generic/mman-common.h).
pub(crate) const MS_SYNC: u64 = 4;

/// `fcntl(2)` commands that copy a descriptor: F_DUPFD and F_DUPFD_CLOEXEC
/// (include/uapi/linux/fcntl.h).
pub(crate) const F_DUPFD: u64 = 0;
pub(crate) const F_DUPFD_CLOEXEC: u64 = 1030;

/// The system calls traced for a process tree, each with the filter of its entry event:
/// the sync calls, the writes (kept only on a file opened O_SYNC or O_DSYNC, or with
/// RWF_DSYNC), and the opens with O_DSYNC, copies (`dup`s) and closes that tell which
/// files those are. Each has its exit event too, but `close`, whose result does not
/// matter here.
pub(super) fn tree_syscalls() -> Vec<(&'static str, Option<String>)> {
    vec![
        ("fsync", None),
        ("fdatasync", None),
        ("sync_file_range", None),
        ("syncfs", None),
        ("sync", None),
        ("msync", Some(format!("flags & {MS_SYNC}"))),
        ("write", None),
        ("pwrite64", None),
        ("writev", None),
        ("pwritev", None),
        ("pwritev2", None),
        ("openat", Some(format!("flags & {O_DSYNC}"))),
        ("open", Some(format!("flags & {O_DSYNC}"))),
        ("dup", None),
        ("dup2", None),
        ("dup3", None),
        ("fcntl", Some(format!("cmd == {F_DUPFD} || cmd == {F_DUPFD_CLOEXEC}"))),
        ("close", None),
    ]
}

/// The events of a process tree's instance besides its system calls: the thread events
/// (unfiltered: the instance's pid list keeps them to the tree), its forks, and the
/// programs its processes run (which name them where the trace's own names fail).
pub(super) fn tree_events() -> Vec<&'static str> {
    THREAD_EVENTS
        .iter()
        .map(|(e, _)| *e)
        .chain(["sched/sched_process_fork", "sched/sched_process_exec"])
        .collect()
}

/// The stack trigger: the kernel stack at each uninterruptible sleep (`D`: I/O, page,
/// journal and lock waits in the kernel), which says what it waited for. Interruptible
/// sleeps (`S`: futexes, sockets, timers) get none: a group commit's followers sleep
/// there once a commit, and what ends such a sleep is told by who woke it.
pub(super) const STACK_STATES: &str = "prev_state & 2";

/// The filter expressions for the threads to follow.
pub(super) struct Filters {
    pub(super) switch: String,
    pub(super) trigger: String,
    pub(super) wakeup: String,
    pub(super) current: String,
}

pub(super) fn filters(watch: &Watch, journal: &[Task]) -> Filters {
    let pids: Vec<u32> = watch
        .tids
        .iter()
        .copied()
        .chain(journal.iter().map(|t| t.pid))
        .collect();
    let any = |terms: Vec<String>| terms.join(" || ");
    let by = |fields: &[&str], comm_fields: &[&str]| {
        let mut terms = Vec::new();
        for f in fields {
            terms.extend(pids.iter().map(|p| format!("{f} == {p}")));
        }
        for f in comm_fields {
            terms.extend(watch.comms.iter().map(|c| format!("{f} == \"{c}\"")));
        }
        any(terms)
    };
    Filters {
        switch: by(&["prev_pid", "next_pid"], &["prev_comm", "next_comm"]),
        trigger: format!(
            "stacktrace if ({}) && {STACK_STATES}",
            by(&["prev_pid"], &["prev_comm"])
        ),
        wakeup: by(&["pid"], &["comm"]),
        // Only the watched threads: their own sync calls, throttling and page waits.
        current: any(watch
            .tids
            .iter()
            .map(|p| format!("common_pid == {p}"))
            .chain(watch.comms.iter().map(|c| format!("comm == \"{c}\"")))
            .collect()),
    }
}
