//! Attribution of traces captured on the project VM.

use super::causes::Commit;
use super::*;

/// Traces captured on the project VM by tests/explain.rs (`FSYNCLAB_SAVE_TRACE=DIR`):
/// a prober doing 1 MiB write + fsync against a streaming writer on a scratch ext4 and
/// xfs over the emulated 5400 rpm disk, and 8 MiB writes against a random writer under
/// vm.dirty_ratio=1 (block events removed from that one to keep it small), and the
/// same stream on btrfs (only its flush requests kept of the block events).
pub(super) const EXT4_STREAM: &str = include_str!("../../../tests/fixtures/trace-ext4-stream.txt");
const XFS_STREAM: &str = include_str!("../../../tests/fixtures/trace-xfs-stream.txt");
const EXT4_THROTTLED: &str = include_str!("../../../tests/fixtures/trace-ext4-throttled.txt");
const BTRFS_STREAM: &str = include_str!("../../../tests/fixtures/trace-btrfs-stream.txt");

pub(super) fn explain(saved: &str, op: &str) -> Vec<Attribution> {
    let trace = Trace::from_saved_text(saved).expect("saved trace");
    assert_eq!(trace.unparsed_lines, 0);
    let calls: Vec<Call> = marked_calls(&trace).into_iter().filter(|c| c.op == op).collect();
    assert!(!calls.is_empty(), "no {op} markers");
    let all = attribute_all(&trace, &calls);
    for a in &all {
        assert_eq!(a.total_ns(), a.latency_ns, "parts must add up: {a:#?}");
    }
    all
}

pub(super) fn journal_commits(a: &Attribution) -> Vec<&Commit> {
    a.parts
        .iter()
        .filter_map(|p| match &p.cause {
            Cause::JournalCommit { commits, .. } => Some(commits.iter()),
            _ => None,
        })
        .flatten()
        .collect()
}

#[test]
fn ext4_fsyncs_behind_a_stream_wait_for_jbd2_commits_and_writeback() {
    for a in explain(EXT4_STREAM, "fsync") {
        let journal = a.ns_of(|c| matches!(c, Cause::JournalCommit { .. }));
        let writeback = a.ns_of(|c| matches!(c, Cause::DataWriteback { .. }));
        assert!(journal + writeback >= a.latency_ns * 95 / 100, "{}", a.summary(9));
        let commits = journal_commits(&a);
        assert!(!commits.is_empty(), "{}", a.summary(9));
        for c in &commits {
            assert!(c.name.starts_with("jbd2 transaction "), "{c:?}");
            let duration = c.duration_ns.expect("commit duration");
            // The commit's own time is accounted for by the journal thread's.
            let shares: u64 = c.waited_for.iter().map(|s| s.ns).sum();
            assert_eq!(shares, duration, "{c:?}");
            assert!(c.waited_for.iter().any(|s| s.what == "cache flushes"), "{c:?}");
        }
        // The commits cover the whole journal wait: the first commit after the mount
        // starts with the journal superblock write, before `jbd2_start_commit`.
        let covered: u64 = commits.iter().map(|c| c.overlap_ns).sum();
        assert!(
            covered + 1_000_000 >= journal,
            "{covered} of {journal}: {}",
            a.summary(9)
        );
        assert!(a.summary(3).contains("waiting for a journal commit: jbd2 transaction"));
    }
}

#[test]
fn xfs_fsyncs_wait_for_log_forces_and_their_flushes() {
    for a in explain(XFS_STREAM, "fsync") {
        let commits = journal_commits(&a);
        assert!(
            commits
                .iter()
                .any(|c| c.name.starts_with("xfs log force (checkpoint sequence ")),
            "{}",
            a.summary(9)
        );
        let flush_ns: u64 = commits
            .iter()
            .flat_map(|c| &c.waited_for)
            .filter(|s| s.what == "cache flushes")
            .map(|s| s.ns)
            .sum();
        assert!(flush_ns > 0, "{}", a.summary(9));
        // Only the microseconds between a wakeup and a switch the trace missed.
        let unattributed = a.ns_of(|c| matches!(c, Cause::Unattributed { .. }));
        assert!(unattributed < a.latency_ns / 100, "{}", a.summary(9));
    }
}

#[test]
fn btrfs_fsyncs_of_a_new_file_commit_the_transaction() {
    for a in explain(BTRFS_STREAM, "fsync") {
        let journal = a.ns_of(|c| matches!(c, Cause::JournalCommit { .. }));
        let writeback = a.ns_of(|c| matches!(c, Cause::DataWriteback { .. }));
        assert!(journal + writeback >= a.latency_ns * 95 / 100, "{}", a.summary(9));
        let commits = journal_commits(&a);
        assert!(
            commits
                .iter()
                .any(|c| c.name.starts_with("btrfs transaction commit (gen ")),
            "{}",
            a.summary(9)
        );
        assert!(
            commits
                .iter()
                .flat_map(|c| &c.waited_for)
                .any(|s| s.what == "cache flushes" && s.ns > 0),
            "{}",
            a.summary(9)
        );
    }
}

#[test]
fn writes_under_low_dirty_limits_are_dirty_throttling() {
    let all = explain(EXT4_THROTTLED, "write");
    let worst = all.iter().max_by_key(|a| a.latency_ns).unwrap();
    let throttled = worst.ns_of(|c| matches!(c, Cause::DirtyThrottle { .. }));
    assert!(throttled >= worst.latency_ns * 9 / 10, "{}", worst.summary(9));
    let Some(Cause::DirtyThrottle {
        pauses,
        dirty_pages: Some(dirty),
        limit_pages: Some(limit),
        ..
    }) = worst.parts.first().map(|p| &p.cause)
    else {
        panic!("{worst:#?}")
    };
    assert!(*pauses >= 1 && dirty < limit, "{worst:#?}");
    assert!(worst.summary(1).contains("dirty throttling"));
}

#[test]
fn a_thread_not_traced_is_unattributed_not_guessed() {
    let trace = Trace::from_saved_text(EXT4_STREAM).unwrap();
    let mut call = marked_calls(&trace).pop().unwrap();
    call.tid = 1;
    let a = &attribute_all(&trace, &[call])[0];
    assert_eq!(a.parts.len(), 1);
    assert!(matches!(&a.parts[0].cause, Cause::Unattributed { reason } if reason.contains("not traced")));
}

#[test]
fn attributions_round_trip_through_json() {
    let all = explain(EXT4_STREAM, "fsync");
    let json = serde_json::to_string(&all).unwrap();
    let back: Vec<Attribution> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, all);
    assert!(json.contains("\"cause\":\"journal_commit\""), "{json}");
}

fn call(op: &str, latency_ns: u64) -> Call {
    Call {
        tid: 1,
        op: op.into(),
        start_ns: 0,
        latency_ns,
    }
}

#[test]
fn calls_survive_a_trace_marker() {
    let c = Call {
        tid: 42,
        op: "fsync".into(),
        start_ns: 1_000,
        latency_ns: 55_000_000,
    };
    assert_eq!(Call::from_marker(&c.marker()), Some(c));
    assert_eq!(Call::from_marker("something else"), None);
}

#[test]
fn selects_the_slowest_percent_of_each_op_and_every_slow_call() {
    let mut calls: Vec<Call> = (0..200).map(|i| call("write", 1_000 + i)).collect();
    calls.push(call("fsync", 5_000_000));
    calls.push(call("fsync", 6_000_000));
    calls.push(call("write", 150_000_000));
    let chosen: Vec<u64> = select(&calls, &Threshold::default())
        .into_iter()
        .map(|i| calls[i].latency_ns)
        .collect();
    // 201 writes: the slowest 1% is 3 calls (rounded up); the slowest fsync; the call
    // over 100 ms is among the slowest writes anyway.
    assert_eq!(chosen, vec![1_198, 1_199, 6_000_000, 150_000_000]);
}

/// Issue 16: calls are selected per kind and thread, at most MAX_PER_GROUP of each.
#[test]
/// Issue 16.
fn selects_per_thread_and_caps_each_group() {
    let mut calls: Vec<Call> = Vec::new();
    for tid in [7, 8] {
        for i in 0..1000 {
            calls.push(Call {
                tid,
                ..call("commit", 1_000 + i + u64::from(tid) * 10_000)
            });
        }
    }
    // 10,000 calls over 100 ms on one thread: only the slowest MAX_PER_GROUP are taken.
    for i in 0..10_000 {
        calls.push(Call {
            tid: 9,
            ..call("fsync", 200_000_000 + i)
        });
    }
    let chosen = select(&calls, &Threshold::default());
    let of = |tid: u32| chosen.iter().filter(|&&i| calls[i].tid == tid).count();
    // 1% of 1000 a thread: each thread's own slowest ten, not the ten slowest overall.
    assert_eq!((of(7), of(8)), (10, 10));
    assert_eq!(of(9), Threshold::MAX_PER_GROUP);
    assert!(chosen
        .iter()
        .filter(|&&i| calls[i].tid == 9)
        .all(|&i| calls[i].latency_ns >= 200_000_000 + 10_000 - Threshold::MAX_PER_GROUP as u64));
}
