//! The filters, the lost-event count and the merge of two instances' events.

use super::*;

#[test]
fn filters_follow_threads_and_names() {
    let journal = [Task {
        pid: 9,
        comm: "jbd2/loop0-8".into(),
    }];
    let f = filters(&Watch::threads(&[5, 6]), &journal);
    assert_eq!(
        f.switch,
        "prev_pid == 5 || prev_pid == 6 || prev_pid == 9 || next_pid == 5 || next_pid == 6 || next_pid == 9"
    );
    assert_eq!(
        f.trigger,
        "stacktrace if (prev_pid == 5 || prev_pid == 6 || prev_pid == 9) && prev_state & 2"
    );
    assert_eq!(f.wakeup, "pid == 5 || pid == 6 || pid == 9");
    assert_eq!(f.current, "common_pid == 5 || common_pid == 6");
    let f = filters(&Watch::comm("fsynclab"), &[]);
    assert_eq!(f.switch, "prev_comm == \"fsynclab\" || next_comm == \"fsynclab\"");
    assert_eq!(f.current, "comm == \"fsynclab\"");
}

#[test]
fn lost_events_from_cpu_stats() {
    let stats = "entries: 397\noverrun: 3\ncommit overrun: 0\nbytes: 25424\noldest event ts:  1635.688768\nnow ts:  1638.560681\ndropped events: 4\nread events: 0\n";
    assert_eq!(parse_cpu_stats_lost(stats), 7);
}

#[test]
fn per_filesystem_events() {
    let ext4 = TracedFs {
        fstype: "ext4".into(),
        ..Default::default()
    };
    let names: Vec<&str> = events_for(&ext4, true).iter().map(|e| e.0).collect();
    assert!(names.contains(&"jbd2/jbd2_run_stats") && !names.contains(&"xfs/xfs_log_force"));
    let xfs = TracedFs {
        fstype: "xfs".into(),
        ..Default::default()
    };
    let names: Vec<&str> = events_for(&xfs, true).iter().map(|e| e.0).collect();
    assert!(names.contains(&"xfs/xfs_log_force") && !names.contains(&"jbd2/jbd2_run_stats"));
}

#[test]
fn watched_names_are_cut_as_the_kernel_keeps_them() {
    assert_eq!(Watch::comm("a-very-long-thread-name").comms[0].len(), 15);
}

/// The process tree's instance and the first one are merged in time order; at equal times
/// the first instance's events come first, as a stable sort of the two put them.
#[test]
fn instances_merge_in_time_order() {
    use super::super::events::{Event, EventKind};
    let ev = |ts_ns: u64, pid: u32| Event {
        ts_ns,
        cpu: 0,
        pid,
        tgid: None,
        comm: "t".into(),
        kind: EventKind::Marker { text: String::new() },
    };
    let merged = merge_by_time(vec![ev(1, 1), ev(3, 1), ev(5, 1)], vec![ev(2, 2), ev(3, 2), ev(9, 2)]);
    let order: Vec<(u64, u32)> = merged.iter().map(|e| (e.ts_ns, e.pid)).collect();
    assert_eq!(order, [(1, 1), (2, 2), (3, 1), (3, 2), (5, 1), (9, 2)]);
    assert_eq!(merge_by_time(Vec::new(), vec![ev(1, 2)]).len(), 1);
}
