//! Tests of a slow call's record read as an attribution, without the kernel: its parts add up
//! to it, each long sleep named from its stack, the commit, log force or throttling it waited
//! for said, short sleeps named by what ended them, and what completed meanwhile.

use super::*;

#[test]
fn what_completed_meanwhile_is_said_of_the_calls_disk_or_else_the_machine() {
    let mut call = SlowCall {
        meanwhile: super::super::record::Meanwhile {
            flushes: 2,
            flush_ns: 3_000_000,
            write_bytes: 8 << 10,
            commits: 1,
            commit_ns: 4_000_000,
        },
        ..SlowCall::default()
    };
    assert_eq!(
        meanwhile(&call).unwrap(),
        "meanwhile on the machine: 2 cache flush(es) completed (1.500ms each on average), 1 jbd2 commit(s) (4.000ms each), 8.0 KiB written"
    );
    // A disk the machine does not have (no /sys/dev/block entry) is named by its numbers.
    call.disk = 250 << 20 | 7;
    assert!(meanwhile(&call)
        .unwrap()
        .starts_with("meanwhile on 250:7: 2 cache flush(es)"));
    assert_eq!(meanwhile(&SlowCall::default()), None, "nothing completed");
}

#[test]
fn a_slow_call_becomes_parts_that_add_up_to_it_with_sleeps_of_one_stack_joined() {
    let call = SlowCall {
        start_ns: 5_000_000_000,
        latency_ns: 50_000_000,
        pid: 42,
        tid: 43,
        kind: Some(SyncKind::Fdatasync),
        comm: "postgres".into(),
        runqueue_ns: 1_000_000,
        short_sleep_ns: 2_000_000,
        other_sleep_ns: 3_000_000,
        short_sleeps: 5,
        // Three joined in the kept one (the same stack), one beyond it.
        long_sleeps: 4,
        sleeps: vec![LongSleep {
            ns: 40_000_000,
            runnable_ns: 100_000,
            waker_tid: 99,
            waker_comm: "jbd2/sda1-8".into(),
            stack: Vec::new(),
            sleeps: 3,
        }],
        ..SlowCall::default()
    };
    let a = attribution(&call, &KernelSymbols::empty(), 4_000_000_000, Duration::from_millis(1));
    assert_eq!(a.start_ns, 1_000_000_000);
    assert_eq!(a.op, "fdatasync");
    assert_eq!(a.process.as_deref(), Some("postgres of process 42, thread"));
    assert_eq!(a.total_ns(), a.latency_ns);
    assert_eq!((a.parts[0].ns, a.parts[0].waits), (40_000_000, 3));
    assert!(
        a.notes[0].contains("3 sleeps of") && a.notes[0].contains("jbd2/sda1-8 99"),
        "{:?}",
        a.notes
    );
    let beyond = a.parts.iter().find(|p| p.ns == 3_000_000).expect("the sleep beyond");
    assert_eq!(beyond.waits, 1);
    assert!(
        beyond.cause.to_string().contains("(1 more long sleeps"),
        "{}",
        beyond.cause
    );
    assert!(a.parts.iter().any(|p| p.cause == Cause::OnCpu && p.ns == 4_000_000));
}

#[test]
fn the_commit_a_call_waited_for_says_where_its_own_time_went() {
    let symbols = KernelSymbols::from_kallsyms(
        "ffffffff81000000 T jbd2_log_wait_commit\nffffffff81000100 T jbd2_journal_commit_transaction\n",
    );
    let commit = SlowCall {
        latency_ns: 12_000_000,
        runqueue_ns: 200_000,
        short_wakers: vec![ShortSleeps {
            ns: 100_000,
            sleeps: 2,
            waker_tid: 15,
            waker_comm: "ksoftirqd/0".into(),
            completed: None,
            waker_work: 0,
        }],
        sleeps: vec![LongSleep {
            ns: 10_000_000,
            stack: vec![0xffff_ffff_8100_0150],
            sleeps: 1,
            ..LongSleep::default()
        }],
        meanwhile: super::super::record::Meanwhile {
            flushes: 1,
            flush_ns: 7_000_000,
            write_bytes: 32 << 10,
            ..Default::default()
        },
        ..SlowCall::default()
    };
    let call = SlowCall {
        start_ns: 1_000_000,
        latency_ns: 15_000_000,
        kind: Some(SyncKind::Fsync),
        sleeps: vec![LongSleep {
            ns: 14_000_000,
            stack: vec![0xffff_ffff_8100_0010],
            sleeps: 1,
            ..LongSleep::default()
        }],
        last_commit: Some(super::super::record::EndedCommit {
            dev: 7 << 20,
            tid: 12,
            start_ns: 2_000_000,
            end_ns: 14_000_000,
        }),
        commit: Some(Box::new(commit)),
        ..SlowCall::default()
    };
    let a = attribution(&call, &symbols, 0, Duration::from_millis(1));
    assert_eq!(a.total_ns(), a.latency_ns);
    let Cause::JournalCommit { commits, .. } = &a.parts[0].cause else {
        panic!("{:?}", a.parts)
    };
    let shares: Vec<(&str, u64)> = commits[0].waited_for.iter().map(|s| (s.what.as_str(), s.ns)).collect();
    assert_eq!(
        shares,
        [
            ("cache flushes", 7_000_000),
            ("journal writes", 3_000_000),
            ("on CPU", 1_700_000),
            ("waiting for a CPU", 200_000),
            ("short sleeps ended by ksoftirqd/0", 100_000),
        ]
    );
    assert_eq!((commits[0].flushes, commits[0].device_write_bytes), (1, 32 << 10));
}

#[test]
fn a_dirty_throttling_pause_carries_the_figures_the_kernel_traced_in_the_call() {
    let symbols = KernelSymbols::from_kallsyms("ffffffff81000000 T balance_dirty_pages\n");
    let pause = LongSleep {
        ns: 30_000_000,
        stack: vec![0xffff_ffff_8100_0040],
        sleeps: 2,
        ..LongSleep::default()
    };
    let mut call = SlowCall {
        latency_ns: 31_000_000,
        kind: Some(SyncKind::Write),
        sleeps: vec![pause],
        ..SlowCall::default()
    };
    let cause = |call: &SlowCall| {
        attribution(call, &symbols, 0, Duration::from_millis(1)).parts[0]
            .cause
            .clone()
    };
    // The kernel traced nothing in the call (no program for its tracepoint): the stack
    // names the pause, without figures.
    assert_eq!(
        cause(&call).to_string(),
        "dirty throttling (2 pauses in balance_dirty_pages)"
    );
    // The kernel's count: five pauses chosen, three of them too short to be long sleeps.
    call.throttle = Some(super::super::record::Throttle {
        pauses: 5,
        pause_jiffies: 8,
        dirty_pages: 2_560,
        limit_pages: 2_048,
    });
    let Cause::DirtyThrottle {
        pauses,
        dirty_pages,
        limit_pages,
        ..
    } = cause(&call)
    else {
        panic!("{:?}", cause(&call))
    };
    assert_eq!((pauses, dirty_pages, limit_pages), (5, Some(2_560), Some(2_048)));
    assert_eq!(
        cause(&call).to_string(),
        "dirty throttling (5 pauses in balance_dirty_pages; 10.0 MiB dirty, limit 8.0 MiB)"
    );
    assert_eq!(jiffies_ms(8, Some(250)), 32);
    assert_eq!(jiffies_ms(-3, Some(1000)), 0, "a pause the kernel did not take");
    assert_eq!(jiffies_ms(8, None), 0);
}

#[test]
fn an_xfs_log_force_is_one_wait_split_by_the_flushes_completed_during_the_call() {
    let symbols = KernelSymbols::from_kallsyms(
        "ffffffff81000000 T xlog_wait_on_iclog\nffffffff81000100 T xfs_log_force_seq\nffffffff81000200 T xfs_file_fsync\n",
    );
    let sleep = |ns, stack: Vec<u64>| LongSleep {
        ns,
        stack,
        sleeps: 1,
        ..LongSleep::default()
    };
    let call = SlowCall {
        latency_ns: 100_000_000,
        kind: Some(SyncKind::Fsync),
        // Two waits for the log, of two stacks.
        sleeps: vec![
            sleep(60_000_000, vec![0xffff_ffff_8100_0010, 0xffff_ffff_8100_0210]),
            sleep(30_000_000, vec![0xffff_ffff_8100_0110, 0xffff_ffff_8100_0210]),
        ],
        meanwhile: super::super::record::Meanwhile {
            flushes: 2,
            flush_ns: 50_000_000,
            ..Default::default()
        },
        ..SlowCall::default()
    };
    let a = attribution(&call, &symbols, 0, Duration::from_millis(1));
    assert_eq!(a.total_ns(), a.latency_ns);
    assert_eq!(a.parts[0].ns, 90_000_000);
    assert_eq!(
        a.parts[0].cause.to_string(),
        "waiting for an xfs log force: xfs log force (50.000ms cache flushes, 40.000ms log and data writes)"
    );
    // Flushes that took longer than the waits are counted up to the waits.
    let mut flushing = call.clone();
    flushing.meanwhile.flush_ns = 400_000_000;
    let Cause::JournalCommit { commits, .. } =
        &attribution(&flushing, &symbols, 0, Duration::from_millis(1)).parts[0].cause
    else {
        panic!()
    };
    let shares: Vec<(&str, u64)> = commits[0].waited_for.iter().map(|s| (s.what.as_str(), s.ns)).collect();
    assert_eq!(shares, [("cache flushes", 90_000_000)]);
    assert_eq!(commits[0].flushes, 2);
}

#[test]
fn a_log_force_or_a_commit_is_named_by_what_its_event_told() {
    let symbols = KernelSymbols::from_kallsyms(
        "ffffffff81000000 T xlog_wait_on_iclog\nffffffff81000100 T xfs_log_force_seq\nffffffff81000200 T wait_current_trans\nffffffff81000300 T btrfs_commit_transaction\nffffffff81000400 T btrfs_sync_log\n",
    );
    let waiting_in = |stack: Vec<u64>| SlowCall {
        latency_ns: 100_000_000,
        kind: Some(SyncKind::Fsync),
        sleeps: vec![LongSleep {
            ns: 90_000_000,
            stack,
            sleeps: 1,
            ..LongSleep::default()
        }],
        ..SlowCall::default()
    };
    let named = |call: &SlowCall| {
        let Cause::JournalCommit { commits, .. } =
            &attribution(call, &symbols, 0, Duration::from_millis(1)).parts[0].cause
        else {
            panic!("not a wait for the journal")
        };
        commits[0].name.clone()
    };
    let mut xfs = waiting_in(vec![0xffff_ffff_8100_0010, 0xffff_ffff_8100_0110]);
    assert_eq!(named(&xfs), "xfs log force");
    xfs.xfs_log_force = Some(812);
    assert_eq!(named(&xfs), "xfs log force (checkpoint sequence 812)");
    xfs.xfs_log_force = Some(0);
    assert_eq!(named(&xfs), "xfs log force (all)");
    let mut btrfs = waiting_in(vec![0xffff_ffff_8100_0210, 0xffff_ffff_8100_0310]);
    btrfs.btrfs_transaction = Some(41);
    assert_eq!(named(&btrfs), "btrfs transaction commit (transaction 41)");
    // A log tree's sync is no transaction commit: a commit that ended meanwhile is not it.
    let mut log_tree = waiting_in(vec![0xffff_ffff_8100_0410]);
    log_tree.btrfs_transaction = Some(41);
    assert_eq!(named(&log_tree), "btrfs log tree sync");
}

#[test]
fn a_journal_thread_is_the_synced_disks_own_or_another_disks() {
    assert!(!another_disks_journal("jbd2/loop0-8", "loop0"));
    assert!(another_disks_journal("jbd2/loop0-8", "loop1"));
    assert!(another_disks_journal("jbd2/loop1-8", "loop10"));
    assert!(!another_disks_journal("jbd2/dm-0-8", "dm-0"));
    // Cut at 15 characters: `jbd2/nvme0n1p12-8` is kept as `jbd2/nvme0n1p12`.
    assert!(!another_disks_journal("jbd2/nvme0n1p12", "nvme0n1p12"));
    assert!(!another_disks_journal("jbd2/nvme10n1p1", "nvme10n1p12"));
    assert!(another_disks_journal("jbd2/nvme0n1p1-", "nvme1n1p1"));
    assert!(!another_disks_journal("kworker/u8:2", "loop0"));
    assert!(device_name(0).is_none());
}

#[test]
fn short_sleeps_are_named_by_the_task_that_ended_them() {
    let short = |ns, sleeps, comm: &str| ShortSleeps {
        ns,
        sleeps,
        waker_tid: 99,
        waker_comm: comm.into(),
        completed: None,
        waker_work: 0,
    };
    let call = SlowCall {
        start_ns: 1_000_000,
        latency_ns: 1_000_000,
        kind: Some(SyncKind::Fsync),
        short_sleep_ns: 50_000,
        short_sleeps: 1,
        short_wakers: vec![short(600_000, 2, "jbd2/loop0-8"), short(200_000, 1, "kworker/u8:2")],
        last_commit: Some(super::super::record::EndedCommit {
            dev: 7 << 20,
            tid: 12,
            start_ns: 1_100_000,
            end_ns: 1_700_000,
        }),
        ..SlowCall::default()
    };
    let a = attribution(&call, &KernelSymbols::empty(), 0, Duration::from_millis(1));
    assert_eq!(a.total_ns(), a.latency_ns);
    assert_eq!(a.parts[0].ns, 600_000);
    assert_eq!(a.parts[0].waits, 2);
    let journal = a.parts[0].cause.to_string();
    assert!(
        journal.contains("journal commit") && journal.contains("jbd2 transaction 12 on 7:0"),
        "{journal}"
    );
    let woken = a.parts.iter().find(|p| p.ns == 200_000).unwrap().cause.to_string();
    assert!(woken.contains("ended by kworker/u8:2 99"), "{woken}");
    assert!(a.parts.iter().any(|p| p.cause == Cause::OnCpu && p.ns == 150_000));
}

#[test]
fn short_sleeps_ended_by_a_block_completion_on_the_calls_disk_are_named_by_it() {
    let disk = 8 << 20;
    let ended_by = |ns, sleeps, completed| ShortSleeps {
        ns,
        sleeps,
        waker_tid: 0,
        waker_comm: "interrupt".into(),
        completed,
        waker_work: 0,
    };
    let call = SlowCall {
        start_ns: 1_000_000,
        latency_ns: 1_000_000,
        kind: Some(SyncKind::Write),
        ino: 13,
        disk,
        short_wakers: vec![
            ended_by(400_000, 2, Some((Completed::Write, disk))),
            ended_by(300_000, 1, Some((Completed::Flush, disk))),
            // Another disk's flush ended this one: not the call's, so not named by it.
            ended_by(100_000, 1, Some((Completed::Flush, 9 << 20))),
            ended_by(60_000, 3, Some((Completed::Read, disk))),
            // ext4's worker converting unwritten extents ended a wait for the pages.
            ShortSleeps {
                waker_tid: 77,
                waker_comm: "kworker/u8:1".into(),
                waker_work: 0xffff_ffff_8100_0110,
                ..ended_by(40_000, 1, None)
            },
            // A worker whose work says nothing known: named with its work.
            ShortSleeps {
                waker_tid: 78,
                waker_comm: "kworker/u8:2".into(),
                waker_work: 0xffff_ffff_8100_0210,
                ..ended_by(20_000, 1, None)
            },
        ],
        ..SlowCall::default()
    };
    let symbols = KernelSymbols::from_kallsyms(
        "ffffffff81000100 t ext4_end_io_rsv_work\nffffffff81000200 t vmstat_update\nffffffff81000300 T _etext\n",
    );
    let a = attribution(&call, &symbols, 0, Duration::from_millis(1));
    assert_eq!(a.total_ns(), a.latency_ns);
    let part = |ns| a.parts.iter().find(|p| p.ns == ns).unwrap();
    // The write's completion's two sleeps and the worker's one: a wait for the pages.
    assert_eq!(
        part(440_000).cause,
        Cause::DataWriteback {
            inodes: vec![13],
            device_write_bytes: 0,
            flusher: Vec::new()
        }
    );
    assert_eq!(part(440_000).waits, 3);
    assert_eq!(part(60_000).cause, Cause::DeviceRead { reads: 3 });
    let worker = part(20_000).cause.to_string();
    assert!(
        worker.contains("ended by kworker/u8:2 78 running vmstat_update"),
        "{worker}"
    );
    assert_eq!(part(300_000).cause, Cause::DeviceFlush { flushes: 1 });
    let other = part(100_000).cause.to_string();
    assert!(other.contains("ended by an interrupt"), "{other}");
    // The journal thread followed through its commit: its short sleeps ended by the
    // disk's completions are its cache flushes and journal writes.
    let commit = SlowCall {
        latency_ns: 700_000,
        short_wakers: call.short_wakers[..2].to_vec(),
        ..SlowCall::default()
    };
    let shares = commit_shares(&commit, &KernelSymbols::empty());
    let share = |what: &str| shares.iter().find(|s| s.what == what).map(|s| s.ns);
    assert_eq!(share("journal writes"), Some(400_000));
    assert_eq!(share("cache flushes"), Some(300_000));
}
