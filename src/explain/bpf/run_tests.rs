//! Tests of the run's BPF tracer without the kernel: the slowest kept per thread and the
//! thresholds they give, the preparation forgotten.

use super::*;

fn call(tid: u32, start_ns: u64, latency_ns: u64) -> SlowCall {
    SlowCall::fsync_for_test(tid, start_ns, latency_ns)
}

#[test]
fn a_threads_floor_per_kind_is_the_least_of_its_slowest_once_it_holds_enough() {
    use SyncKind::{Fdatasync, Fsync, Write};
    let mut s = Slowest::default();
    for i in 0..KEPT as u64 {
        s.offer(call(1, i, 1_000 + i));
    }
    assert_eq!(s.floor(1, Fsync), 1_000, "a full group: its least");
    s.offer(call(2, 0, 5));
    assert_eq!(s.floor(2, Fsync), 0, "a thread not yet full needs every call");
    assert_eq!(s.floor(1, Fsync), 1_000, "each thread has its own floor");
    let mut fdatasync = call(1, 0, 7);
    fdatasync.kind = Some(Fdatasync);
    s.offer(fdatasync);
    assert_eq!(
        s.floor(1, Fdatasync),
        0,
        "a kind the thread just began needs every call of it"
    );
    assert_eq!(
        s.floor(1, Fsync),
        1_000,
        "and leaves the others' floors where they were"
    );
    // A thread's writes, microseconds each, do not lower its fsyncs' floor.
    for i in 0..KEPT as u64 {
        let mut write = call(1, i, 3 + i);
        write.kind = Some(Write);
        s.offer(write);
    }
    assert_eq!((s.floor(1, Write), s.floor(1, Fsync)), (3, 1_000));
    for i in 0..2 * KEPT as u64 {
        s.offer(call(2, i, 10_000 + i));
    }
    s.offer(call(1, 0, 50_000));
    assert_eq!(s.floor(2, Fsync), 10_000 + KEPT as u64);
    let kept = s.into_calls();
    assert_eq!(kept.len(), 3 * KEPT + 1);
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
    assert_eq!(s.floor(1, SyncKind::Fsync), 1_000_001);
    s.forget_before(5_000);
    assert_eq!(
        s.floor(1, SyncKind::Fsync),
        0,
        "one call left: every call is needed again"
    );
    assert_eq!(s.into_calls().len(), 1);
}
