//! Which events are enabled, per system, and the filters that keep them to the watched
//! threads, the journal threads and the filesystem's device.

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

pub(super) fn events_for(fs: &TracedFs) -> Vec<(&'static str, Filter)> {
    let mut v = vec![
        ("sched/sched_switch", Filter::Switch),
        ("sched/sched_wakeup", Filter::Wakeup),
        ("writeback/balance_dirty_pages", Filter::Current),
        ("writeback/folio_wait_writeback", Filter::Current),
        ("writeback/global_dirty_state", Filter::Current),
        ("writeback/writeback_start", Filter::Bdi),
        ("writeback/writeback_written", Filter::Bdi),
        ("block/block_rq_issue", Filter::Disk),
        ("block/block_rq_complete", Filter::Disk),
    ];
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
            "stacktrace if ({}) && prev_state & 3",
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
