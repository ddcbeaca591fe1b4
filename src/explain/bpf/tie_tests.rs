//! Tests of the chosen calls tied to the kernel's records, without the kernel: a call takes
//! the record inside it, and a follower's commit its leaders' calls.

use super::*;
use crate::explain::attribution::Call;
use crate::explain::bpf::{Lost, RunTime};

fn call(tid: u32, start_ns: u64, latency_ns: u64) -> SlowCall {
    SlowCall::fsync_for_test(tid, start_ns, latency_ns)
}

/// What a run followed: `calls`, each of whose records was sent and kept.
fn followed(calls: Vec<SlowCall>) -> Followed {
    Followed {
        symbols: KernelSymbols::empty(),
        sent: calls.len() as u64,
        calls,
        every: Vec::new(),
        lost: Lost::default(),
        cost: RunTime::default(),
        reader_cpu_ns: 0,
        hooks: Default::default(),
    }
}
#[test]
fn a_chosen_call_takes_the_record_inside_it_and_its_parts_add_up_to_what_the_run_measured() {
    let origin = 1_000_000;
    let followed = followed(vec![call(7, origin + 5_000, 90_000), call(7, origin + 500_000, 80_000)]);
    let chosen = |op: &str, start_ns, latency_ns| Call {
        tid: 7,
        op: op.into(),
        start_ns,
        latency_ns,
    };
    let calls = [
        chosen("fsync", 4_000, 100_000),
        chosen("fsync", 300_000, 1_000),
        chosen("write", 0, 3_000),
        chosen("rename", 200_000, 3_000),
        chosen("commit", 400_000, 300_000),
    ];
    let (explained, notes) = explain(&followed, &calls, &[], origin);
    assert_eq!(explained.len(), 2);
    let commit = &explained[1];
    assert_eq!((commit.op.as_str(), commit.total_ns()), ("commit", 300_000));
    assert!(commit.parts.iter().any(|p| p.ns == 220_000
        && p.cause
            .to_string()
            .contains("outside its fsync: the rest of the commit")));
    let a = &explained[0];
    assert_eq!((a.start_ns, a.latency_ns, a.total_ns()), (4_000, 100_000, 100_000));
    assert!(a
        .parts
        .iter()
        .any(|p| p.ns == 10_000 && p.cause.to_string().contains("outside")));
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0].starts_with("calls chosen but not explained, having no call the BPF tracer follows")
            && notes[0].ends_with(": 1")
    );
    // The second fsync and the write: the kernel sent no record of either.
    assert!(
        notes[1].starts_with("calls chosen but not explained, the kernel having sent no record")
            && notes[1].ends_with(": 2")
    );
}

#[test]
fn a_followers_commit_is_tied_by_time_to_the_leaders_sync_call_that_ended_inside_it() {
    let origin = 1_000_000;
    // The leader (thread 7) fdatasyncs from 100 us to 900 us; its record was kept.
    let mut leader = call(7, origin + 100_000, 800_000);
    leader.kind = Some(SyncKind::Fdatasync);
    let followed = followed(vec![leader]);
    let span = |tid, start_ns, latency_ns| Span {
        tid,
        op: "fdatasync",
        start_ns,
        latency_ns,
    };
    // An earlier sync of thread 9 ended before the follower's commit began: not one of
    // them; thread 6's ended inside it before the leader's began: an earlier group's.
    let syncs = [span(7, 100_000, 800_000), span(9, 0, 40_000), span(6, 20_000, 60_000)];
    let commit = |tid, start_ns, latency_ns| Call {
        tid,
        op: "commit".into(),
        start_ns,
        latency_ns,
    };
    let rename = Call {
        op: "rename".into(),
        ..commit(8, 50_000, 900_000)
    };
    let (explained, notes) = explain(&followed, &[commit(8, 50_000, 1_000_000), rename], &syncs, origin);
    assert_eq!(explained.len(), 1, "a rename waits for no one's sync call");
    let a = &explained[0];
    assert_eq!(a.total_ns(), 1_000_000);
    let Cause::WaitedForThread {
        thread: 7,
        call: Some(c),
    } = &a.parts[0].cause
    else {
        panic!("{:?}", a.parts)
    };
    assert_eq!(
        (a.parts[0].ns, c.op.as_str(), c.start_ns),
        (800_000, "fdatasync", 100_000)
    );
    assert!(!c.parts.is_empty(), "the leader's own parts, from its record");
    let earlier = a
        .parts
        .iter()
        .find(|p| matches!(p.cause, Cause::WaitedForThread { thread: 6, .. }));
    assert_eq!(
        earlier.map(|p| p.ns),
        Some(30_000),
        "from the commit's start to that call's end"
    );
    assert!(a
        .parts
        .iter()
        .any(|p| p.ns == 170_000 && p.cause.key().starts_with("unattributed")));
    assert!(
        notes.iter().any(|n| n.contains("by time alone") && n.ends_with(": 1")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("having no call the BPF tracer follows") && n.ends_with(": 1")),
        "{notes:?}"
    );
}

/// A follower's commit with its own write recorded inside it (fsync-tps's, whose measuring
/// threads' writes the BPF tracer follows) is still tied to the leader's sync call: the
/// write's parts, then the leader's share of the rest, the write's time left out of it.
#[test]
fn a_followers_commit_with_its_write_inside_is_tied_to_the_leaders_sync_call_too() {
    let origin = 1_000_000;
    let mut leader = call(7, origin + 100_000, 800_000);
    leader.kind = Some(SyncKind::Fdatasync);
    // The follower's write, 60 us to 110 us of the run: on a CPU all along.
    let mut write = call(8, origin + 60_000, 50_000);
    write.kind = Some(SyncKind::Write);
    let followed = followed(vec![leader, write]);
    let syncs = [Span {
        tid: 7,
        op: "fdatasync",
        start_ns: 100_000,
        latency_ns: 800_000,
    }];
    let commit = Call {
        tid: 8,
        op: "commit".into(),
        start_ns: 50_000,
        latency_ns: 1_000_000,
    };
    let (explained, notes) = explain(&followed, &[commit], &syncs, origin);
    let a = &explained[0];
    assert_eq!(a.total_ns(), 1_000_000, "{:?}", a.parts);
    let leaders: Vec<u64> = a
        .parts
        .iter()
        .filter(|p| matches!(p.cause, Cause::WaitedForThread { thread: 7, .. }))
        .map(|p| p.ns)
        .collect();
    assert_eq!(
        leaders,
        [790_000],
        "the leader's 800 us less the 10 us of the write inside it"
    );
    assert!(
        a.parts.iter().any(|p| p.cause == Cause::OnCpu && p.ns == 50_000),
        "{:?}",
        a.parts
    );
    assert!(
        !a.parts
            .iter()
            .any(|p| p.cause.to_string().contains("outside its write")),
        "{:?}",
        a.parts
    );
    assert!(notes.iter().any(|n| n.contains("by time alone")), "{notes:?}");
}
