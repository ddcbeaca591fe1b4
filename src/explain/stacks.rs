//! What a sleeping thread waited for, read from the kernel stack printed when it left the
//! CPU (the `stacktrace` trigger on `sched_switch`).
//!
//! The innermost frame that a rule knows decides: a thread asleep in `folio_wait_writeback`
//! called from `file_write_and_wait_range` from `ext4_sync_file` waits for data writeback,
//! not for the journal. Scheduler and wait-queue frames (`schedule`, `io_schedule`,
//! `bit_wait_io`...) say only *that* it slept and are skipped. The rules name functions of
//! Linux 6.x (fs/ext4/fsync.c, fs/jbd2/commit.c, fs/xfs/xfs_log.c, fs/btrfs/transaction.c,
//! mm/page-writeback.c, block/blk-flush.c); a stack no rule knows is reported as it is.

use serde::{Deserialize, Serialize};

/// What a wait was for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WaitKind {
    /// Pages of a file finishing writeback (`folio_wait_writeback`, fdatawait, btrfs ordered
    /// extents).
    DataWriteback,
    /// A journal commit: jbd2 (`jbd2_log_wait_commit`, a locked transaction), the xfs log
    /// (a log force), a btrfs transaction or log-tree commit.
    JournalCommit,
    /// A device cache flush issued by the thread itself (`blkdev_issue_flush`).
    DeviceFlush,
    /// Dirty throttling: a pause in `balance_dirty_pages`.
    DirtyThrottle,
    /// The journal thread writing the journal (its own buffers, the commit record).
    JournalWrite,
    /// The journal thread waiting for handles still open on the transaction.
    JournalHandles,
    /// User-space synchronisation: a futex (a lock, a condition variable), until another
    /// task wakes it.
    UserLock,
    /// Anything else: the stack says what.
    Other,
}

/// Frames that say only that the thread slept, skipped when reading a stack.
const SCHEDULER_FRAMES: &[&str] = &[
    "trace_event_raw_event_sched_switch",
    "__traceiter_sched_switch",
    "__schedule",
    "schedule",
    "schedule_idle",
    "schedule_timeout",
    "schedule_hrtimeout_range",
    "schedule_hrtimeout_range_clock",
    "schedule_preempt_disabled",
    "io_schedule",
    "io_schedule_timeout",
    "bit_wait_io",
    "bit_wait",
    "__wait_on_bit",
    "__wait_on_bit_lock",
    "out_of_line_wait_on_bit",
    "out_of_line_wait_on_bit_lock",
    "__wait_on_buffer",
    "wait_on_buffer",
    "__wait_for_common",
    "wait_for_common",
    "wait_for_common_io",
    "wait_for_completion",
    "wait_for_completion_io",
    "wait_for_completion_io_timeout",
    "wait_for_completion_timeout",
    "folio_wait_bit_common",
    "submit_bio_wait",
];

/// Frame → what the wait is for; the first match from the innermost frame wins.
const RULES: &[(&str, WaitKind)] = &[
    ("balance_dirty_pages", WaitKind::DirtyThrottle),
    ("balance_dirty_pages_ratelimited_flags", WaitKind::DirtyThrottle),
    ("blkdev_issue_flush", WaitKind::DeviceFlush),
    ("xfs_blkdev_issue_flush", WaitKind::DeviceFlush),
    ("wait_dev_flush", WaitKind::DeviceFlush),
    ("folio_wait_writeback", WaitKind::DataWriteback),
    ("folio_wait_stable", WaitKind::DataWriteback),
    ("wait_on_page_writeback", WaitKind::DataWriteback),
    ("__filemap_fdatawait_range", WaitKind::DataWriteback),
    ("filemap_fdatawait_range", WaitKind::DataWriteback),
    ("filemap_fdatawait_range_keep_errors", WaitKind::DataWriteback),
    ("filemap_fdatawait_keep_errors", WaitKind::DataWriteback),
    ("file_write_and_wait_range", WaitKind::DataWriteback),
    // Submitting the file's dirty pages (where block-layer throttling makes a sync call
    // wait for the writes already queued on the device).
    ("__filemap_fdatawrite_range", WaitKind::DataWriteback),
    ("filemap_fdatawrite_range", WaitKind::DataWriteback),
    ("filemap_fdatawrite_wbc", WaitKind::DataWriteback),
    ("btrfs_fdatawrite_range", WaitKind::DataWriteback),
    ("filemap_write_and_wait_range", WaitKind::DataWriteback),
    ("journal_finish_inode_data_buffers", WaitKind::DataWriteback),
    // syncfs and sync: the flusher writing back every dirty inode of the filesystem.
    ("wb_wait_for_completion", WaitKind::DataWriteback),
    ("sync_inodes_sb", WaitKind::DataWriteback),
    ("btrfs_wait_ordered_range", WaitKind::DataWriteback),
    ("btrfs_start_ordered_extent", WaitKind::DataWriteback),
    ("btrfs_wait_ordered_extents", WaitKind::DataWriteback),
    ("btrfs_wait_ordered_roots", WaitKind::DataWriteback),
    // ext4 / jbd2: the caller waits for a commit, or for a transaction locked by one.
    ("jbd2_log_wait_commit", WaitKind::JournalCommit),
    ("jbd2_complete_transaction", WaitKind::JournalCommit),
    ("jbd2_journal_force_commit", WaitKind::JournalCommit),
    ("wait_transaction_locked", WaitKind::JournalCommit),
    ("wait_transaction_switching", WaitKind::JournalCommit),
    ("start_this_handle", WaitKind::JournalCommit),
    // A metadata buffer the committing transaction is writing to the log (BH_Shadow,
    // fs/jbd2/transaction.c): a write() that must modify it waits for that commit.
    ("do_get_write_access", WaitKind::JournalCommit),
    // The jbd2 thread itself.
    ("jbd2_journal_wait_updates", WaitKind::JournalHandles),
    ("journal_wait_on_commit_record", WaitKind::JournalWrite),
    ("jbd2_journal_commit_transaction", WaitKind::JournalWrite),
    // xfs: a log force waits for the CIL push and the iclog writes.
    ("xlog_wait_on_iclog", WaitKind::JournalCommit),
    ("xlog_wait", WaitKind::JournalCommit),
    ("xlog_cil_force_seq", WaitKind::JournalCommit),
    ("xfs_log_force_seq", WaitKind::JournalCommit),
    ("xfs_log_force", WaitKind::JournalCommit),
    ("__xfs_log_force_lsn", WaitKind::JournalCommit),
    ("xlog_force_lsn", WaitKind::JournalCommit),
    // btrfs: a full transaction commit, or the log tree's.
    ("wait_for_commit", WaitKind::JournalCommit),
    ("btrfs_commit_transaction", WaitKind::JournalCommit),
    ("wait_log_commit", WaitKind::JournalCommit),
    ("wait_for_writer", WaitKind::JournalCommit),
    ("btrfs_sync_log", WaitKind::JournalCommit),
    ("btrfs_wait_tree_log_extents", WaitKind::JournalCommit),
    ("wait_current_trans", WaitKind::JournalCommit),
    // A futex: a lock or condition variable of the program's own (kernel/futex/waitwake.c).
    ("futex_do_wait", WaitKind::UserLock),
    ("futex_wait_queue", WaitKind::UserLock),
    ("futex_wait_queue_me", WaitKind::UserLock),
    ("__futex_wait", WaitKind::UserLock),
    ("futex_wait", WaitKind::UserLock),
];

/// The frames below the scheduler: where the thread was when it went to sleep.
pub(crate) fn meaningful(frames: &[String]) -> &[String] {
    let skip = frames
        .iter()
        .position(|f| !SCHEDULER_FRAMES.contains(&f.as_str()))
        .unwrap_or(frames.len());
    &frames[skip..]
}

/// What a thread asleep with these frames (innermost first) waited for.
pub(crate) fn classify(frames: &[String]) -> WaitKind {
    meaningful(frames)
        .iter()
        .find_map(|f| RULES.iter().find(|(name, _)| name == f).map(|(_, kind)| *kind))
        .unwrap_or(WaitKind::Other)
}

/// The top `n` meaningful frames, for a wait no rule knows: `rwsem_down_write_slowpath ←
/// down_write ← ext4_buffered_write_iter`.
pub(crate) fn top_frames(frames: &[String], n: usize) -> Vec<String> {
    meaningful(frames)
        .iter()
        .filter(|f| !f.starts_with("entry_SYSCALL") && !f.starts_with("do_syscall"))
        .take(n)
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn innermost_known_frame_decides() {
        // fsync waiting for its own data, then for the commit, then for a flush.
        let own_data = frames("trace_event_raw_event_sched_switch __schedule schedule io_schedule folio_wait_bit_common folio_wait_writeback __filemap_fdatawait_range file_write_and_wait_range ext4_sync_file do_fsync");
        assert_eq!(classify(&own_data), WaitKind::DataWriteback);
        let commit = frames("__schedule schedule jbd2_log_wait_commit ext4_fc_commit ext4_sync_file do_fsync");
        assert_eq!(classify(&commit), WaitKind::JournalCommit);
        let flush = frames(
            "__schedule schedule io_schedule wait_for_completion_io submit_bio_wait blkdev_issue_flush ext4_sync_file",
        );
        assert_eq!(classify(&flush), WaitKind::DeviceFlush);
        let throttle = frames("__schedule schedule schedule_timeout io_schedule_timeout balance_dirty_pages balance_dirty_pages_ratelimited_flags generic_perform_write");
        assert_eq!(classify(&throttle), WaitKind::DirtyThrottle);
        // The jbd2 thread waiting for ordered data is data writeback, not its own log write.
        let jbd2_data = frames("__schedule schedule io_schedule folio_wait_bit_common folio_wait_writeback __filemap_fdatawait_range filemap_fdatawait_range_keep_errors journal_finish_inode_data_buffers jbd2_journal_commit_transaction kjournald2");
        assert_eq!(classify(&jbd2_data), WaitKind::DataWriteback);
        let jbd2_log = frames("trace_event_raw_event_sched_switch __traceiter_sched_switch __schedule schedule io_schedule bit_wait_io __wait_on_bit out_of_line_wait_on_bit jbd2_journal_commit_transaction kjournald2 kthread");
        assert_eq!(classify(&jbd2_log), WaitKind::JournalWrite);
        let throttled_data = frames("__schedule schedule io_schedule rq_qos_wait wbt_wait __rq_qos_throttle blk_mq_submit_bio __submit_bio btrfs_submit_bbio extent_write_cache_pages btrfs_writepages do_writepages filemap_fdatawrite_wbc __filemap_fdatawrite_range btrfs_fdatawrite_range start_ordered_ops btrfs_sync_file");
        assert_eq!(classify(&throttled_data), WaitKind::DataWriteback);
        let throttled_commit = frames("__schedule schedule io_schedule rq_qos_wait wbt_wait __rq_qos_throttle blk_mq_submit_bio __submit_bio submit_bio_noacct_nocheck write_all_supers btrfs_commit_transaction btrfs_sync_file");
        assert_eq!(classify(&throttled_commit), WaitKind::JournalCommit);
        let shadowed = frames("__schedule schedule io_schedule bit_wait_io __wait_on_bit out_of_line_wait_on_bit do_get_write_access jbd2_journal_get_write_access __ext4_journal_get_write_access ext4_reserve_inode_write __ext4_mark_inode_dirty ext4_dirty_inode __mark_inode_dirty generic_update_time file_modified ext4_buffered_write_iter vfs_write");
        assert_eq!(classify(&shadowed), WaitKind::JournalCommit);
        let xfs = frames("__schedule schedule xlog_wait_on_iclog xfs_log_force_seq xfs_file_fsync");
        assert_eq!(classify(&xfs), WaitKind::JournalCommit);
        let condvar = frames(
            "__schedule schedule futex_wait_queue __futex_wait futex_wait do_futex __x64_sys_futex do_syscall_64",
        );
        assert_eq!(classify(&condvar), WaitKind::UserLock);
    }

    #[test]
    fn unknown_waits_keep_their_top_frames() {
        let lookup = frames("trace_event_raw_event_sched_switch __traceiter_sched_switch __schedule schedule io_schedule bit_wait_io __wait_on_bit out_of_line_wait_on_bit __ext4_find_entry ext4_lookup __lookup_slow walk_component do_syscall_64 entry_SYSCALL_64_after_hwframe");
        assert_eq!(classify(&lookup), WaitKind::Other);
        assert_eq!(
            top_frames(&lookup, 3),
            ["__ext4_find_entry", "ext4_lookup", "__lookup_slow"]
        );
        let short = frames("schedule do_syscall_64 entry_SYSCALL_64_after_hwframe");
        assert!(top_frames(&short, 3).is_empty());
    }
}
