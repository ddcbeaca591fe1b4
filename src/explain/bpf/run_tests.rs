//! Tests of the run's BPF tracer without the kernel: the slowest kept per thread and the
//! thresholds they give, the preparation forgotten, and the chosen calls tied to their records.

use super::*;

fn call(tid: u32, start_ns: u64, latency_ns: u64) -> SlowCall {
    SlowCall {
        start_ns,
        latency_ns,
        pid: 1,
        tid,
        kind: Some(SyncKind::Fsync),
        comm: "fsynclab".into(),
        ..SlowCall::default()
    }
}

#[test]
fn a_threads_floor_is_the_least_of_its_slowest_once_it_holds_enough() {
    let mut s = Slowest::default();
    for i in 0..KEPT as u64 {
        s.offer(call(1, i, 1_000 + i));
    }
    assert_eq!(s.floor(1), 1_000, "a full group: its least");
    s.offer(call(2, 0, 5));
    assert_eq!(s.floor(2), 0, "a thread not yet full needs every call");
    assert_eq!(s.floor(1), 1_000, "each thread has its own floor");
    let mut fdatasync = call(1, 0, 7);
    fdatasync.kind = Some(SyncKind::Fdatasync);
    s.offer(fdatasync);
    assert_eq!(s.floor(1), 0, "a kind the thread just began needs every call of it");
    for i in 0..2 * KEPT as u64 {
        s.offer(call(2, i, 10_000 + i));
    }
    s.offer(call(1, 0, 50_000));
    assert_eq!(s.floor(2), 10_000 + KEPT as u64);
    let kept = s.into_calls();
    assert_eq!(kept.len(), 2 * KEPT + 1);
    assert!(kept
        .iter()
        .filter(|c| c.tid == 2)
        .all(|c| c.latency_ns >= 10_000 + KEPT as u64));
}

#[test]
fn the_preparations_calls_are_forgotten_and_their_threads_floor_falls() {
    let mut s = Slowest::default();
    for i in 0..KEPT as u64 {
        s.offer(call(1, i, 1_000_000 + i));
    }
    s.offer(call(1, 5_000, 2_000_000));
    assert_eq!(s.floor(1), 1_000_001);
    s.forget_before(5_000);
    assert_eq!(s.floor(1), 0, "one call left: every call is needed again");
    assert_eq!(s.into_calls().len(), 1);
}

#[test]
fn a_chosen_call_takes_the_record_inside_it_and_its_parts_add_up_to_what_the_run_measured() {
    let origin = 1_000_000;
    let followed = Followed {
        symbols: KernelSymbols::empty(),
        calls: vec![call(7, origin + 5_000, 90_000), call(7, origin + 500_000, 80_000)],
        every: Vec::new(),
        sent: 2,
        lost: Lost::default(),
        cost: RunTime::default(),
        reader_cpu_ns: 0,
    };
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
        chosen("commit", 400_000, 300_000),
    ];
    let (explained, notes) = explain(&followed, &calls, origin);
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
    assert!(notes[0].starts_with("calls chosen but not explained, having no sync call") && notes[0].ends_with(": 1"));
    assert!(
        notes[1].starts_with("sync calls chosen but not explained, the kernel having sent no record")
            && notes[1].ends_with(": 1")
    );
}
