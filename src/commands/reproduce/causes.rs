//! The *why* of a measured stall, from what the run's explanation carries
//! (`result.explain`, see [`crate::explain::report`] for the per-call form): the slow calls
//! of one kind, their time summed by cause, the largest causes with their share.

use std::collections::BTreeMap;

use crate::explain::attribution::{Attribution, Cause};
use crate::result::RunResult;
use crate::units::format_latency_ns;

/// Causes a row names.
const NAMED: usize = 3;

/// A cause in a few words, its details left out (the commits, inodes and stacks are in
/// `fsynclab explain RUN`).
fn label(cause: &Cause) -> String {
    match cause {
        Cause::OnCpu => "on CPU".into(),
        Cause::Runnable => "waiting for a CPU".into(),
        Cause::Woken => "on a CPU or waiting for one".into(),
        Cause::DataWriteback { .. } => "waiting for data writeback".into(),
        Cause::JournalCommit { journal, .. } => format!("waiting for a journal commit ({journal})"),
        Cause::DeviceFlush { .. } => "device cache flushes".into(),
        Cause::DeviceRead { .. } => "reads from the disk".into(),
        Cause::DirtyThrottle { .. } => "dirty throttling (balance_dirty_pages)".into(),
        Cause::WaitedForThread { call: Some(c), .. } => format!("waiting for another thread's {}", c.op),
        Cause::WaitedForThread { call: None, .. } => "waiting for another thread".into(),
        Cause::OtherWait { stack } => match stack.first() {
            Some(frame) => format!("waiting in {frame}"),
            None => "another wait".into(),
        },
        Cause::Unattributed { .. } => "unattributed".into(),
    }
}

/// The slow calls of `op` explained in `result`, slowest first.
fn explained<'a>(result: &'a RunResult, op: &str) -> Vec<&'a Attribution> {
    result
        .explain
        .iter()
        .flat_map(|e| &e.calls)
        .filter(|a| a.op == op)
        .collect()
}

/// `fsync: 4 slow calls explained (worst 6.296s): 71% waiting for a journal commit (jbd2), 25% waiting
/// for data writeback, 3% device cache flushes`; None when the run explained none (not
/// traced: no root, no tracefs).
pub(crate) fn summary(result: &RunResult, op: &str) -> Option<String> {
    let calls = explained(result, op);
    let worst = calls.iter().map(|a| a.latency_ns).max()?;
    let total: u64 = calls.iter().map(|a| a.latency_ns).sum();
    let mut by_cause: BTreeMap<String, u64> = BTreeMap::new();
    for part in calls.iter().flat_map(|a| &a.parts) {
        *by_cause.entry(label(&part.cause)).or_default() += part.ns;
    }
    let mut causes: Vec<(String, u64)> = by_cause.into_iter().filter(|(_, ns)| *ns > 0).collect();
    causes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let shares: Vec<String> = causes
        .iter()
        .take(NAMED)
        .map(|(what, ns)| format!("{:.0}% {what}", 100.0 * *ns as f64 / total.max(1) as f64))
        .collect();
    Some(format!(
        "{op}: {} slow call{} explained (worst {}): {}",
        calls.len(),
        if calls.len() == 1 { "" } else { "s" },
        format_latency_ns(worst),
        shares.join(", ")
    ))
}

/// Dirty-throttling pauses of the explained calls of `op`: (calls, pauses, total ms of the
/// pauses the kernel chose, longest single call's pauses ms).
pub(crate) fn throttle(result: &RunResult, op: &str) -> Option<(usize, u32, u64)> {
    let calls = explained(result, op);
    if calls.is_empty() {
        return None;
    }
    let (mut pauses, mut pause_ms) = (0, 0);
    for part in calls.iter().flat_map(|a| &a.parts) {
        if let Cause::DirtyThrottle {
            pauses: p,
            pause_ms: ms,
            ..
        } = &part.cause
        {
            pauses += p;
            pause_ms += ms;
        }
    }
    Some((calls.len(), pauses, pause_ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::attribution::{Part, Threshold};
    use crate::explain::explanation::Explanation;
    use crate::result::tests_support::empty_result;

    fn call(op: &str, parts: Vec<(Cause, u64)>) -> Attribution {
        Attribution {
            tid: 1,
            op: op.into(),
            start_ns: 0,
            latency_ns: parts.iter().map(|p| p.1).sum(),
            parts: parts
                .into_iter()
                .map(|(cause, ns)| Part { cause, ns, waits: 1 })
                .collect(),
            notes: Vec::new(),
            process: None,
        }
    }

    #[test]
    /// Issue 20.
    fn the_why_names_the_largest_causes_over_all_slow_calls() {
        let journal = || Cause::JournalCommit {
            journal: "jbd2".into(),
            commits: Vec::new(),
        };
        let mut r = empty_result();
        assert_eq!(summary(&r, "fsync"), None, "not traced: no why");
        r.explain = Some(Explanation {
            threshold: Threshold::default(),
            traced_tid: 1,
            journal_threads: Vec::new(),
            events: 1,
            lost_events: 0,
            missing_events: Vec::new(),
            reader_cpu_ns: 0,
            trace_bytes: 0,
            trace_cut_at_ns: None,
            calls: vec![
                call("fsync", vec![(journal(), 700), (Cause::OnCpu, 100)]),
                call(
                    "fsync",
                    vec![
                        (journal(), 100),
                        (
                            Cause::DataWriteback {
                                inodes: vec![1],
                                device_write_bytes: 0,
                                flusher: Vec::new(),
                            },
                            100,
                        ),
                    ],
                ),
                call(
                    "write",
                    vec![(
                        Cause::DirtyThrottle {
                            pauses: 3,
                            pause_ms: 40,
                            dirty_pages: None,
                            limit_pages: None,
                        },
                        50_000_000,
                    )],
                ),
            ],
            notes: Vec::new(),
            bpf: None,
        });
        assert_eq!(
            summary(&r, "fsync").unwrap(),
            "fsync: 2 slow calls explained (worst 800ns): 80% waiting for a journal commit (jbd2), 10% on CPU, 10% waiting for data writeback"
        );
        assert_eq!(throttle(&r, "write"), Some((1, 3, 40)));
        assert_eq!(throttle(&r, "fsync"), Some((2, 0, 0)));
        assert_eq!(throttle(&r, "fdatasync"), None);
    }
}
