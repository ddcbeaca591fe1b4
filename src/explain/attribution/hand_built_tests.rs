//! Attribution of traces made by hand, each the few events one case needs: a group commit's
//! leader and follower (the follower's wait names the leader's flush; a wakeup by an
//! interrupt is not the traced thread's), a commit whose end event was dropped, and the
//! flusher's work a wait for data writeback names.

use super::tests::{explain, journal_commits, EXT4_STREAM};
use super::*;
use crate::explain::events::EventKind;

/// A hand-built trace of a group commit: the leader (thread 10) makes one fdatasync that
/// waits for a device cache flush, while the follower (thread 11) sleeps on a futex until
/// the leader wakes it.
fn group_commit_trace() -> Trace {
    use super::super::events::{Event, EventKind};
    use super::super::tracefs::Watch;
    let ms = |m: f64| (m * 1e6) as u64;
    let ev = |t: f64, pid: u32, kind: EventKind| Event {
        ts_ns: ms(t),
        cpu: 0,
        pid,
        tgid: None,
        comm: "fsl-1-w".into(),
        kind,
    };
    let switch = |t: f64, prev: u32, state: &str, next: u32| {
        ev(
            t,
            prev,
            EventKind::SchedSwitch {
                prev_comm: "fsl-1-w".into(),
                prev_pid: prev,
                prev_state: state.into(),
                next_comm: "fsl-1-w".into(),
                next_pid: next,
            },
        )
    };
    let stack = |t: f64, pid: u32, frames: &str| {
        ev(
            t,
            pid,
            EventKind::Stack {
                frames: frames.split_whitespace().map(String::from).collect(),
            },
        )
    };
    let wakeup = |t: f64, waker: u32, pid: u32| {
        ev(
            t,
            waker,
            EventKind::SchedWakeup {
                comm: "fsl-1-w".into(),
                pid,
                in_interrupt: false,
            },
        )
    };
    Trace {
        origin_ns: 0,
        started_ns: 0,
        stopped_ns: ms(100.0),
        watched: Watch {
            tids: vec![1],
            comms: vec!["fsl-1-w".into()],
            process_tree: None,
        },
        events: vec![
            switch(1.0, 11, "S", 0),
            stack(
                1.0,
                11,
                "__schedule schedule futex_wait_queue __futex_wait futex_wait do_futex",
            ),
            switch(1.5, 10, "D", 0),
            stack(
                1.5,
                10,
                "__schedule schedule io_schedule submit_bio_wait blkdev_issue_flush ext4_sync_file do_fsync",
            ),
            wakeup(8.9, 0, 10),
            switch(8.9, 0, "R", 10),
            wakeup(9.05, 10, 11),
            switch(9.1, 10, "S", 11),
        ],
        ..Trace::default()
    }
}

/// The group commit's follower (thread 11's commit, 0.9 to 9.2 ms) and its leader's
/// fdatasync (thread 10, 1 to 9 ms).
fn follower_and_leader() -> (Call, Span) {
    let ms = |m: f64| (m * 1e6) as u64;
    let follower = Call {
        tid: 11,
        op: "commit".into(),
        start_ns: ms(0.9),
        latency_ns: ms(9.2) - ms(0.9),
    };
    let leader = Span {
        tid: 10,
        op: "fdatasync",
        start_ns: ms(1.0),
        latency_ns: ms(9.0) - ms(1.0),
    };
    (follower, leader)
}

/// Issue 25: a wakeup made in an interrupt that landed on the leader's thread (a timer, a
/// disk's completion) is the interrupt's: the follower's wait is not said to be for the
/// leader, nor for any thread.
#[test]
fn a_wait_ended_by_an_interrupt_on_a_traced_thread_is_not_a_wait_for_that_thread() {
    use super::super::events::EventKind;
    let mut trace = group_commit_trace();
    for ev in &mut trace.events {
        if let EventKind::SchedWakeup {
            pid: 11, in_interrupt, ..
        } = &mut ev.kind
        {
            *in_interrupt = true;
        }
    }
    let (follower, leader) = follower_and_leader();
    let a = &super::explain(&trace, std::slice::from_ref(&follower), &[leader])[0];
    assert_eq!(a.total_ns(), a.latency_ns, "{a:#?}");
    assert!(
        !a.parts.iter().any(|p| matches!(p.cause, Cause::WaitedForThread { .. })),
        "{a:#?}"
    );
    assert!(
        matches!(&a.parts[0].cause, Cause::OtherWait { stack } if stack.iter().any(|f| f.contains("futex"))),
        "{a:#?}"
    );
}

/// Issue 16: a follower's wait names the leader's flush it waited for, with the flush's
/// own parts; the parts still add up to the call.
#[test]
/// Issue 16.
fn a_followers_wait_names_the_leaders_flush() {
    use super::super::events::EventKind;
    let trace = group_commit_trace();
    let ms = |m: f64| (m * 1e6) as u64;
    let (follower, leader) = follower_and_leader();
    let a = &super::explain(&trace, std::slice::from_ref(&follower), &[leader])[0];
    assert_eq!(a.total_ns(), a.latency_ns, "{a:#?}");
    let Some(Cause::WaitedForThread {
        thread: 10,
        call: Some(flush),
    }) = a.parts.first().map(|p| &p.cause)
    else {
        panic!("{a:#?}")
    };
    assert_eq!(
        (flush.op.as_str(), flush.start_ns, flush.latency_ns),
        ("fdatasync", ms(1.0), ms(8.0))
    );
    assert!(flush.parts[0].what.starts_with("device cache flush"), "{flush:#?}");
    assert_eq!(a.parts[0].ns, ms(9.1) - ms(1.0));
    let line = a.summary(1);
    assert!(
        line.contains("waiting for thread 10's fdatasync at 0.001s (8.000ms: 7.400ms device cache flush"),
        "{line}"
    );
    // A trace of this version records no stack for an interruptible sleep: the wakeup
    // alone ties the wait to the leader.
    let mut stackless = trace.clone();
    stackless
        .events
        .retain(|e| !(e.pid == 11 && matches!(e.kind, EventKind::Stack { .. })));
    let b = &super::explain(&stackless, std::slice::from_ref(&follower), &[leader])[0];
    assert_eq!(b.parts, a.parts);
    // Without the leader's sync call, the wait still names the thread that ended it.
    let a = &super::explain(&trace, &[follower], &[])[0];
    assert!(
        matches!(a.parts[0].cause, Cause::WaitedForThread { thread: 10, call: None }),
        "{a:#?}"
    );
}

/// The commits each call's journal wait names, by transaction name.
fn commit_names(all: &[Attribution]) -> Vec<Vec<String>> {
    all.iter()
        .map(|a| journal_commits(a).iter().map(|c| c.name.clone()).collect())
        .collect()
}

/// A busy trace loses events. A commit whose end event was dropped ends where the next
/// commit starts (one journal commits one transaction at a time), not when the trace
/// stopped: calls that waited only for later commits do not name it.
#[test]
fn a_commit_whose_end_event_was_dropped_is_bounded_by_the_next_commit() {
    let full = commit_names(&explain(EXT4_STREAM, "fsync"));
    let lossy: String = EXT4_STREAM
        .lines()
        .filter(|l| !(l.contains("jbd2_end_commit") && l.contains("transaction 2 ")))
        .map(|l| format!("{l}\n"))
        .collect();
    let lost = commit_names(&explain(&lossy, "fsync"));
    assert_eq!(full.len(), lost.len());
    let named = |names: &[String], t: &str| names.iter().any(|n| n == &format!("jbd2 transaction {t}"));
    for (f, l) in full.iter().zip(&lost) {
        assert!(f.iter().all(|n| l.contains(n)), "{f:?} {l:?}");
        // Transaction 2 may now reach to where transaction 3 began, no further.
        if named(l, "2") {
            assert!(named(f, "2") || named(f, "3"), "{f:?} {l:?}");
        }
    }
    assert!(full.iter().any(|f| named(f, "4")), "{full:?}");
}

/// A wait for a file's pages names the flusher's work that ran on the disk during it
/// (`writeback_start` to `writeback_written`), by the reason the kernel gave it: the stream
/// behind seed 000's fsyncs is written back by the flusher as `background` work.
#[test]
fn a_wait_for_data_writeback_names_the_flushers_work_that_ran_meanwhile() {
    let trace = Trace::from_saved_text(EXT4_STREAM).expect("saved trace");
    let in_trace: Vec<String> = trace
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Writeback { reason, .. } => Some(reason.as_str().to_string()),
            _ => None,
        })
        .collect();
    let mut named = Vec::new();
    for a in explain(EXT4_STREAM, "fsync") {
        for p in &a.parts {
            if let Cause::DataWriteback { flusher, .. } = &p.cause {
                for reason in flusher {
                    assert!(in_trace.contains(reason), "{reason} is no reason of the trace's");
                }
                if !flusher.is_empty() {
                    assert!(p.cause.to_string().contains("the flusher's"), "{}", p.cause);
                    named.push(p.cause.to_string());
                }
            }
        }
    }
    assert!(
        named.iter().any(|n| n.contains("background")),
        "no wait named the flusher's background work: {named:#?}"
    );
}
