//! Where the time of a slow call went: its latency split into causes whose parts add up to
//! the whole.
//!
//! Method. From the start to the end of the call the thread is either on a CPU or off it;
//! the trace's `sched_switch` events mark each off-CPU interval (switched out → switched
//! back in), and whatever is not off CPU is on CPU. Each off-CPU interval gets one cause:
//! - switched out runnable (`R`, preempted): waiting for a CPU;
//! - asleep (`D`, `S`): what the kernel stack taken at that moment shows ([`super::stacks`]):
//!   data writeback, a journal commit, a device cache flush, dirty throttling, or another
//!   wait, reported with its top frames;
//! - no stack recorded, or outside the traced time, or a thread that was not traced:
//!   *unattributed*, with the reason, never a guess.
//!
//! A sleep in user-space synchronisation (a futex) that another traced thread ended is a
//! wait for that thread: the sched_waking event fires in the waker's context, and the
//! waker's sync call that ended during the wait is what the sleeper waited for — a group
//! commit's follower waiting for its leader's flush — named with its own parts. A wakeup
//! made in an interrupt (the event's context flag) is the interrupt's, never a thread's.
//!
//! A wait for a journal commit is tied to the commits that ran during it: for jbd2 (ext3,
//! ext4) each transaction from `jbd2_start_commit` to `jbd2_end_commit`, its duration,
//! and where the journal thread's own time went meanwhile (ordered data writeback, journal
//! writes, cache flushes — the flush part is the time a flush request was in flight on the
//! device); for xfs the log forces the thread made, for btrfs the transaction commits that
//! completed, with the cache flushes in flight during the wait. Sums are exact by
//! construction: the parts of a call add up to its latency to the nanosecond, and the
//! trace's microsecond timestamps limit only where the boundaries between parts fall.
//!
//! The parts: `causes` (what a part is, and how it reads), `index` (the trace indexed:
//! each thread's off-CPU intervals, the journal commits, flushes and writes by time),
//! `call` (one call's time split into parts), `commits` (the journal commits, log forces and
//! transactions a wait covered).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

mod call;
mod causes;
mod commits;
#[cfg(test)]
mod hand_built_tests;
mod index;
#[cfg(test)]
mod tests;

pub(crate) use causes::{waker_name, Attribution, Cause, Commit, Part, Share, ThreadCall};
pub(crate) use commits::{commit_by_flushes, shares, told_by_event, unnamed_commit};
use index::Index;

use super::tracefs::Trace;

/// One measured call, on the run clock.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Call {
    /// The thread that made it (`gettid`).
    pub(crate) tid: u32,
    /// `write`, `fsync`, ...
    pub(crate) op: String,
    /// Start, ns since the run's start (the run clock).
    pub(crate) start_ns: u64,
    pub(crate) latency_ns: u64,
}

/// A sync call of any traced thread, kept for the waits of other threads it may end (a
/// group commit's leader's flush, waited for by its followers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) tid: u32,
    /// `fdatasync`, `syncfs`...
    pub(crate) op: &'static str,
    /// Start, ns since the run's start (the run clock).
    pub(crate) start_ns: u64,
    pub(crate) latency_ns: u64,
}

impl Span {
    pub(crate) fn end_ns(&self) -> u64 {
        self.start_ns + self.latency_ns
    }

    fn call(&self) -> Call {
        Call {
            tid: self.tid,
            op: self.op.to_string(),
            start_ns: self.start_ns,
            latency_ns: self.latency_ns,
        }
    }
}

/// The words a call's trace marker starts with.
const MARKER_PREFIX: &str = "fsynclab-call ";

impl Call {
    /// The call as a trace marker ([`super::tracefs::Tracing::mark`]), so that a saved trace carries
    /// the calls it explains (the fixtures in tests/fixtures/).
    pub(crate) fn marker(&self) -> String {
        format!(
            "{MARKER_PREFIX}tid={} op={} start_ns={} latency_ns={}",
            self.tid, self.op, self.start_ns, self.latency_ns
        )
    }

    /// Reads back [`Call::marker`].
    #[cfg(test)]
    pub(crate) fn from_marker(text: &str) -> Option<Call> {
        let rest = text.strip_prefix(MARKER_PREFIX)?;
        let get = |key: &str| {
            rest.split_whitespace()
                .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        };
        Some(Call {
            tid: get("tid")?.parse().ok()?,
            op: get("op")?.to_string(),
            start_ns: get("start_ns")?.parse().ok()?,
            latency_ns: get("latency_ns")?.parse().ok()?,
        })
    }
}

/// The calls written into the trace as markers, in trace order.
#[cfg(test)]
pub(crate) fn marked_calls(trace: &Trace) -> Vec<Call> {
    trace
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            super::events::EventKind::Marker { text } => Call::from_marker(text),
            _ => None,
        })
        .collect()
}

/// Which calls to explain: the slowest fraction of each operation kind of each thread, and
/// every call over a latency; at most [`Threshold::MAX_PER_GROUP`] of a kind and thread,
/// the slowest (a multi-threaded run of a million calls must not explain ten thousand).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Threshold {
    /// 0.01: the slowest 1% of each operation kind (at least one call of each).
    pub(crate) slowest_fraction: f64,
    /// Every call at least this slow, ns.
    pub(crate) over_ns: u64,
}

impl Threshold {
    /// The most calls explained of one kind made by one thread.
    pub(crate) const MAX_PER_GROUP: usize = 50;
}

impl Default for Threshold {
    fn default() -> Threshold {
        Threshold {
            slowest_fraction: 0.01,
            over_ns: 100_000_000,
        }
    }
}

/// The indices of the calls `threshold` selects, in the order of `calls`.
#[cfg(test)]
pub(crate) fn select(calls: &[Call], threshold: &Threshold) -> Vec<usize> {
    let groups: Vec<((&str, u32), u64)> = calls.iter().map(|c| ((c.op.as_str(), c.tid), c.latency_ns)).collect();
    select_in_groups(&groups, threshold)
}

/// The indices `threshold` selects among calls given as (group, latency), the group being
/// the call's kind and thread: in each group the slowest fraction (at least one) and every
/// call over the latency, at most [`Threshold::MAX_PER_GROUP`], slowest first.
pub(crate) fn select_in_groups<G: std::hash::Hash + Eq + Copy>(
    calls: &[(G, u64)],
    threshold: &Threshold,
) -> Vec<usize> {
    let mut groups: HashMap<G, Vec<usize>> = HashMap::new();
    for (i, (g, _)) in calls.iter().enumerate() {
        groups.entry(*g).or_default().push(i);
    }
    let mut chosen = vec![false; calls.len()];
    for mut idx in groups.into_values() {
        let k = ((idx.len() as f64 * threshold.slowest_fraction).ceil() as usize).clamp(1, idx.len());
        idx.sort_by_key(|&i| std::cmp::Reverse(calls[i].1));
        let over = idx.iter().take_while(|&&i| calls[i].1 >= threshold.over_ns).count();
        for &i in idx.iter().take(k.max(over).min(Threshold::MAX_PER_GROUP)) {
            chosen[i] = true;
        }
    }
    (0..calls.len()).filter(|&i| chosen[i]).collect()
}

/// Parts being collected, merged by cause.
#[derive(Default)]
struct Parts(Vec<Part>);

impl Parts {
    fn add(&mut self, cause: Cause, ns: u64, waits: u32) {
        let key = cause.key();
        match self.0.iter_mut().find(|p| p.cause.key() == key) {
            Some(p) => {
                p.ns += ns;
                p.waits += waits;
                p.cause.merge(cause);
            }
            None => self.0.push(Part { cause, ns, waits }),
        }
    }
}

/// Explains each of `calls`, whatever its latency; `syncs` are every traced thread's sync
/// calls, which waits on another thread are tied to.
pub(crate) fn explain(trace: &Trace, calls: &[Call], syncs: &[Span]) -> Vec<Attribution> {
    let index = Index::new(trace, syncs);
    calls.iter().map(|c| index.attribute(c)).collect()
}

/// Explains every call given, whatever its latency.
#[cfg(test)]
pub(crate) fn attribute_all(trace: &Trace, calls: &[Call]) -> Vec<Attribution> {
    explain(trace, calls, &[])
}
