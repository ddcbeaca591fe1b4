//! The trace indexed for attribution: each followed thread's off-CPU intervals (with the
//! stack and the wakeup of each), the jbd2 commits with their phases, and the device's
//! flushes and writes by time.

use std::collections::HashMap;

use super::super::events::{EventKind, Frames, Jbd2Phase, Rwbs, Word};
use super::super::tracefs::Trace;
use super::causes::INTERRUPT_WAKER;
use super::Span;

/// The state of the gap between a wakeup and the thread's next own event, when the switch
/// that put it back on a CPU was not traced.
pub(super) const UNSEEN_SWITCH: &str = "?";

/// One interval a thread spent off CPU.
#[derive(Clone, Debug)]
pub(super) struct OffCpu {
    pub(super) start: u64,
    /// None: still off CPU when the trace stopped.
    pub(super) end: Option<u64>,
    pub(super) state: Word,
    pub(super) stack: Option<Frames>,
    /// When it was woken (made runnable), if the trace saw it, and by which task.
    pub(super) woken_ns: Option<u64>,
    pub(super) woken_by: Option<(u32, crate::measure::TaskName)>,
}

/// A jbd2 commit as the trace saw it.
#[derive(Clone, Debug, Default)]
pub(super) struct Jbd2Commit {
    pub(super) transaction: u32,
    pub(super) start: Option<u64>,
    pub(super) end: Option<u64>,
    pub(super) blocks_logged: Option<u32>,
    /// Where the commit ran: from its start to its end, or, where the kernel dropped one of
    /// those events, to the neighbouring commit's (one journal commits one at a time).
    pub(super) bounds: (u64, u64),
}

/// The trace rearranged for queries.
pub(super) struct Index<'a> {
    pub(super) trace: &'a Trace,
    pub(super) off_cpu: HashMap<u32, Vec<OffCpu>>,
    /// Cache flush requests in flight on the disk, [issue, complete], in order of completion.
    pub(super) flushes: Vec<(u64, u64)>,
    /// Their union: disjoint, sorted.
    pub(super) flush_busy: Vec<(u64, u64)>,
    /// Completed writes: (time, cumulative bytes up to and including it).
    pub(super) writes: Vec<(u64, u64)>,
    pub(super) commits: Vec<Jbd2Commit>,
    /// Every thread's sync calls, by thread, in order of their end: what a wait woken by
    /// another thread may have waited for.
    pub(super) syncs: HashMap<u32, Vec<Span>>,
    /// The flusher's work on the disk (`writeback_start` to `writeback_written` of one
    /// flusher thread): [start, end] and why it writes back (`background`, `periodic`...).
    pub(super) flusher: Vec<(u64, u64, Word)>,
}

impl<'a> Index<'a> {
    pub(super) fn new(trace: &'a Trace, syncs: &[Span]) -> Index<'a> {
        let mut off_cpu: HashMap<u32, Vec<OffCpu>> = HashMap::new();
        let mut flush_issues: std::collections::VecDeque<u64> = Default::default();
        let mut flushes = Vec::new();
        let mut writes = Vec::new();
        let mut written = 0u64;
        let mut commits: Vec<Jbd2Commit> = Vec::new();
        let mut flusher = Vec::new();
        let mut flusher_working: HashMap<u32, (u64, Word)> = HashMap::new();
        for ev in &trace.events {
            // A thread that fires an event is running: this ends its off-CPU interval even
            // when the switch that put it back on a CPU is missing from the trace (on this
            // kernel, switches from the idle task are at times not recorded).
            if !matches!(ev.kind, EventKind::Stack { .. } | EventKind::SchedSwitch { .. }) {
                if let Some(intervals) = off_cpu.get_mut(&ev.pid) {
                    close_unseen(intervals, ev.ts_ns);
                }
            }
            match &ev.kind {
                EventKind::SchedSwitch {
                    prev_pid,
                    prev_comm,
                    prev_state,
                    next_pid,
                    ..
                } => {
                    if let Some(iv) = off_cpu.get_mut(next_pid).and_then(|v| v.last_mut()) {
                        if iv.end.is_none() {
                            iv.end = Some(ev.ts_ns);
                        }
                    }
                    if !followed(trace, *prev_pid, prev_comm) {
                        continue;
                    }
                    let intervals = off_cpu.entry(*prev_pid).or_default();
                    // Switched out again without a switch-in seen: it ran in between.
                    close_unseen(intervals, ev.ts_ns);
                    intervals.push(OffCpu {
                        start: ev.ts_ns,
                        end: None,
                        state: *prev_state,
                        stack: None,
                        woken_ns: None,
                        woken_by: None,
                    });
                }
                EventKind::Stack { frames } => {
                    if let Some(iv) = off_cpu.get_mut(&ev.pid).and_then(|v| v.last_mut()) {
                        if iv.stack.is_none() && iv.end.is_none() {
                            iv.stack = Some(Frames::clone(frames));
                        }
                    }
                }
                EventKind::SchedWakeup { pid, in_interrupt, .. } => {
                    if let Some(iv) = off_cpu.get_mut(pid).and_then(|v| v.last_mut()) {
                        if iv.end.is_none() && iv.woken_ns.is_none() {
                            iv.woken_ns = Some(ev.ts_ns);
                            // The event fires in the waker's context; in an interrupt's,
                            // the waker is the interrupt, not the task it interrupted.
                            iv.woken_by = Some(match in_interrupt {
                                true => (0, INTERRUPT_WAKER.into()),
                                false => (ev.pid, ev.comm),
                            });
                        }
                    }
                }
                EventKind::BlockRqIssue { rwbs, .. } if Rwbs::parse(rwbs.as_str()).is_flush() => {
                    flush_issues.push_back(ev.ts_ns);
                }
                EventKind::BlockRqComplete { rwbs, sectors, .. } => {
                    let r = Rwbs::parse(rwbs.as_str());
                    if r.is_flush() {
                        // Flush requests carry no sector to match by; the device completes
                        // them in order, so the oldest issue is this one's.
                        let issued = flush_issues.pop_front().unwrap_or(trace.started_ns);
                        flushes.push((issued.min(ev.ts_ns), ev.ts_ns));
                    }
                    if r.is_write() {
                        written += u64::from(*sectors) * 512;
                        writes.push((ev.ts_ns, written));
                    }
                }
                EventKind::Jbd2Commit { phase, transaction, .. } => {
                    let c = match commits.iter_mut().rev().find(|c| c.transaction == *transaction) {
                        Some(c) => c,
                        None => {
                            commits.push(Jbd2Commit {
                                transaction: *transaction,
                                ..Default::default()
                            });
                            commits.last_mut().expect("just pushed")
                        }
                    };
                    match phase {
                        Jbd2Phase::Start => c.start = Some(ev.ts_ns),
                        Jbd2Phase::End => c.end = Some(ev.ts_ns),
                        _ => {
                            c.start.get_or_insert(ev.ts_ns);
                        }
                    }
                }
                EventKind::Writeback {
                    done: false, reason, ..
                } => {
                    flusher_working.insert(ev.pid, (ev.ts_ns, *reason));
                }
                EventKind::Writeback { done: true, reason, .. } => {
                    // Written without its start: the work began before the trace did.
                    let (start, _) = flusher_working.remove(&ev.pid).unwrap_or((trace.started_ns, *reason));
                    flusher.push((start, ev.ts_ns, *reason));
                }
                EventKind::Jbd2RunStats(stats) => {
                    if let Some(c) = commits.iter_mut().rev().find(|c| c.transaction == stats.transaction) {
                        c.blocks_logged = Some(stats.blocks_logged);
                    }
                }
                _ => {}
            }
        }
        // Still writing back when the trace stopped.
        flusher.extend(
            flusher_working
                .into_values()
                .map(|(start, reason)| (start, trace.stopped_ns.max(start), reason)),
        );
        flusher.sort_by_key(|&(start, end, _)| (start, end));
        extend_commit_starts(trace, &off_cpu, &mut commits);
        bound_commits(trace.started_ns, trace.stopped_ns, &mut commits);
        let mut spans = flushes.clone();
        spans.sort();
        let mut flush_busy: Vec<(u64, u64)> = Vec::new();
        for (a, b) in spans {
            match flush_busy.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => flush_busy.push((a, b)),
            }
        }
        let mut by_thread: HashMap<u32, Vec<Span>> = HashMap::new();
        for s in syncs {
            by_thread.entry(s.tid).or_default().push(*s);
        }
        for v in by_thread.values_mut() {
            v.sort_by_key(Span::end_ns);
        }
        Index {
            trace,
            off_cpu,
            flushes,
            flush_busy,
            writes,
            commits,
            syncs: by_thread,
            flusher,
        }
    }

    /// Why the flusher wrote back on the disk during [a, b]: each reason once, in the order
    /// its work began.
    pub(super) fn flusher_reasons(&self, a: u64, b: u64) -> Vec<String> {
        let mut reasons: Vec<String> = Vec::new();
        for (_, _, reason) in self.flusher.iter().filter(|&&(start, end, _)| start <= b && end >= a) {
            if !reasons.iter().any(|r| r == reason.as_str()) {
                reasons.push(reason.as_str().to_string());
            }
        }
        reasons
    }

    /// Time within [a, b] during which a cache flush was in flight.
    pub(super) fn flush_ns(&self, a: u64, b: u64) -> u64 {
        // Disjoint and in order: skip those that ended before `a`.
        let first = self.flush_busy.partition_point(|&(_, y)| y <= a);
        self.flush_busy[first..]
            .iter()
            .take_while(|&&(x, _)| x < b)
            .map(|&(x, y)| y.min(b).saturating_sub(x.max(a)))
            .sum()
    }

    /// Flushes completed within [a, b].
    pub(super) fn flushes_completed(&self, a: u64, b: u64) -> u32 {
        // In order of completion.
        let from = self.flushes.partition_point(|&(_, done)| done < a);
        let to = self.flushes.partition_point(|&(_, done)| done <= b);
        to.saturating_sub(from) as u32
    }

    /// Bytes of writes the device completed within [a, b].
    pub(super) fn write_bytes(&self, a: u64, b: u64) -> u64 {
        let upto = |t: u64| {
            let i = self.writes.partition_point(|&(ts, _)| ts <= t);
            if i == 0 {
                0
            } else {
                self.writes[i - 1].1
            }
        };
        upto(b).saturating_sub(upto(a))
    }

    pub(super) fn run_ns(&self, mono: u64) -> i64 {
        mono as i64 - self.trace.origin_ns as i64
    }

    pub(super) fn is_traced(&self, tid: u32) -> bool {
        self.trace.watched.tids.contains(&tid) || self.off_cpu.contains_key(&tid)
    }

    pub(super) fn journal_label(&self) -> &'static str {
        match self.trace.fs.fstype.as_str() {
            "xfs" => "xfs log",
            "btrfs" => "btrfs",
            _ => "jbd2",
        }
    }
}

/// Ends the open off-CPU interval of a thread seen running at `ts` although the switch
/// that put it back on a CPU is missing from the trace (on this kernel, switches from the
/// idle task are at times not recorded): the sleep ended at its wakeup, and from there to
/// `ts` the thread was runnable or running, which the trace cannot tell apart.
pub(super) fn close_unseen(intervals: &mut Vec<OffCpu>, ts: u64) {
    let Some(iv) = intervals.last_mut().filter(|iv| iv.end.is_none() && ts >= iv.start) else {
        return;
    };
    let woken = iv.woken_ns.filter(|&w| w <= ts).unwrap_or(ts);
    iv.end = Some(woken);
    if woken < ts {
        intervals.push(OffCpu {
            start: woken,
            end: Some(ts),
            state: UNSEEN_SWITCH.into(),
            stack: None,
            woken_ns: None,
            woken_by: None,
        });
    }
}

/// Moves each jbd2 commit's start back to where its work began. `jbd2_start_commit` fires
/// after the journal thread has already done part of the commit: the first commit after a
/// mount, for one, rewrites the journal superblock first (fs/jbd2/commit.c), a synchronous
/// write that can wait behind everything queued on the device. The journal thread's sleeps
/// inside `jbd2_journal_commit_transaction` that end at or before the start event, after
/// the previous commit ended, belong to this commit.
pub(super) fn extend_commit_starts(trace: &Trace, off_cpu: &HashMap<u32, Vec<OffCpu>>, commits: &mut [Jbd2Commit]) {
    let Some(intervals) = trace.journal_threads.iter().find_map(|t| off_cpu.get(&t.pid)) else {
        return;
    };
    let mut previous_end = 0;
    for c in commits.iter_mut() {
        if let Some(start) = c.start {
            let mut earliest = start;
            // One thread's intervals are disjoint and in order: those ended by `start`.
            let ended = intervals.partition_point(|iv| iv.end.is_some_and(|end| end <= start));
            for iv in intervals[..ended].iter().rev() {
                let in_commit = iv
                    .stack
                    .as_ref()
                    .is_some_and(|f| f.iter().any(|x| x == "jbd2_journal_commit_transaction"));
                // Only an unbroken run of such sleeps (and the gaps of missing switches
                // between them), back from the start event.
                if iv.start <= previous_end || !(in_commit || iv.state == UNSEEN_SWITCH) {
                    break;
                }
                earliest = iv.start;
            }
            c.start = Some(earliest);
        }
        previous_end = c.end.unwrap_or(previous_end);
    }
}

/// Sets each commit's bounds. A commit whose start or end event the kernel dropped (a busy
/// trace loses events) is bounded by its neighbours' instead of by the whole trace: the
/// journal thread commits one transaction at a time, in the order the events first name
/// them.
pub(super) fn bound_commits(started_ns: u64, stopped_ns: u64, commits: &mut [Jbd2Commit]) {
    let edge = |c: &Jbd2Commit, late: bool| if late { c.end.or(c.start) } else { c.start.or(c.end) };
    for i in 0..commits.len() {
        let from = commits[i]
            .start
            .or_else(|| i.checked_sub(1).and_then(|p| edge(&commits[p], true)))
            .unwrap_or(started_ns);
        let to = commits[i]
            .end
            .or_else(|| commits.get(i + 1).and_then(|n| edge(n, false)))
            .unwrap_or(stopped_ns);
        commits[i].bounds = (from, to.max(from));
    }
}

/// Whether the trace follows thread `pid` (named `comm`): a watched or journal thread.
pub(super) fn followed(trace: &Trace, pid: u32, comm: &crate::measure::TaskName) -> bool {
    trace.watched.tids.contains(&pid)
        || trace.watched.comms.iter().any(|c| c == comm.as_str())
        || trace.journal_threads.iter().any(|t| t.pid == pid)
}
