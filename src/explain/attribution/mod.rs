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
mod index;
#[cfg(test)]
mod tests;

pub(crate) use causes::{Attribution, Cause, Part};
use index::Index;

use super::tracer::Trace;

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

/// The words a call's trace marker starts with.
const MARKER_PREFIX: &str = "fsynclab-call ";

impl Call {
    /// The call as a trace marker ([`super::Tracer::mark`]), so that a saved trace carries
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

/// Which calls to explain: the slowest fraction of each operation kind, and every call over
/// a latency.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Threshold {
    /// 0.01: the slowest 1% of each operation kind (at least one call of each).
    pub(crate) slowest_fraction: f64,
    /// Every call at least this slow, ns.
    pub(crate) over_ns: u64,
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
pub(crate) fn select(calls: &[Call], threshold: &Threshold) -> Vec<usize> {
    let mut by_op: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, c) in calls.iter().enumerate() {
        by_op.entry(c.op.as_str()).or_default().push(i);
    }
    let mut chosen = vec![false; calls.len()];
    for (i, c) in calls.iter().enumerate() {
        chosen[i] = c.latency_ns >= threshold.over_ns;
    }
    for mut idx in by_op.into_values() {
        let k = ((idx.len() as f64 * threshold.slowest_fraction).ceil() as usize).clamp(1, idx.len());
        idx.sort_by_key(|&i| std::cmp::Reverse(calls[i].latency_ns));
        for &i in &idx[..k] {
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

/// Explains the calls `threshold` selects, in the order of `calls`.
pub(crate) fn attribute(trace: &Trace, calls: &[Call], threshold: &Threshold) -> Vec<Attribution> {
    let index = Index::new(trace);
    select(calls, threshold)
        .into_iter()
        .map(|i| index.attribute(&calls[i]))
        .collect()
}

/// Explains every call given, whatever its latency.
#[cfg(test)]
pub(crate) fn attribute_all(trace: &Trace, calls: &[Call]) -> Vec<Attribution> {
    let index = Index::new(trace);
    calls.iter().map(|c| index.attribute(c)).collect()
}
