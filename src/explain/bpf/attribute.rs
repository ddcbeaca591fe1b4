//! A slow call the BPF program sent, as the explanation every result carries
//! ([`Attribution`]): the same causes, read from the same kernel stacks with the same
//! classifier ([`crate::explain::stacks::classify`]) as the tracefs tracer's, so that
//! `fsynclab explain` and `report` read a watch's calls as they read a run's.
//!
//! The parts add up to the call exactly, as the program measured them: each long sleep (from
//! leaving the CPU to running again) is one part named from its stack, the program having
//! joined the sleeps of one stack; the time on a CPU, the waits for one, the short sleeps (no
//! stack taken) and the long sleeps beyond the [`super::record::TOP_SLEEPS`] stacks the
//! program keeps are the others. Who woke each long sleep,
//! and what completed on the machine meanwhile, are the call's notes.

use std::time::Duration;

use super::record::{flusher_reasons, Completed, LongSleep, ShortSleeps, SlowCall, SyncKind};
use super::symbols::KernelSymbols;
use crate::explain::attribution::{
    commit_by_flushes, shares, told_by_event, unnamed_commit, waker_name, Attribution, Cause, Commit, Part, Share,
};
use crate::explain::stacks::{classify, top_frames, WaitKind};
use crate::units::{format_duration, format_latency_ns, human_size};

/// A call split by its task's scheduler counters: its time off the CPU that was not a wait
/// for one, which no hook named.
const ASLEEP_UNNAMED: &str =
    "asleep, not named: watched with --detail latency, split by the task's scheduler counters (--detail sleeps names each sleep)";

/// `call` as an attribution, its start on the clock that began at `origin_ns`
/// (CLOCK_MONOTONIC); `stack_over` is the program's stack threshold, named in the parts it
/// left unnamed.
pub(crate) fn attribution(
    call: &SlowCall,
    symbols: &KernelSymbols,
    origin_ns: u64,
    stack_over: Duration,
) -> Attribution {
    let mut parts: Vec<Part> = Vec::new();
    let mut notes = Vec::new();
    let mut add = |cause: Cause, ns: u64, waits: u32| {
        if ns == 0 {
            return;
        }
        let key = cause.key();
        match parts.iter_mut().find(|p| p.cause.key() == key) {
            Some(p) => {
                p.ns += ns;
                p.waits += waits;
            }
            None => parts.push(Part { cause, ns, waits }),
        }
    };
    // The call's waits for its journal, all of them: an xfs or btrfs one is split once by
    // the flushes completed during the call (its sleeps are one part).
    let journal_ns: u64 = call
        .sleeps
        .iter()
        .filter(|s| classify(&symbols.frames(&s.stack)) == WaitKind::JournalCommit)
        .map(|s| s.ns)
        .sum();
    for sleep in &call.sleeps {
        let cause = with_commit(cause_of(sleep, symbols, call, journal_ns), call, origin_ns, symbols);
        if sleep.waker_tid != 0 {
            let what = match sleep.sleeps {
                1 => format!("a sleep of {}", format_latency_ns(sleep.ns)),
                n => format!("{n} sleeps of {} in all", format_latency_ns(sleep.ns)),
            };
            let first = if sleep.sleeps > 1 { " (the first)" } else { "" };
            notes.push(format!(
                "{what} ({cause}) ended by {} {}{first}",
                sleep.waker_comm, sleep.waker_tid
            ));
        }
        add(cause, sleep.ns, sleep.sleeps);
    }
    let disk = device_name(call.dev);
    for short in &call.short_wakers {
        let cause = with_commit(
            short_cause(short, stack_over, call, symbols, disk.as_deref()),
            call,
            origin_ns,
            symbols,
        );
        add(cause, short.ns, short.sleeps);
    }
    add(Cause::OnCpu, call.on_cpu_ns(), 0);
    add(Cause::Runnable, call.runqueue_ns, 0);
    add(
        Cause::Unattributed {
            reason: format!(
                "{} sleeps under {} each, whose stacks are not taken",
                call.short_sleeps,
                format_duration(stack_over)
            ),
        },
        call.short_sleep_ns,
        call.short_sleeps,
    );
    let kept: u32 = call.sleeps.iter().map(|s| s.sleeps).sum();
    let beyond = call.long_sleeps.saturating_sub(kept);
    let reason = if call.counted {
        ASLEEP_UNNAMED.to_string()
    } else {
        format!("{beyond} more long sleeps, beyond the longest the kernel keeps per call")
    };
    add(Cause::Unattributed { reason }, call.other_sleep_ns, beyond);
    parts.sort_by_key(|p| std::cmp::Reverse(p.ns));
    if let Some(line) = meanwhile(call) {
        notes.push(line);
    }
    Attribution {
        tid: call.tid,
        // As `who` reads it before the thread id: `postgres 812` or `postgres of process
        // 812, thread 815`.
        process: Some(if call.pid == call.tid {
            call.comm.clone()
        } else {
            format!("{} of process {}, thread", call.comm, call.pid)
        }),
        op: call.kind.map_or("sync call", SyncKind::name).to_string(),
        start_ns: call.start_ns.saturating_sub(origin_ns),
        latency_ns: call.latency_ns,
        parts,
        notes,
    }
}

/// A wait for the journal named by the commit that ended last during the call (the one the
/// kernel recorded), with when it started, how long it took, how much of the call it
/// covered and, where the kernel kept it, where its own time went; any other cause as it
/// is.
fn with_commit(cause: Cause, call: &SlowCall, origin_ns: u64, symbols: &KernelSymbols) -> Cause {
    match (cause, &call.last_commit) {
        (Cause::JournalCommit { journal, .. }, Some(c)) => {
            let call_end = call.start_ns + call.latency_ns;
            let overlap = c.end_ns.min(call_end).saturating_sub(c.start_ns.max(call.start_ns));
            Cause::JournalCommit {
                journal,
                commits: vec![Commit {
                    name: c.name(),
                    start_ns: Some(c.start_ns as i64 - origin_ns as i64),
                    duration_ns: Some(c.end_ns.saturating_sub(c.start_ns)),
                    overlap_ns: overlap,
                    waited_for: call
                        .commit
                        .as_deref()
                        .map(|d| commit_shares(d, symbols))
                        .unwrap_or_default(),
                    flushes: call.commit.as_deref().map_or(0, |d| d.meanwhile.flushes as u32),
                    device_write_bytes: call.commit.as_deref().map_or(0, |d| d.meanwhile.write_bytes),
                    blocks_logged: None,
                }],
            }
        }
        (cause, _) => cause,
    }
}

/// Where a journal commit's time went, from the journal thread followed through it: its
/// sleeps by stack as the tracefs tracer names the journal thread's (the journal writes and
/// a flush are one wait for the commit record's write with its flush: the flushes completed
/// meanwhile are counted as cache flushes, up to that wait, the rest as journal writes),
/// the time on a CPU and waiting for one, largest first.
fn commit_shares(commit: &SlowCall, symbols: &KernelSymbols) -> Vec<Share> {
    let mut by: Vec<(String, u64)> = Vec::new();
    let mut add = |what: &str, ns: u64| match by.iter_mut().find(|(w, _)| w == what) {
        Some(x) => x.1 += ns,
        None => by.push((what.to_string(), ns)),
    };
    let mut writing = 0;
    for sleep in &commit.sleeps {
        let frames = symbols.frames(&sleep.stack);
        match classify(&frames) {
            WaitKind::JournalWrite | WaitKind::DeviceFlush => writing += sleep.ns,
            WaitKind::DataWriteback => add("ordered data writeback", sleep.ns),
            WaitKind::JournalHandles => add("open handles", sleep.ns),
            WaitKind::DirtyThrottle => add("dirty throttling", sleep.ns),
            WaitKind::JournalCommit => add("an earlier commit", sleep.ns),
            _ if frames.is_empty() => add("unattributed (no stack)", sleep.ns),
            _ => add(&top_frames(&frames, 1).join(""), sleep.ns),
        }
    }
    let flushing = commit.meanwhile.flush_ns.min(writing);
    add("cache flushes", flushing);
    add("journal writes", writing - flushing);
    for short in &commit.short_wakers {
        match short.completed {
            Some((Completed::Flush, _)) => {
                add("cache flushes", short.ns);
                continue;
            }
            Some((Completed::Write, _)) => {
                add("journal writes", short.ns);
                continue;
            }
            Some((Completed::Read, _)) => {
                add("reads from the disk", short.ns);
                continue;
            }
            None => {}
        }
        let waker = match short.waker_tid {
            0 => waker_name(0, &short.waker_comm),
            _ => short.waker_comm.clone(),
        };
        add(&format!("short sleeps ended by {waker}"), short.ns);
    }
    add("unattributed (short sleeps)", commit.short_sleep_ns);
    add("unattributed (more long sleeps)", commit.other_sleep_ns);
    add("waiting for a CPU", commit.runqueue_ns);
    add("on CPU", commit.on_cpu_ns());
    shares(by)
}

/// The kernel's name of block device `dev` (`MAJOR << 20 | MINOR`): `loop0`, `sda1`.
fn device_name(dev: u32) -> Option<String> {
    if dev == 0 {
        return None;
    }
    let link = std::fs::read_link(format!("/sys/dev/block/{}:{}", dev >> 20, dev & 0xfffff)).ok()?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

/// Whether `comm` is the journal thread of another disk than `disk` (the synced file's):
/// `jbd2/<device>-<inode>`, its name cut at 15 characters as the kernel keeps it.
fn another_disks_journal(comm: &str, disk: &str) -> bool {
    let Some(rest) = comm.strip_prefix("jbd2/") else {
        return false;
    };
    let device = match rest.rsplit_once('-') {
        Some((d, inode)) if inode.bytes().all(|b| b.is_ascii_digit()) => d,
        _ => rest,
    };
    let cut = comm.len() >= 15;
    !(device == disk || (cut && disk.starts_with(device)))
}

/// What short sleeps (no stack taken) waited for, from what ended them: the journal thread
/// (`jbd2/...`) of the synced file's disk (`disk`, its name, where known) ends the waits
/// for its commits; the completion of a cache flush on the call's disk ends a wait for that
/// flush, a write's a wait for the file's data being written (the program saw the request
/// complete just before the wakeup, on the same CPU and in the same context); a workqueue's
/// worker is named by the work it ran ([`work_cause`]: ext4's conversion of unwritten
/// extents ends a write's page writeback); any other waker (a task, or an interrupt) is
/// named, the wait itself left unattributed.
fn short_cause(
    short: &ShortSleeps,
    stack_over: Duration,
    call: &SlowCall,
    symbols: &KernelSymbols,
    disk: Option<&str>,
) -> Cause {
    let other = disk.is_some_and(|d| another_disks_journal(&short.waker_comm, d));
    if short.waker_comm.starts_with("jbd2/") && !other {
        return Cause::JournalCommit {
            journal: short.waker_comm.clone(),
            commits: Vec::new(),
        };
    }
    let pages = || Cause::DataWriteback {
        inodes: (call.ino != 0).then_some(call.ino).into_iter().collect(),
        device_write_bytes: 0,
        flusher: flusher_reasons(call.flusher_reasons),
    };
    match short.completed.filter(|&(_, on)| call.disk == 0 || on == call.disk) {
        Some((Completed::Flush, _)) => return Cause::DeviceFlush { flushes: short.sleeps },
        Some((Completed::Write, _)) => return pages(),
        Some((Completed::Read, _)) => return Cause::DeviceRead { reads: short.sleeps },
        None => {}
    }
    let work = (short.waker_work != 0).then(|| symbols.name(short.waker_work));
    match work.and_then(work_cause) {
        Some(WorkEnds::Pages) => return pages(),
        Some(WorkEnds::Journal(journal)) => {
            return Cause::JournalCommit {
                journal: journal.into(),
                commits: Vec::new(),
            }
        }
        None => {}
    }
    let running = work.map(|w| format!(" running {w}")).unwrap_or_default();
    Cause::Unattributed {
        reason: format!(
            "{} sleeps under {} each ended by {}{running}, whose stacks are not taken",
            short.sleeps,
            format_duration(stack_over),
            waker_name(short.waker_tid, &short.waker_comm)
        ),
    }
}

/// What a wait ended by a workqueue's worker was for, by the work it ran.
#[derive(Debug, PartialEq)]
enum WorkEnds {
    /// A file's pages finishing writeback (the write's completion handled in a worker).
    Pages,
    /// A journal's commit or log force.
    Journal(&'static str),
}

/// The works that end a wait for a file's pages or a journal after the block completion
/// (fs/ext4/page-io.c, fs/xfs/xfs_aops.c, fs/xfs/xfs_log.c, fs/btrfs/bio.c and
/// ordered-data.c, fs/iomap/direct-io.c).
fn work_cause(work: &str) -> Option<WorkEnds> {
    match work {
        "ext4_end_io_rsv_work"
        | "xfs_end_io"
        | "btrfs_end_bio_work"
        | "finish_ordered_fn"
        | "iomap_dio_complete_work" => Some(WorkEnds::Pages),
        "xlog_ioend_work" | "xlog_cil_push_work" => Some(WorkEnds::Journal("xfs log")),
        _ => None,
    }
}

/// What a long sleep of `call` waited for, from its stack, as the tracefs tracer names it
/// (without the commits that only a trace of the whole machine shows); a wait for data
/// writeback is for the synced file's own pages (with the flusher's work that ran on the
/// call's disk during the call: the whole call's, where tracefs's is the wait's), a
/// dirty-throttling pause has the call's
/// throttling figures where the kernel traced them; `journal_ns` is all the call's waits
/// for its journal.
fn cause_of(sleep: &LongSleep, symbols: &KernelSymbols, call: &SlowCall, journal_ns: u64) -> Cause {
    let frames = symbols.frames(&sleep.stack);
    let ino = call.ino;
    match classify(&frames) {
        WaitKind::DataWriteback => Cause::DataWriteback {
            inodes: (ino != 0).then_some(ino).into_iter().collect(),
            device_write_bytes: 0,
            flusher: flusher_reasons(call.flusher_reasons),
        },
        WaitKind::JournalCommit => journal_wait(journal_ns, &frames, call),
        WaitKind::DeviceFlush => Cause::DeviceFlush { flushes: 1 },
        WaitKind::DirtyThrottle => {
            let throttle = call.throttle;
            Cause::DirtyThrottle {
                // The kernel's count of the call's pauses, as its `pause_ms` sums them (it
                // counts the short ones too); the long sleeps where it traced none.
                pauses: throttle.map_or(sleep.sleeps, |t| t.pauses).max(1),
                pause_ms: throttle.map_or(0, |t| jiffies_ms(t.pause_jiffies, crate::kernel::config::hz())),
                dirty_pages: throttle.map(|t| t.dirty_pages),
                limit_pages: throttle.map(|t| t.limit_pages),
            }
        }
        WaitKind::UserLock if sleep.waker_tid != 0 => Cause::WaitedForThread {
            thread: sleep.waker_tid,
            call: None,
        },
        _ if frames.is_empty() => Cause::Unattributed {
            reason: "a sleep whose kernel stack could not be taken".into(),
        },
        _ => Cause::OtherWait {
            stack: top_frames(&frames, 3),
        },
    }
}

/// A wait for the journal: jbd2's, named afterwards by the commit the kernel recorded
/// ([`with_commit`]); xfs's log force or btrfs's commit (by the stack's frames, with the
/// log force's checkpoint sequence or the transaction committed where their events told
/// them), which the program does not follow through their threads: the call's `waited_ns`
/// for it split into the cache flushes completed on the call's disk during the call (at
/// most the wait) and the writes that make up the rest.
fn journal_wait(waited_ns: u64, frames: &[String], call: &SlowCall) -> Cause {
    let fstype = if frames.iter().any(|f| f.starts_with("xfs_") || f.starts_with("xlog_")) {
        "xfs"
    } else if frames.iter().any(|f| f.starts_with("btrfs_")) {
        "btrfs"
    } else {
        "ext4"
    };
    let Some((name, writes)) = unnamed_commit(fstype, frames) else {
        return Cause::JournalCommit {
            journal: "journal".into(),
            commits: Vec::new(),
        };
    };
    let m = &call.meanwhile;
    let name = match call.btrfs_transaction {
        Some(t) if name == "btrfs transaction commit" => format!("{name} (transaction {t})"),
        _ => told_by_event(name, call.xfs_log_force.filter(|_| fstype == "xfs")),
    };
    Cause::JournalCommit {
        journal: if fstype == "xfs" { "xfs log" } else { "btrfs" }.into(),
        commits: vec![commit_by_flushes(
            name,
            writes,
            waited_ns,
            m.flush_ns,
            m.flushes as u32,
            0,
        )],
    }
}

/// `jiffies` in milliseconds at `hz` jiffies a second, as the kernel's tracepoint prints a
/// pause; 0 where the frequency is not known (the kernel's configuration not found).
fn jiffies_ms(jiffies: i64, hz: Option<u32>) -> u64 {
    match hz {
        Some(hz) => jiffies.max(0) as u64 * 1000 / u64::from(hz),
        None => 0,
    }
}

/// `meanwhile on loop0: 3 cache flush(es) completed (...), 1 jbd2 commit(s) (...), 2.0 MiB
/// written`, when anything completed: on the call's disk (and its filesystem's journal), or
/// `on the machine` where the call names no file.
pub(crate) fn meanwhile(call: &SlowCall) -> Option<String> {
    let m = call.meanwhile;
    let mut what = Vec::new();
    if m.flushes > 0 {
        what.push(format!(
            "{} cache flush(es) completed ({} each on average)",
            m.flushes,
            format_latency_ns(m.flush_ns / m.flushes)
        ));
    }
    if m.commits > 0 {
        what.push(format!(
            "{} jbd2 commit(s) ({} each)",
            m.commits,
            format_latency_ns(m.commit_ns / m.commits)
        ));
    }
    if m.write_bytes > 0 {
        what.push(format!("{} written", human_size(m.write_bytes)));
    }
    let place = device_name(call.disk).unwrap_or_else(|| match call.disk {
        0 => "the machine".into(),
        disk => format!("{}:{}", disk >> 20, disk & 0xfffff),
    });
    (!what.is_empty()).then(|| format!("meanwhile on {place}: {}", what.join(", ")))
}

#[cfg(test)]
#[path = "attribute_tests.rs"]
mod tests;
