//! The journal commits a wait covered: jbd2 transactions with where the journal thread's
//! time went, xfs log forces, btrfs transaction commits.

use super::super::events::EventKind;
use super::super::stacks::{classify, top_frames, WaitKind};
use super::causes::{Commit, Share};
use super::index::Index;
use super::index::UNSEEN_SWITCH;
use super::Call;

impl Index<'_> {
    /// The commits the call's wait in [a, b] covered.
    pub(super) fn commits_during(&self, call: &Call, a: u64, b: u64, frames: &[String]) -> Vec<Commit> {
        match self.trace.fs.fstype.as_str() {
            "xfs" => self.xfs_log_forces(call, a, b),
            "btrfs" => self.btrfs_commits(call, a, b, frames),
            _ => self.jbd2_commits(a, b),
        }
    }

    pub(super) fn jbd2_commits(&self, a: u64, b: u64) -> Vec<Commit> {
        self.commits
            .iter()
            .filter_map(|c| {
                let (start, end) = c.bounds;
                let overlap = end.min(b).saturating_sub(start.max(a));
                (overlap > 0).then(|| Commit {
                    name: format!("jbd2 transaction {}", c.transaction),
                    start_ns: c.start.map(|s| self.run_ns(s)),
                    duration_ns: c.start.zip(c.end).map(|(s, e)| e.saturating_sub(s)),
                    overlap_ns: overlap,
                    waited_for: self.journal_thread_time(start, end),
                    flushes: self.flushes_completed(start, end),
                    device_write_bytes: self.write_bytes(start, end),
                    blocks_logged: c.blocks_logged,
                })
            })
            .collect()
    }

    pub(super) fn xfs_log_forces(&self, call: &Call, a: u64, b: u64) -> Vec<Commit> {
        let call_start = self.trace.origin_ns + call.start_ns;
        let lsn = self.last_event_of(call.tid, call_start, b, |k| match k {
            EventKind::XfsLogForce { lsn, .. } => Some(*lsn),
            _ => None,
        });
        let (name, writes) = unnamed_commit("xfs", &[]).unwrap_or_default();
        vec![self.split_by_flushes(told_by_event(name, lsn), writes, a, b)]
    }

    /// A commit seen only as the wait in [a, b] for it: its time split into the cache
    /// flushes in flight meanwhile and the `writes` that make up the rest.
    fn split_by_flushes(&self, name: String, writes: &str, a: u64, b: u64) -> Commit {
        commit_by_flushes(
            name,
            writes,
            b - a,
            self.flush_ns(a, b),
            self.flushes_completed(a, b),
            self.write_bytes(a, b),
        )
    }

    pub(super) fn btrfs_commits(&self, call: &Call, a: u64, b: u64, frames: &[String]) -> Vec<Commit> {
        let (name, writes) = unnamed_commit("btrfs", frames).unwrap_or_default();
        if !full_btrfs_commit(frames) {
            return vec![self.split_by_flushes(name.into(), writes, a, b)];
        }
        // The commit event fires at the end of btrfs_commit_transaction: in the calling
        // thread once its last wait is over (before the call returns), or in the
        // btrfs-transaction thread during the wait.
        let call_end = self.trace.origin_ns + call.start_ns + call.latency_ns;
        let generation = self
            .trace
            .events_between(a, call_end)
            .iter()
            .filter(|e| e.ts_ns <= b || e.pid == call.tid)
            .find_map(|e| match e.kind {
                EventKind::BtrfsTransactionCommit { generation } => Some(generation),
                _ => None,
            });
        let mut commit = self.split_by_flushes(told_by_event(name, generation), writes, a, b);
        if !self.trace.journal_threads.is_empty() {
            let thread_time = self.journal_thread_time(a, b);
            if !thread_time.is_empty() {
                commit.waited_for = thread_time;
            }
        }
        vec![commit]
    }

    /// Where the journal thread's time went within [from, to]: its off-CPU intervals by
    /// stack (journal writes split into the time a cache flush was in flight and the rest),
    /// and on CPU.
    pub(super) fn journal_thread_time(&self, from: u64, to: u64) -> Vec<Share> {
        let Some(thread) = self
            .trace
            .journal_threads
            .iter()
            .find(|t| self.off_cpu.contains_key(&t.pid))
        else {
            return Vec::new();
        };
        let mut by: Vec<(String, u64)> = Vec::new();
        let mut add = |what: &str, ns: u64| match by.iter_mut().find(|(w, _)| w == what) {
            Some(x) => x.1 += ns,
            None => by.push((what.to_string(), ns)),
        };
        let mut off = 0;
        // One thread's intervals are disjoint and in order: from the first not ended by `from`.
        let intervals = &self.off_cpu[&thread.pid];
        let first = intervals.partition_point(|iv| iv.end.is_some_and(|end| end <= from));
        for iv in intervals[first..].iter().take_while(|iv| iv.start < to) {
            let a = iv.start.max(from);
            let b = iv.end.unwrap_or(self.trace.stopped_ns).min(to);
            if b <= a {
                continue;
            }
            off += b - a;
            if iv.state.as_str().starts_with('R') {
                add("waiting for a CPU", b - a);
                continue;
            }
            if iv.state == UNSEEN_SWITCH {
                add("unattributed (switch onto a CPU not traced)", b - a);
                continue;
            }
            let Some(frames) = &iv.stack else {
                add("unattributed (no stack)", b - a);
                continue;
            };
            match classify(frames) {
                WaitKind::DataWriteback => add("ordered data writeback", b - a),
                WaitKind::JournalWrite | WaitKind::DeviceFlush => {
                    let flush = self.flush_ns(a, b);
                    add("cache flushes", flush);
                    add("journal writes", (b - a) - flush);
                }
                WaitKind::JournalHandles => add("open handles", b - a),
                WaitKind::DirtyThrottle => add("dirty throttling", b - a),
                WaitKind::JournalCommit => add("an earlier commit", b - a),
                WaitKind::UserLock | WaitKind::Other => add(&top_frames(frames, 1).join(""), b - a),
            }
        }
        add("on CPU", (to - from).saturating_sub(off));
        shares(by)
    }
}

/// Whether a btrfs wait is for a whole transaction's commit (its stack: the commit or a wait
/// for one), not for an fsync's log tree sync (btrfs_sync_log).
fn full_btrfs_commit(frames: &[String]) -> bool {
    frames.iter().any(|f| {
        matches!(
            f.as_str(),
            "btrfs_commit_transaction" | "wait_for_commit" | "wait_current_trans"
        )
    })
}

/// The commit a wait for the journal of a filesystem of type `fstype` was for, when no
/// event names it, by the wait's stack: its name, and what its time beside the cache
/// flushes went to. None for jbd2's, which its own events name.
pub(crate) fn unnamed_commit(fstype: &str, frames: &[String]) -> Option<(&'static str, &'static str)> {
    match fstype {
        "xfs" => Some(("xfs log force", "log and data writes")),
        "btrfs" if full_btrfs_commit(frames) => Some(("btrfs transaction commit", "tree and data writes")),
        "btrfs" => Some(("btrfs log tree sync", "log tree and data writes")),
        _ => None,
    }
}

/// An [`unnamed_commit`]'s name with what its event told, where it did: an xfs log force's
/// checkpoint sequence (`xfs_log_force_seq` traces it in the event's `lsn`; 0 forces the
/// whole log), a btrfs transaction commit's generation (the filesystem's when the commit
/// ended: the committed transaction's, or the next one's if a writer has already opened it).
pub(crate) fn told_by_event(name: &str, told: Option<u64>) -> String {
    match (name, told) {
        ("xfs log force", Some(0)) => format!("{name} (all)"),
        ("xfs log force", Some(seq)) => format!("{name} (checkpoint sequence {seq})"),
        ("btrfs transaction commit", Some(generation)) => format!("{name} (gen {generation})"),
        _ => name.to_string(),
    }
}

/// A commit known only by the wait for it: `waited_ns` split into the cache flushes
/// (`flush_ns`, at most the wait) and the `writes` that make up the rest.
pub(crate) fn commit_by_flushes(
    name: String,
    writes: &str,
    waited_ns: u64,
    flush_ns: u64,
    flushes: u32,
    device_write_bytes: u64,
) -> Commit {
    let flush_ns = flush_ns.min(waited_ns);
    Commit {
        name,
        start_ns: None,
        duration_ns: None,
        overlap_ns: waited_ns,
        waited_for: shares(vec![
            ("cache flushes".into(), flush_ns),
            (writes.into(), waited_ns - flush_ns),
        ]),
        flushes,
        device_write_bytes,
        blocks_logged: None,
    }
}

/// Shares, zero ones dropped, largest first.
pub(crate) fn shares(v: Vec<(String, u64)>) -> Vec<Share> {
    let mut out: Vec<Share> = v
        .into_iter()
        .filter(|(_, ns)| *ns > 0)
        .map(|(what, ns)| Share { what, ns })
        .collect();
    out.sort_by_key(|s| std::cmp::Reverse(s.ns));
    out
}
