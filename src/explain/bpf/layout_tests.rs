//! The layouts of layout.rs against the BPF object's BTF and watch_records.h, and the readers and
//! the writer of the records against the layouts: a change on one side only fails here.

use std::collections::BTreeMap;
use std::mem::{offset_of, size_of};
use std::path::PathBuf;
use std::time::Duration;

use super::super::histogram::{self, FAILED_BUCKET};
use super::super::hooks::SyncHooks;
use super::super::kind::{SyncKind, OTHER_CALLS, WRITE_CALLS};
use super::super::latency_record::{CallLatency, LATENCY_BYTES};
use super::super::record::{
    self, Completed, EndedCommit, LongSleep, Meanwhile, ShortSleeps, SlowCall, RECORD_BYTES, TOP_SLEEPS,
};
use super::super::settings::{Detail, Filter, Settings, Writes};
use super::*;

#[test]
fn every_shared_struct_is_laid_out_as_the_objects_btf_and_watch_records_h_say() {
    let btf = object_btf();
    for layout in layouts() {
        let name = layout.c_name;
        let header = header_layout(name);
        let theirs = match btf_layout(&btf, name) {
            Some(found) => {
                // The header's reading agrees with BTF where both describe a struct, which
                // is how the structs BTF leaves out can be trusted to it.
                assert_eq!(header, found, "struct {name}: watch_records.h (left), BTF (right)");
                assert!(!NOT_IN_BTF.contains(&name), "struct {name} is in the BTF now");
                found
            }
            None if NOT_IN_BTF.contains(&name) => header,
            None => panic!("struct {name} is not in the object's BTF"),
        };
        assert_eq!(
            laid(&layout),
            theirs,
            "struct {name}: layout.rs (left), the object's (right)"
        );
    }
}

#[test]
fn the_numbers_user_space_uses_are_watch_records_hs() {
    let kinds: BTreeMap<String, u64> = defines()
        .into_iter()
        .filter_map(|(name, n)| Some((name.strip_prefix("KIND_")?.to_string(), n)))
        .collect();
    for (name, n) in &kinds {
        let kind = SyncKind::from_number(*n as u32);
        match name.as_str() {
            // A journal commit's own record: no call (SlowCall::is_commit).
            "COMMIT" => assert_eq!(kind, None, "KIND_COMMIT"),
            "OTHER" => assert_eq!(kind, Some(SyncKind::Other), "KIND_OTHER"),
            _ => assert_eq!(
                kind.map(|k| k.name().to_uppercase()).as_deref(),
                Some(name.as_str()),
                "KIND_{name} is {n}"
            ),
        }
    }
    for kind in SyncKind::ALL {
        assert!(kinds.contains_key(&kind.name().to_uppercase()), "no KIND_ for {kind}");
    }
    let counts = [
        ("KINDS", KINDS),
        ("WRITE_CALLS", WRITE_CALLS.len()),
        ("OTHER_CALLS", OTHER_CALLS.len()),
        ("TOP_SLEEPS", TOP_SLEEPS),
        ("SHORT_WAKERS", SHORT_WAKERS),
        ("STACK_DEPTH", STACK_DEPTH),
        ("TASK_COMM_LEN", size_of::<Comm>()),
        ("FAILED_BUCKET", usize::from(FAILED_BUCKET)),
        ("JOURNAL_GROUPS", super::super::follow::JOURNAL_GROUPS as usize),
        ("COMMITS_PER_GROUP", super::super::follow::COMMITS_PER_GROUP as usize),
    ];
    for (name, ours) in counts {
        assert_eq!(define(name), ours as u64, "{name}");
    }
    assert_eq!(RECORD_BYTES, size_of::<Call>(), "record.rs's RECORD_BYTES");
    assert_eq!(
        LATENCY_BYTES,
        size_of::<LatencyRecord>(),
        "latency_record.rs's LATENCY_BYTES"
    );
}

/// A record's bytes, written field by field at the layouts' offsets over a filling that no
/// field reads as itself (the fields the reader skips keep it).
struct Record(Vec<u8>);

impl Record {
    fn new(size: usize) -> Record {
        Record(vec![0xa5; size])
    }

    fn put(&mut self, at: usize, bytes: &[u8]) -> &mut Record {
        self.0[at..at + bytes.len()].copy_from_slice(bytes);
        self
    }

    fn comm(&mut self, at: usize, name: &str) -> &mut Record {
        let mut comm: Comm = [0; 16];
        comm[..name.len()].copy_from_slice(name.as_bytes());
        self.put(at, &comm)
    }
}

#[test]
fn a_slow_calls_record_is_read_at_the_layouts_offsets() {
    let (flush, write, read, none) = (
        define("COMPLETED_FLUSH") as u32,
        define("COMPLETED_WRITE") as u32,
        define("COMPLETED_READ") as u32,
        define("COMPLETED_NONE") as u32,
    );
    let mut r = Record::new(size_of::<Call>());
    r.put(offset_of!(Call, start_ns), &1_001u64.to_ne_bytes())
        .put(offset_of!(Call, latency_ns), &900_000_000u64.to_ne_bytes())
        .put(offset_of!(Call, pid), &11u32.to_ne_bytes())
        .put(offset_of!(Call, tid), &12u32.to_ne_bytes())
        .put(offset_of!(Call, kind), &(define("KIND_FDATASYNC") as u32).to_ne_bytes())
        .put(offset_of!(Call, fd), &(-3i32).to_ne_bytes())
        .put(offset_of!(Call, ret), &(-5i64).to_ne_bytes())
        .comm(offset_of!(Call, comm), "postgres")
        .put(offset_of!(Call, runqueue_ns), &21u64.to_ne_bytes())
        .put(offset_of!(Call, short_sleep_ns), &22u64.to_ne_bytes())
        .put(offset_of!(Call, other_sleep_ns), &23u64.to_ne_bytes())
        .put(offset_of!(Call, short_sleeps), &24u32.to_ne_bytes())
        .put(offset_of!(Call, long_sleeps), &25u32.to_ne_bytes());
    let totals = offset_of!(Call, at_entry);
    for (field, value) in [
        (offset_of!(Totals, flushes), 31u64),
        (offset_of!(Totals, flush_ns), 32),
        (offset_of!(Totals, write_bytes), 33),
        (offset_of!(Totals, commits), 34),
        (offset_of!(Totals, commit_ns), 35),
    ] {
        r.put(totals + field, &value.to_ne_bytes());
    }
    let mut short_wakers = Vec::new();
    for (i, completed) in [flush, write, read, none].into_iter().enumerate() {
        let at = offset_of!(Call, short_wakers) + i * size_of::<ShortWake>();
        let i = i as u32;
        let waker_comm = format!("waker{i}");
        r.put(at + offset_of!(ShortWake, ns), &u64::from(100 + i).to_ne_bytes())
            .put(at + offset_of!(ShortWake, sleeps), &(110 + i).to_ne_bytes())
            .put(at + offset_of!(ShortWake, waker_pid), &(120 + i).to_ne_bytes())
            .comm(at + offset_of!(ShortWake, waker_comm), &waker_comm)
            .put(at + offset_of!(ShortWake, completed), &completed.to_ne_bytes())
            .put(at + offset_of!(ShortWake, completed_dev), &(130 + i).to_ne_bytes())
            .put(
                at + offset_of!(ShortWake, waker_work),
                &u64::from(140 + i).to_ne_bytes(),
            );
        let completed = [Completed::Flush, Completed::Write, Completed::Read]
            .get(i as usize)
            .map(|c| (*c, 130 + i));
        short_wakers.push(ShortSleeps {
            ns: u64::from(100 + i),
            sleeps: 110 + i,
            waker_tid: 120 + i,
            waker_comm,
            completed,
            waker_work: u64::from(140 + i),
        });
    }
    let mut sleeps = Vec::new();
    for i in 0..TOP_SLEEPS {
        let at = offset_of!(Call, sleeps) + i * size_of::<Sleep>();
        // Longest first, as the reader orders them; each with a stack one frame deeper.
        let (ns, n) = (5_000 - 1_000 * i as u64, i as u32);
        let stack: Vec<u64> = (0..STACK_DEPTH as u64)
            .map(|f| 0xffff_0000 + 100 * n as u64 + f)
            .collect();
        let waker_comm = format!("sleeper{i}");
        r.put(at + offset_of!(Sleep, ns), &ns.to_ne_bytes())
            .put(at + offset_of!(Sleep, runnable_ns), &u64::from(600 + n).to_ne_bytes())
            .put(at + offset_of!(Sleep, waker_pid), &(700 + n).to_ne_bytes())
            .put(at + offset_of!(Sleep, stack_bytes), &(8 * (n + 1)).to_ne_bytes())
            .comm(at + offset_of!(Sleep, waker_comm), &waker_comm)
            .put(at + offset_of!(Sleep, sleeps), &(n + 2).to_ne_bytes());
        for (f, frame) in stack.iter().enumerate() {
            r.put(at + offset_of!(Sleep, stack) + 8 * f, &frame.to_ne_bytes());
        }
        sleeps.push(LongSleep {
            ns,
            runnable_ns: u64::from(600 + n),
            waker_tid: 700 + n,
            waker_comm,
            stack: stack[..i + 1].to_vec(),
            sleeps: n + 2,
        });
    }
    let (dev, disk) = (7u32 << 20 | 3, 7u32 << 20);
    let commit = offset_of!(Call, last_commit);
    let throttle = offset_of!(Call, throttle);
    let journal = offset_of!(Call, fs_journal);
    r.put(
        commit + offset_of!(Commit, dev_tid),
        &(u64::from(dev) << 32 | 1_234).to_ne_bytes(),
    )
    .put(commit + offset_of!(Commit, start_ns), &5_000u64.to_ne_bytes())
    .put(commit + offset_of!(Commit, end_ns), &45_000u64.to_ne_bytes())
    .put(offset_of!(Call, ino), &131_330u64.to_ne_bytes())
    .put(offset_of!(Call, dev), &dev.to_ne_bytes())
    .put(offset_of!(Call, disk), &disk.to_ne_bytes())
    .put(throttle + offset_of!(Throttle, dirty_pages), &3_000u64.to_ne_bytes())
    .put(throttle + offset_of!(Throttle, limit_pages), &4_096u64.to_ne_bytes())
    .put(throttle + offset_of!(Throttle, pause_jiffies), &12i64.to_ne_bytes())
    .put(throttle + offset_of!(Throttle, pauses), &3u32.to_ne_bytes())
    .put(journal + offset_of!(FsJournal, xfs_seq), &1_234u64.to_ne_bytes())
    .put(journal + offset_of!(FsJournal, btrfs_transaction), &77u64.to_ne_bytes())
    .put(journal + offset_of!(FsJournal, xfs_forces), &2u32.to_ne_bytes())
    .put(journal + offset_of!(FsJournal, btrfs_commits), &1u32.to_ne_bytes())
    .put(offset_of!(Call, flusher_reasons), &0b1001u32.to_ne_bytes())
    .put(offset_of!(Call, counted), &1u32.to_ne_bytes());
    let expected = SlowCall {
        start_ns: 1_001,
        latency_ns: 900_000_000,
        pid: 11,
        tid: 12,
        kind: Some(SyncKind::Fdatasync),
        fd: -3,
        ret: -5,
        comm: "postgres".into(),
        runqueue_ns: 21,
        short_sleep_ns: 22,
        other_sleep_ns: 23,
        short_sleeps: 24,
        long_sleeps: 25,
        meanwhile: Meanwhile {
            flushes: 31,
            flush_ns: 32,
            write_bytes: 33,
            commits: 34,
            commit_ns: 35,
        },
        short_wakers,
        sleeps,
        last_commit: Some(EndedCommit {
            dev,
            tid: 1_234,
            start_ns: 5_000,
            end_ns: 45_000,
        }),
        ino: 131_330,
        dev,
        disk,
        commit: None,
        throttle: Some(record::Throttle {
            pauses: 3,
            pause_jiffies: 12,
            dirty_pages: 3_000,
            limit_pages: 4_096,
        }),
        xfs_log_force: Some(1_234),
        btrfs_transaction: Some(77),
        flusher_reasons: 0b1001,
        counted: true,
    };
    assert_eq!(SlowCall::parse(&r.0), Ok(expected));
}

#[test]
fn a_latency_record_and_a_histogram_key_are_read_at_the_layouts_offsets() {
    let mut r = Record::new(size_of::<LatencyRecord>());
    r.put(offset_of!(LatencyRecord, start_ns), &7_000u64.to_ne_bytes())
        .put(offset_of!(LatencyRecord, latency_ns), &12_345u64.to_ne_bytes())
        .put(offset_of!(LatencyRecord, pid), &42u32.to_ne_bytes())
        .put(offset_of!(LatencyRecord, tid), &43u32.to_ne_bytes())
        .put(
            offset_of!(LatencyRecord, kind),
            &(define("KIND_SYNCFS") as u32).to_ne_bytes(),
        )
        .put(offset_of!(LatencyRecord, ret), &(-5i32).to_ne_bytes())
        .comm(offset_of!(LatencyRecord, comm), "postgres");
    let call = CallLatency::parse(&r.0).expect("a latency record");
    assert_eq!(
        (call.start_ns, call.latency_ns, call.pid, call.tid, call.kind, call.ret),
        (7_000, 12_345, 42, 43, Some(SyncKind::Syncfs), -5)
    );
    assert_eq!(call.comm, "postgres");
    let mut k = Record::new(size_of::<LatencyKey>());
    k.put(offset_of!(LatencyKey, pid), &42u32.to_ne_bytes())
        .put(offset_of!(LatencyKey, kind), &4u16.to_ne_bytes())
        .put(offset_of!(LatencyKey, bucket), &FAILED_BUCKET.to_ne_bytes());
    let key = histogram::LatencyKey::parse(&k.0).expect("a key");
    assert_eq!((key.pid, key.kind, key.bucket), (42, 4, FAILED_BUCKET));
}

/// The `N` bytes of `config` at `at`.
fn bytes_at<const N: usize>(config: &[u8], at: usize) -> [u8; N] {
    config[at..at + N].try_into().expect("in the config")
}

#[test]
fn the_config_is_written_at_the_layouts_offsets() {
    let filters = [
        (Filter::All, "FILTER_ALL"),
        (Filter::Processes(vec![1]), "FILTER_PROCESSES"),
        (Filter::Comm("postgres".into()), "FILTER_COMM"),
        (Filter::Cgroup(PathBuf::from("/sys/fs/cgroup/db")), "FILTER_CGROUP"),
    ];
    let writes = [
        (Writes::Durable, "WRITES_SYNC"),
        (
            Writes::All {
                tid: 9,
                comm: "walwriter".into(),
            },
            "WRITES_ALL",
        ),
    ];
    let hooks = [
        (SyncHooks::RawSyscalls, "HOOKS_RAW_SYSCALLS"),
        (SyncHooks::Functions, "HOOKS_FUNCTIONS"),
    ];
    // Only --detail latency, without the scheduler's hooks, splits by the counters.
    let details = [(Detail::Disk, 0), (Detail::Latency, 1), (Detail::Sleeps, 0)];
    for ((((filter, filter_name), (writes, writes_name)), (sync_hooks, hooks_name)), (detail, by_counters)) in filters
        .into_iter()
        .zip(writes.into_iter().cycle())
        .zip(hooks.into_iter().cycle())
        .zip(details.into_iter().cycle())
    {
        let settings = Settings {
            filter: filter.clone(),
            report_threshold: Duration::from_millis(5),
            stack_threshold: Duration::from_micros(1_500),
            run_time_stats: false,
            follow_forks_of: Some(77),
            every_call: true,
            writes: writes.clone(),
            detail,
        };
        let c = settings.config_bytes(sync_hooks);
        assert_eq!(c.len(), size_of::<Config>(), "{filter:?}");
        let u32_at = |off: usize| u32::from_ne_bytes(bytes_at(&c, off));
        let u64_at = |off: usize| u64::from_ne_bytes(bytes_at(&c, off));
        let i64_at = |off: usize| i64::from_ne_bytes(bytes_at(&c, off));
        let comm_at = |off: usize| {
            let comm: Comm = bytes_at(&c, off);
            String::from_utf8_lossy(&comm).trim_end_matches('\0').to_string()
        };
        assert_eq!(u64::from(u32_at(offset_of!(Config, filter))), define(filter_name));
        assert_eq!(u32_at(offset_of!(Config, follow_tid)), 77);
        for (i, kind) in SyncKind::SYSCALLS.iter().enumerate() {
            assert_eq!(Some(i64_at(offset_of!(Config, nr) + 8 * i)), kind.syscall_number());
        }
        assert_eq!(u64_at(offset_of!(Config, report_threshold_ns)), 5_000_000);
        assert_eq!(u64_at(offset_of!(Config, stack_threshold_ns)), 1_500_000);
        let comm = if let Filter::Comm(comm) = &filter {
            comm.as_str()
        } else {
            ""
        };
        assert_eq!(comm_at(offset_of!(Config, comm)), comm);
        assert_eq!(u32_at(offset_of!(Config, every_call)), 1);
        assert_eq!(u64::from(u32_at(offset_of!(Config, writes))), define(writes_name));
        for (i, nr) in WRITE_CALLS.iter().enumerate() {
            assert_eq!(i64_at(offset_of!(Config, write_nr) + 8 * i), *nr);
        }
        let (tid, comm) = match &writes {
            Writes::All { tid, comm } => (*tid, comm.as_str()),
            Writes::Durable => (0, ""),
        };
        assert_eq!(u32_at(offset_of!(Config, write_tid)), tid);
        assert_eq!(comm_at(offset_of!(Config, write_comm)), comm);
        let mut takes_fd = 0;
        for (i, (nr, fd)) in OTHER_CALLS.iter().enumerate() {
            assert_eq!(i64_at(offset_of!(Config, other_nr) + 8 * i), *nr);
            takes_fd |= u32::from(*fd) << i;
        }
        assert_eq!(u32_at(offset_of!(Config, other_fd)), takes_fd);
        assert_eq!(u64::from(u32_at(offset_of!(Config, sync_hooks))), define(hooks_name));
        assert_eq!(u32_at(offset_of!(Config, split_by_counters)), by_counters, "{detail:?}");
    }
}
