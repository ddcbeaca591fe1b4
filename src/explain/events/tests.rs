//! Event lines from traces captured on the project VM.

use super::*;

fn one(line: &str) -> Event {
    let p = parse_trace(line);
    assert_eq!(p.unparsed_lines, 0, "{line}");
    assert_eq!(p.events.len(), 1, "{line}");
    p.events.into_iter().next().unwrap()
}

#[test]
fn header_with_spaces_and_dashes_in_the_task_name() {
    let e = one("      lto cgu.10-9946    [001] d..2.  1635.160045: sched_switch: prev_comm=lto cgu.10 prev_pid=9946 prev_prio=120 prev_state=R+ ==> next_comm=jbd2/loop0-8 next_pid=9997 next_prio=120");
    assert_eq!((e.pid, e.cpu, e.comm.as_str()), (9946, 1, "lto cgu.10"));
    assert_eq!(e.ts_ns, 1_635_160_045_000);
    assert_eq!(
        e.kind,
        EventKind::SchedSwitch {
            prev_comm: "lto cgu.10".into(),
            prev_pid: 9946,
            prev_state: "R+".into(),
            next_comm: "jbd2/loop0-8".into(),
            next_pid: 9997
        }
    );
    let e = one(" memfd:sealed-91-1068    [000] d..2.  1635.688768: sched_wakeup: comm=jbd2/loop0-8 pid=9997 prio=120 target_cpu=000");
    assert_eq!((e.pid, e.comm.as_str()), (1068, "memfd:sealed-91"));
    assert_eq!(
        e.kind,
        EventKind::SchedWakeup {
            comm: "jbd2/loop0-8".into(),
            pid: 9997,
            in_interrupt: false,
        }
    );
}

/// Issue 25: the flags column says a wakeup was made in an interrupt (hardirq `h`, hardirq
/// inside a softirq `H`, softirq `s`, NMI `z`/`Z`), whatever task it interrupted.
#[test]
fn a_wakeup_made_in_an_interrupt_is_told_by_its_flags() {
    let context = |flags: &str| {
        let line = format!("          stress-812     [001] {flags}  1635.688768: sched_waking: comm=fsl-1-w pid=9997 prio=120 target_cpu=001");
        match one(&line).kind {
            EventKind::SchedWakeup { in_interrupt, .. } => in_interrupt,
            other => panic!("{other:?}"),
        }
    };
    for flags in ["d.h2.", "dNh1.", "d.H3.", "..s1.", "d.z..", "d.Z.."] {
        assert!(context(flags), "{flags}");
    }
    for flags in ["d..2.", "dN.2.", "....."] {
        assert!(!context(flags), "{flags}");
    }
}

#[test]
fn stack_frames_follow_their_header() {
    let text = "    jbd2/loop0-8-9997    [000] d..2.  1635.690027: <stack trace>\n => trace_event_raw_event_sched_switch\n => jbd2_journal_commit_transaction+0x1b3/0x2a0 [jbd2]\n => kjournald2\n              dd-10020   [001] .....  1635.710272: ext4_sync_file_exit: dev 7,0 ino 13 ret 0\n";
    let p = parse_trace(text);
    assert_eq!(p.events.len(), 2);
    assert_eq!(p.events[0].pid, 9997);
    assert_eq!(
        p.events[0].kind,
        EventKind::Stack {
            frames: vec![
                "trace_event_raw_event_sched_switch".to_string(),
                "jbd2_journal_commit_transaction".into(),
                "kjournald2".into()
            ]
            .into()
        }
    );
    assert_eq!(
        p.events[1].kind,
        EventKind::Ext4SyncFile {
            exit: true,
            dev: Dev { major: 7, minor: 0 },
            ino: 13
        }
    );
}

#[test]
fn jbd2_events() {
    let e = one("    jbd2/loop0-8-9997    [000] ...1.  1635.710242: jbd2_run_stats: dev 7,0 tid 2 wait 0 request_delay 0 running 1048 locked 0 flushing 0 logging 20 handle_count 150 blocks 6 blocks_logged 8");
    let EventKind::Jbd2RunStats(s) = &e.kind else {
        panic!("{e:?}")
    };
    assert_eq!(
        (s.transaction, s.running_ms, s.logging_ms, s.blocks_logged),
        (2, 1048, 20, 8)
    );
    let e =
        one("    jbd2/loop0-8-9997    [000] .....  1635.710246: jbd2_end_commit: dev 7,0 transaction 2 sync 0 head 2");
    assert_eq!(
        e.kind,
        EventKind::Jbd2Commit {
            phase: Jbd2Phase::End,
            dev: Dev { major: 7, minor: 0 },
            transaction: 2
        }
    );
}

#[test]
fn block_events_and_their_flags() {
    let e = one(
        "    kworker/0:0H-10      [000] .....  1635.696106: block_rq_issue: 7,0 FF 0 () 0 + 0 none,0,0 [kworker/0:0H]",
    );
    let EventKind::BlockRqIssue { rwbs, bytes, .. } = &e.kind else {
        panic!("{e:?}")
    };
    assert_eq!((rwbs.as_str(), *bytes), ("FF", 0));
    assert!(Rwbs::parse(rwbs.as_str()).is_flush());
    let e = one(
        "     ksoftirqd/1-22      [001] ..s..  1635.709086: block_rq_complete: 7,0 WS () 1048584 + 56 none,0,0 [0]",
    );
    assert_eq!(
        e.kind,
        EventKind::BlockRqComplete {
            dev: Dev { major: 7, minor: 0 },
            rwbs: "WS".into(),
            sector: 1048584,
            sectors: 56,
            error: 0
        }
    );
    assert_eq!(
        Rwbs::parse("FWFS"),
        Rwbs {
            preflush: true,
            op: 'W',
            fua: true
        }
    );
    assert_eq!(
        Rwbs::parse("WFS"),
        Rwbs {
            preflush: false,
            op: 'W',
            fua: true
        }
    );
    assert!(!Rwbs::parse("WS").is_flush());
    assert!(Rwbs::parse("F").is_flush());
}

#[test]
fn writeback_events() {
    let e = one("              dd-10022   [001] .....  1635.972068: folio_wait_writeback: bdi 7:0: ino=13 index=0");
    assert_eq!(
        e.kind,
        EventKind::FolioWaitWriteback {
            bdi: "7:0".into(),
            ino: 13,
            index: 0
        }
    );
    let e = one("    kworker/u8:4-7261    [001] ...1.  1635.747410: writeback_start: bdi 7:0: sb_dev 7:0 nr_pages=258139 sync_mode=0 kupdate=0 range_cyclic=0 background=0 reason=fs_free_space cgroup_ino=1");
    assert_eq!(
        e.kind,
        EventKind::Writeback {
            done: false,
            bdi: "7:0".into(),
            nr_pages: 258139,
            reason: "fs_free_space".into()
        }
    );
    let e = one("           <...>-31      [000] .....   100.000001: balance_dirty_pages: bdi 7:0: limit=1169243 setpoint=1000 dirty=1200 wb_setpoint=900 wb_dirty=1100 dirty_ratelimit=4 task_ratelimit=0 dirtied=32 dirtied_pause=32 paused=0 pause=200 period=200 think=0 cgroup_ino=1");
    let EventKind::BalanceDirtyPages(b) = &e.kind else {
        panic!("{e:?}")
    };
    assert_eq!((b.pause_ms, b.dirty_pages), (200, 1200));
}

#[test]
fn lost_events_markers_and_unknown_lines() {
    let text = "CPU:1 [LOST 123 EVENTS]\n           <...>-5      [000] .....   2.5: tracing_mark_write: hello there\n           <...>-5      [000] .....   2.500001: some_event: x=1\ngarbage\n";
    let p = parse_trace(text);
    assert_eq!(p.lost_events, 123);
    assert_eq!(p.unparsed_lines, 1);
    assert_eq!(p.events[0].ts_ns, 2_500_000_000);
    assert_eq!(
        p.events[0].kind,
        EventKind::Marker {
            text: "hello there".into()
        }
    );
    assert_eq!(
        p.events[1].kind,
        EventKind::Other {
            name: "some_event".into(),
            body: "x=1".into()
        }
    );
}

#[test]
fn dev_numbers() {
    let d: Dev = "7,3".parse().unwrap();
    assert_eq!(d, "7:3".parse().unwrap());
    assert_eq!(d.kernel_dev_t(), (7 << 20) | 3);
    assert_eq!(d.to_string(), "7:3");
    assert!("7".parse::<Dev>().is_err());
}

/// Issue 16: lines of a traced process tree (`record-tgid`, system-call events, forks),
/// as this kernel printed them.
#[test]
/// Issue 16.
fn tgid_column_syscalls_and_forks() {
    let e = one("              dd-30419   (  30419) [001] .....  6797.600433: sys_fsync(fd: 1)");
    assert_eq!((e.pid, e.tgid, e.comm.as_str()), (30419, Some(30419), "dd"));
    assert_eq!(
        e.kind,
        EventKind::SyscallEnter {
            name: "fsync".into(),
            args: vec![("fd".into(), 1)].into()
        }
    );
    let e = one("              sh-28118   (  28118) [001] .....  6772.871783: sys_openat -> 0xfffffffffffffffe");
    assert_eq!(
        e.kind,
        EventKind::SyscallExit {
            name: "openat".into(),
            ret: -2
        }
    );
    let e = one(" explain::tracer-27309   (  27308) [000] .....  6746.454517: sys_openat(dfd: 0xffffff9c, filename: 0x7fb38b805560, flags: 0x80201, mode: 0)");
    assert_eq!(
        (e.pid, e.tgid, e.comm.as_str()),
        (27309, Some(27308), "explain::tracer")
    );
    let EventKind::SyscallEnter { name, args } = e.kind else {
        panic!("{e:?}")
    };
    assert_eq!(name, "openat");
    assert_eq!(args[2], ("flags".into(), 0x80201));
    let e = one("              sh-30418   (  30418) [000] .....  6797.600999: sched_process_fork: comm=sh pid=30418 child_comm=sh child_pid=30420");
    assert_eq!(
        e.kind,
        EventKind::SchedProcessFork {
            parent_pid: 30418,
            child_pid: 30420,
            child_comm: "sh".into()
        }
    );
    let e = one("          <idle>-0       (-------) [001] d..2.  6797.600999: sched_wakeup: comm=dd pid=30419 prio=120 target_cpu=001");
    assert_eq!((e.pid, e.tgid, e.comm.as_str()), (0, None, "<idle>"));
    // A task whose name ends in parentheses, without the column.
    let e = one("        (sd-pam)-812     [000] .....  12.000001: sys_fsync(fd: 3)");
    assert_eq!((e.pid, e.tgid, e.comm.as_str()), (812, None, "(sd-pam)"));
}

/// A trace read in pieces cut anywhere reads as the whole text does.
#[test]
/// Issue 16.
fn a_trace_fed_in_pieces_reads_as_a_whole() {
    let text = "    jbd2/loop0-8-9997    [000] d..2.  1635.690027: <stack trace>\n => trace_event_raw_event_sched_switch\n => jbd2_journal_commit_transaction+0x1b3/0x2a0 [jbd2]\n => kjournald2\n              dd-10020   [001] .....  1635.710272: ext4_sync_file_exit: dev 7,0 ino 13 ret 0\n              dd-10020   [001] .....  1635.710273: sys_fsync -> 0x0\n";
    let whole = parse_trace(text);
    for cut in 1..text.len() {
        let mut p = TraceParser::default();
        p.feed(&text.as_bytes()[..cut]);
        p.feed(&text.as_bytes()[cut..]);
        assert_eq!(p.finish(), whole, "cut at {cut}");
    }
    assert_eq!(whole.events.len(), 3);
}

/// Issue 25: a trace holds a hundred thousand sleeps and a few hundred distinct stacks.
#[test]
fn identical_stacks_are_kept_once() {
    let stack = |t: &str| {
        format!("    dd-10020   [001] d..2.  {t}: <stack trace>\n => __schedule+0x1/0x2\n => jbd2_log_wait_commit+0x3/0x4 [jbd2]\n => ext4_sync_file\n")
    };
    let text = [stack("10.000001"), stack("10.000002")].concat();
    let p = parse_trace(&text);
    let frames: Vec<_> = p
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Stack { frames } => Some(frames.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(frames.len(), 2);
    assert_eq!(&frames[0][..], ["__schedule", "jbd2_log_wait_commit", "ext4_sync_file"]);
    assert!(std::sync::Arc::ptr_eq(&frames[0], &frames[1]));
}

/// trace_pipe can give an event after a later one from another CPU; the parser puts it in
/// time order as it comes, after the events of the same time it came after.
#[test]
fn late_events_go_in_time_order_as_they_come() {
    let line = |pid: u32, t: &str| format!("            dd-{pid}   [001] .....  {t}: tracing_mark_write: {pid}\n");
    let text = [
        line(1, "10.000001"),
        line(2, "10.000003"),
        line(3, "10.000005"),
        line(4, "10.000003"),
        line(5, "10.000002"),
    ]
    .concat();
    let mut parser = TraceParser::default();
    for piece in text.as_bytes().chunks(7) {
        parser.feed(piece);
    }
    let pids: Vec<u32> = parser.finish().events.iter().map(|e| e.pid).collect();
    assert_eq!(pids, [1, 5, 2, 4, 3]);
}

/// Issue 25: a trace holds a million events, each as large as the largest kind; the large
/// and rare kinds are boxed and short texts interned to keep every event small.
#[test]
fn events_stay_small() {
    assert!(
        std::mem::size_of::<EventKind>() <= 32,
        "{}",
        std::mem::size_of::<EventKind>()
    );
    assert!(std::mem::size_of::<Event>() <= 64, "{}", std::mem::size_of::<Event>());
}

/// A task the trace printed as `<...>` (its name pushed out of the kernel's cache of names
/// before its lines were read) is named from the events: the fork's child name until its
/// exec, the program the exec ran after it, and a later switch's name for a task seen
/// first unnamed.
#[test]
fn a_task_the_trace_left_unnamed_is_named_by_its_fork_its_exec_and_its_switches() {
    let text = "\
              sh-200     (    200) [000] .....    10.000000: sched_process_fork: comm=sh pid=200 child_comm=sh child_pid=300
           <...>-300     (    300) [001] .....    10.000010: sys_close(fd: 3)
           <...>-300     (    300) [001] .....    10.000020: sched_process_exec: filename=/usr/bin/dd pid=300 old_pid=300
           <...>-300     (    300) [001] .....    10.000030: sys_write(fd: 1, buf: 0x5645, count: 0x1000)
           <...>-300     (    300) [001] d..2.    10.000040: sched_switch: prev_comm=dd prev_pid=300 prev_prio=120 prev_state=D ==> next_comm=swapper/1 next_pid=0 next_prio=120
           <...>-400     (    400) [000] .....    10.000050: sys_fsync(fd: 3)
           <...>-400     (    400) [000] d..2.    10.000060: sched_switch: prev_comm=python3 prev_pid=400 prev_prio=120 prev_state=D ==> next_comm=swapper/0 next_pid=0 next_prio=120
           <...>-500     (    500) [000] .....    10.000070: sys_fsync(fd: 3)
";
    let p = parse_trace(text);
    assert_eq!(p.unparsed_lines, 0);
    let names: Vec<(u32, &str)> = p.events.iter().map(|e| (e.pid, e.comm.as_str())).collect();
    assert_eq!(
        names,
        [
            (200, "sh"),
            (300, "sh"),
            (300, "sh"),
            (300, "dd"),
            (300, "dd"),
            (400, "python3"),
            (400, "python3"),
            // Nothing names it: it stays as the trace printed it.
            (500, "<...>"),
        ]
    );
}
