//! Tests of the slow call's record read from the ring buffer's bytes: every field at its
//! offset, the parts adding up, a short record refused.

use super::*;

fn put(buf: &mut [u8], at: usize, v: &[u8]) {
    buf[at..at + v.len()].copy_from_slice(v);
}

#[test]
fn a_record_reads_back_with_its_parts_adding_up() {
    let mut b = vec![0u8; RECORD_BYTES];
    put(&mut b, 8, &50_000_000u64.to_ne_bytes()); // latency
    put(&mut b, 16, &42u32.to_ne_bytes()); // pid
    put(&mut b, 20, &43u32.to_ne_bytes()); // tid
    put(&mut b, 24, &1u32.to_ne_bytes()); // fdatasync
    put(&mut b, 28, &7i32.to_ne_bytes());
    put(&mut b, 40, b"postgres\0");
    put(&mut b, 56, &1_000_000u64.to_ne_bytes()); // runqueue
    put(&mut b, 64, &2_000_000u64.to_ne_bytes()); // short sleeps
    put(&mut b, 88, &3u64.to_ne_bytes()); // flushes meanwhile
                                          // The second slot of the short sleeps per waker: empty slots are skipped.
    let short = 184 + SHORT_WAKE_BYTES;
    put(&mut b, short, &300_000u64.to_ne_bytes());
    put(&mut b, short + 8, &3u32.to_ne_bytes());
    put(&mut b, short + 12, &77u32.to_ne_bytes());
    put(&mut b, short + 16, b"kworker/u8:2\0");
    put(&mut b, short + 32, &1u32.to_ne_bytes()); // ended by a flush's completion
    put(&mut b, short + 36, &(7u32 << 20).to_ne_bytes()); // on 7:0
    put(&mut b, short + 40, &0xffff_ffff_8100_0500u64.to_ne_bytes()); // a worker's work
    let sleep = 184 + SHORT_WAKERS * SHORT_WAKE_BYTES + SLEEP_BYTES; // the second slot
    put(&mut b, sleep, &40_000_000u64.to_ne_bytes());
    put(&mut b, sleep + 8, &500_000u64.to_ne_bytes());
    put(&mut b, sleep + 16, &99u32.to_ne_bytes());
    put(&mut b, sleep + 20, &16u32.to_ne_bytes());
    put(&mut b, sleep + 24, b"jbd2/sda1-8\0");
    put(&mut b, sleep + 40, &0xffff_ffff_8100_0000u64.to_ne_bytes());
    put(&mut b, sleep + 40 + STACK_DEPTH * 8, &2u32.to_ne_bytes()); // two sleeps joined
    let commit = 184 + SHORT_WAKERS * SHORT_WAKE_BYTES + TOP_SLEEPS * SLEEP_BYTES;
    put(&mut b, commit, &((7u64 << 20 | 3) << 32 | 1234).to_ne_bytes());
    put(&mut b, commit + 8, &5_000u64.to_ne_bytes());
    put(&mut b, commit + 16, &45_000u64.to_ne_bytes());
    put(&mut b, commit + 24, &131_330u64.to_ne_bytes()); // the inode synced
    put(&mut b, commit + 32, &(7u32 << 20 | 3).to_ne_bytes()); // its filesystem
    put(&mut b, commit + 36, &(7u32 << 20).to_ne_bytes()); // its disk
    let throttle = commit + 40;
    put(&mut b, throttle, &3_000u64.to_ne_bytes()); // dirty pages
    put(&mut b, throttle + 8, &4_096u64.to_ne_bytes()); // the limit
    put(&mut b, throttle + 16, &12i64.to_ne_bytes()); // pauses, in jiffies
    put(&mut b, throttle + 24, &3u32.to_ne_bytes());
    let fs_journal = throttle + THROTTLE_BYTES;
    put(&mut b, fs_journal, &1_234u64.to_ne_bytes()); // xfs's checkpoint sequence
    put(&mut b, fs_journal + 8, &77u64.to_ne_bytes()); // btrfs's transaction: no commit
    put(&mut b, fs_journal + 16, &2u32.to_ne_bytes()); // two log forces
    let flusher = fs_journal + FS_JOURNAL_BYTES;
    put(&mut b, flusher, &(1u32 << 0 | 1 << 3 | 1 << 9).to_ne_bytes()); // background, periodic, 9
    let call = SlowCall::parse(&b).unwrap();
    assert_eq!((call.xfs_log_force, call.btrfs_transaction), (Some(1_234), None));
    assert_eq!(
        flusher_reasons(call.flusher_reasons),
        ["background", "periodic", "reason 9"]
    );
    let last = call.last_commit.as_ref().unwrap();
    assert_eq!((last.tid, last.end_ns - last.start_ns), (1234, 40_000));
    assert_eq!(last.name(), "jbd2 transaction 1234 on 7:3");
    assert_eq!(call.kind, Some(SyncKind::Fdatasync));
    assert_eq!(
        (call.pid, call.tid, call.fd, call.comm.as_str()),
        (42, 43, 7, "postgres")
    );
    assert_eq!(call.meanwhile.flushes, 3);
    assert_eq!(call.ino, 131_330);
    assert_eq!((call.dev, call.disk), (7 << 20 | 3, 7 << 20));
    let throttle = call.throttle.unwrap();
    assert_eq!(
        (
            throttle.pauses,
            throttle.pause_jiffies,
            throttle.dirty_pages,
            throttle.limit_pages
        ),
        (3, 12, 3_000, 4_096)
    );
    assert_eq!(call.sleeps.len(), 1);
    assert_eq!(call.sleeps[0].waker_comm, "jbd2/sda1-8");
    assert_eq!(call.sleeps[0].stack.len(), 2);
    assert_eq!(call.sleeps[0].sleeps, 2);
    assert_eq!(
        call.short_wakers,
        vec![ShortSleeps {
            ns: 300_000,
            sleeps: 3,
            waker_tid: 77,
            waker_comm: "kworker/u8:2".into(),
            completed: Some((Completed::Flush, 7 << 20)),
            waker_work: 0xffff_ffff_8100_0500,
        }]
    );
    assert_eq!(
        call.on_cpu_ns(),
        50_000_000 - 1_000_000 - 2_000_000 - 300_000 - 40_000_000
    );
}

#[test]
fn a_short_record_is_refused() {
    assert!(SlowCall::parse(&[0u8; 100]).is_err());
}
