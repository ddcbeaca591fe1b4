//! One call's time split into parts: on CPU, and a cause for each off-CPU interval.

use super::super::events::EventKind;
use super::super::stacks::{classify, top_frames, WaitKind};
use super::causes::{waker_name, Attribution, Cause, Share, ThreadCall};
use super::index::{Index, OffCpu, UNSEEN_SWITCH};
use super::{Call, Parts};

/// How much later than a sync call's end (by the trace's microsecond clock, after the waker
/// took its lock and signalled) a wakeup may come and still be that call's.
const WAKE_AFTER_END_NS: u64 = 200_000;

impl Index<'_> {
    pub(super) fn attribute(&self, call: &Call) -> Attribution {
        self.attribute_at(call, true)
    }

    /// `follow`: whether a wait on another thread is explained by that thread's call (one
    /// level: the leader's flush, not what the leader itself waited for in turn).
    fn attribute_at(&self, call: &Call, follow: bool) -> Attribution {
        let s = self.trace.origin_ns + call.start_ns;
        let e = s + call.latency_ns;
        let mut parts = Parts::default();
        let mut notes = Vec::new();
        if self.trace.lost_events > 0 {
            notes.push(format!(
                "the kernel dropped {} trace events during the run: some waits may be missing",
                self.trace.lost_events
            ));
        }
        if !self.is_traced(call.tid) {
            parts.add(
                Cause::Unattributed {
                    reason: format!("thread {} was not traced", call.tid),
                },
                call.latency_ns,
                0,
            );
            return self.finish(call, parts, notes);
        }
        let lo = s.clamp(self.trace.started_ns, e);
        let hi = e.clamp(lo, self.trace.stopped_ns.max(lo));
        if lo > s {
            parts.add(
                Cause::Unattributed {
                    reason: "before tracing started".into(),
                },
                lo - s,
                0,
            );
        }
        if hi < e {
            parts.add(
                Cause::Unattributed {
                    reason: "after tracing stopped".into(),
                },
                e - hi,
                0,
            );
        }
        let mut off = 0;
        let mut missing_stacks = 0;
        // Intervals are in time order; `cursor` keeps them from overlapping whatever the
        // trace held, so the parts cannot add up to more than the call.
        let mut cursor = lo;
        for iv in self.off_cpu.get(&call.tid).map(Vec::as_slice).unwrap_or(&[]) {
            let a = iv.start.max(cursor);
            let b = iv.end.unwrap_or(self.trace.stopped_ns).min(hi);
            if b <= a {
                continue;
            }
            let cause = self.cause_of(iv, call, a, b, follow);
            if matches!(cause, Cause::Unattributed { .. }) {
                missing_stacks += 1;
            }
            parts.add(cause, b - a, 1);
            off += b - a;
            cursor = b;
        }
        if missing_stacks > 0 {
            notes.push(format!("{missing_stacks} off-CPU intervals without a recorded stack"));
        }
        parts.add(Cause::OnCpu, (hi - lo).saturating_sub(off), 0);
        self.finish(call, parts, notes)
    }

    pub(super) fn finish(&self, call: &Call, parts: Parts, notes: Vec<String>) -> Attribution {
        let mut parts = parts.0;
        parts.retain(|p| p.ns > 0);
        parts.sort_by_key(|p| std::cmp::Reverse(p.ns));
        Attribution {
            tid: call.tid,
            process: None,
            op: call.op.clone(),
            start_ns: call.start_ns,
            latency_ns: call.latency_ns,
            parts,
            notes,
        }
    }

    /// The cause of the off-CPU interval `iv` of the call's thread, clipped to [a, b].
    pub(super) fn cause_of(&self, iv: &OffCpu, call: &Call, a: u64, b: u64, follow: bool) -> Cause {
        if iv.state.as_str().starts_with('R') {
            return Cause::Runnable;
        }
        if iv.state == UNSEEN_SWITCH {
            return Cause::Woken;
        }
        // Woken by another thread this trace follows: a wait for it (task 0 is the idle
        // task or an interrupt, never a followed thread).
        let waker = iv
            .woken_by
            .as_ref()
            .filter(|(w, _)| *w != 0 && *w != call.tid && self.is_traced(*w))
            .map(|(w, _)| *w);
        let Some(frames) = &iv.stack else {
            // Interruptible sleeps get no stack (tracer::filters::STACK_STATES).
            return match (iv.state.as_str().starts_with('S'), waker, &iv.woken_by) {
                (true, Some(waker), _) => Cause::WaitedForThread {
                    thread: waker,
                    call: self.sync_waited_for(waker, a, iv.woken_ns.unwrap_or(b), follow),
                },
                (true, None, Some((pid, comm))) => Cause::Unattributed {
                    reason: format!(
                        "an interruptible sleep (no stack is recorded for those), ended by {}",
                        waker_name(*pid, comm.as_str())
                    ),
                },
                _ => Cause::Unattributed {
                    reason: format!("off CPU in state {} without a recorded stack", iv.state),
                },
            };
        };
        let call_start = self.trace.origin_ns + call.start_ns;
        match classify(frames) {
            WaitKind::DataWriteback => {
                let inodes = self
                    .last_event_of(call.tid, call_start, iv.start, |k| match k {
                        EventKind::FolioWaitWriteback { ino, .. } => Some(*ino),
                        _ => None,
                    })
                    .into_iter()
                    .collect();
                Cause::DataWriteback {
                    inodes,
                    device_write_bytes: self.write_bytes(a, b),
                    flusher: self.flusher_reasons(a, b),
                }
            }
            WaitKind::JournalCommit => Cause::JournalCommit {
                journal: self.journal_label().into(),
                commits: self.commits_during(call, a, b, frames),
            },
            WaitKind::DeviceFlush => Cause::DeviceFlush {
                flushes: self.flushes_completed(a, b),
            },
            WaitKind::DirtyThrottle => {
                let last = self.last_event_of(call.tid, call_start, iv.start, |k| match k {
                    EventKind::BalanceDirtyPages(b) => Some((b.pause_ms, b.dirty_pages, b.limit_pages)),
                    _ => None,
                });
                Cause::DirtyThrottle {
                    pauses: 1,
                    pause_ms: last.map(|l| l.0.max(0) as u64).unwrap_or(0),
                    dirty_pages: last.map(|l| l.1),
                    limit_pages: last.map(|l| l.2),
                }
            }
            WaitKind::UserLock => match waker {
                Some(waker) => Cause::WaitedForThread {
                    thread: waker,
                    call: self.sync_waited_for(waker, a, iv.woken_ns.unwrap_or(b), follow),
                },
                None => Cause::OtherWait {
                    stack: top_frames(frames, 3),
                },
            },
            WaitKind::JournalWrite | WaitKind::JournalHandles | WaitKind::Other => Cause::OtherWait {
                stack: top_frames(frames, 3),
            },
        }
    }

    /// The sync call of thread `tid` that a wait from `from` (CLOCK_MONOTONIC), which `tid`
    /// ended at `woken`, waited for: the last one to end during the wait, at most
    /// [`WAKE_AFTER_END_NS`] before the wakeup. With `follow`, with its own parts.
    fn sync_waited_for(&self, tid: u32, from: u64, woken: u64, follow: bool) -> Option<ThreadCall> {
        let origin = self.trace.origin_ns;
        let (from, woken) = (from.saturating_sub(origin), woken.saturating_sub(origin));
        let spans = self.syncs.get(&tid)?;
        let upto = spans.partition_point(|s| s.end_ns() <= woken);
        let span = spans[..upto]
            .last()
            .filter(|s| s.end_ns() >= from && s.end_ns() + WAKE_AFTER_END_NS >= woken)?;
        let parts = if follow {
            let own = self.attribute_at(&span.call(), false);
            own.parts
                .iter()
                .map(|p| Share {
                    what: p.cause.to_string(),
                    ns: p.ns,
                })
                .collect()
        } else {
            Vec::new()
        };
        Some(ThreadCall {
            op: span.op.to_string(),
            start_ns: span.start_ns,
            latency_ns: span.latency_ns,
            parts,
        })
    }

    /// The last event of thread `tid` within [from, to] that `pick` accepts.
    pub(super) fn last_event_of<T>(
        &self,
        tid: u32,
        from: u64,
        to: u64,
        pick: impl Fn(&EventKind) -> Option<T>,
    ) -> Option<T> {
        self.trace
            .events_between(from, to)
            .iter()
            .rev()
            .filter(|e| e.pid == tid)
            .find_map(|e| pick(&e.kind))
    }
}
