//! The record the BPF program sends for each slow sync call (`struct call` in
//! watch.bpf.c), read field by field from the ring buffer's bytes (cursor.rs) with its
//! parts: the sleeps, the short sleeps per waker, what completed meanwhile, the commit it
//! waited for. [`RECORD_BYTES`] is its size, checked against each record's length so that
//! a program and a reader out of step are an error rather than garbage. Every call of a
//! traced command comes in a smaller record of its own (latency_record.rs).

use super::cursor::Cursor;
pub(crate) use super::kind::SyncKind;

/// Frames of a kernel stack kept per long sleep (STACK_DEPTH).
const STACK_DEPTH: usize = 20;
/// Long sleeps kept per call (TOP_SLEEPS).
pub(crate) const TOP_SLEEPS: usize = 4;
/// Tasks whose short sleeps are kept apart per call (SHORT_WAKERS).
const SHORT_WAKERS: usize = 4;
/// sizeof(struct short_wake).
const SHORT_WAKE_BYTES: usize = 48;
/// sizeof(struct call): its fixed fields, the short sleeps per waker, the sleeps, the last
/// commit, the inode and the device synced, the dirty throttling, xfs's and btrfs's journal,
/// the flusher's reasons (and 4 bytes of the program's own), the task's last file and
/// filesystem remembered from call to call (40 bytes, not read here), and the scheduler's
/// counters at entry with whether the call was split by them (24).
pub(crate) const RECORD_BYTES: usize = 184
    + SHORT_WAKERS * SHORT_WAKE_BYTES
    + TOP_SLEEPS * SLEEP_BYTES
    + 24
    + 8
    + 8
    + THROTTLE_BYTES
    + FS_JOURNAL_BYTES
    + 8
    + 40
    + 24;
/// sizeof(struct throttle).
const THROTTLE_BYTES: usize = 32;
/// sizeof(struct fs_journal).
const FS_JOURNAL_BYTES: usize = 24;
/// sizeof(struct sleep).
const SLEEP_BYTES: usize = 40 + STACK_DEPTH * 8 + 8;

/// A sleep of the call longer than the stack threshold, among its [`TOP_SLEEPS`] longest (with
/// those of the same stack).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct LongSleep {
    /// From leaving the CPU to running again: asleep, then `runnable_ns` waiting for a CPU.
    pub(crate) ns: u64,
    pub(crate) runnable_ns: u64,
    /// The task that woke it (0: an interrupt, or the idle task).
    pub(crate) waker_tid: u32,
    pub(crate) waker_comm: String,
    /// Kernel return addresses, innermost first.
    pub(crate) stack: Vec<u64>,
    /// How many sleeps: the program joins a long sleep to a kept one with the same stack (the
    /// same wait, made again); `ns` is their sum, the waker the first one's.
    pub(crate) sleeps: u32,
}

/// The short sleeps of a call (under the stack threshold: no stack taken) that one task
/// ended, summed: who woke them is what names them.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ShortSleeps {
    pub(crate) ns: u64,
    pub(crate) sleeps: u32,
    /// The task that woke them (0: an interrupt, or the idle task).
    pub(crate) waker_tid: u32,
    pub(crate) waker_comm: String,
    /// The block request whose completion made the wakeups, where one did (it completed
    /// just before, on the same CPU and in the same context), and its disk
    /// (`MAJOR << 20 | MINOR`).
    pub(crate) completed: Option<(Completed, u32)>,
    /// The work function (its address) the waker ran, where the waker is a workqueue's
    /// worker (ext4's conversion of unwritten extents ends a write's page writeback there);
    /// 0 otherwise.
    pub(crate) waker_work: u64,
}

/// The kind of block request whose completion ended a sleep (COMPLETED_* in
/// watch_records.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Completed {
    /// A cache flush (or a request that carried one).
    Flush,
    /// A write.
    Write,
    /// A read.
    Read,
}

impl Completed {
    fn from_number(n: u32) -> Option<Completed> {
        match n {
            1 => Some(Completed::Flush),
            2 => Some(Completed::Write),
            3 => Some(Completed::Read),
            _ => None,
        }
    }
}

/// What completed during the call on its disk (cache flushes, with the time each took from
/// issue to completion, and bytes written) and its filesystem (jbd2 commits, with their
/// durations), or on the machine where those are not known.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Meanwhile {
    pub(crate) flushes: u64,
    pub(crate) flush_ns: u64,
    pub(crate) write_bytes: u64,
    pub(crate) commits: u64,
    pub(crate) commit_ns: u64,
}

/// The dirty throttling a call met (`writeback:balance_dirty_pages` in its task): the
/// pauses the kernel chose, their sum in jiffies, and the dirty pages and the limit at the
/// last event (pages; the limit is the dirty threshold where the kernel's tracepoint passes
/// only that, up to 6.12).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Throttle {
    pub(crate) pauses: u32,
    pub(crate) pause_jiffies: i64,
    pub(crate) dirty_pages: u64,
    pub(crate) limit_pages: u64,
}

/// One slow sync call as the program measured it. Its latency is, exactly, on CPU +
/// `runqueue_ns` + `short_sleep_ns` + `other_sleep_ns` + the short sleeps' and the sleeps'
/// `ns`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct SlowCall {
    /// CLOCK_MONOTONIC at entry.
    pub(crate) start_ns: u64,
    pub(crate) latency_ns: u64,
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    pub(crate) kind: Option<SyncKind>,
    pub(crate) fd: i32,
    pub(crate) ret: i64,
    pub(crate) comm: String,
    pub(crate) runqueue_ns: u64,
    pub(crate) short_sleep_ns: u64,
    pub(crate) other_sleep_ns: u64,
    pub(crate) short_sleeps: u32,
    pub(crate) long_sleeps: u32,
    pub(crate) meanwhile: Meanwhile,
    /// The short sleeps, per task that ended them (the first few tasks; the others' are in
    /// `short_sleep_ns`).
    pub(crate) short_wakers: Vec<ShortSleeps>,
    pub(crate) sleeps: Vec<LongSleep>,
    /// The journal commit of the synced file's filesystem that ended last during the call, if
    /// one did (for sync and msync, which name no file: the machine's last).
    pub(crate) last_commit: Option<EndedCommit>,
    /// The inode number of the file synced (fsync, fdatasync, sync_file_range) or written,
    /// 0 otherwise.
    pub(crate) ino: u64,
    /// The device of the synced file's filesystem (`MAJOR << 20 | MINOR`), 0 for sync and
    /// msync or where it could not be read.
    pub(crate) dev: u32,
    /// The whole disk under that filesystem (0 where not known): `meanwhile` is its flushes
    /// and writes and the filesystem's commits, or the machine's where these are 0.
    pub(crate) disk: u32,
    /// Where `last_commit`'s own time went: the journal thread followed through it as a
    /// call is (its record, sent just ahead of the call's, or else the kernel's record of
    /// the latest commits, if it still held it).
    pub(crate) commit: Option<Box<SlowCall>>,
    /// Dirty throttling in the call, where the kernel traced any.
    pub(crate) throttle: Option<Throttle>,
    /// The checkpoint sequence of the last xfs log force the call made (0: the whole log),
    /// if it made one.
    pub(crate) xfs_log_force: Option<u64>,
    /// The transaction the last btrfs transaction commit committed, that commit ended in
    /// the call's task or, if none did there, in its filesystem's own thread during the call.
    pub(crate) btrfs_transaction: Option<u64>,
    /// Why the flusher wrote back on the call's disk during the call: a bit per reason, as
    /// the kernel numbers them ([`flusher_reasons`]).
    pub(crate) flusher_reasons: u32,
    /// Split by its task's scheduler counters (`--detail latency`, no scheduler hooks):
    /// `runqueue_ns` its time waiting for a CPU, `other_sleep_ns` the rest of its time off
    /// the CPU, its sleeps not named.
    pub(crate) counted: bool,
}

/// The kernel's reasons for the flusher's work (include/linux/writeback.h, `enum
/// wb_reason`, the same since 5.x; tracefs prints these names), by their numbers.
const WB_REASONS: [&str; 8] = [
    "background",
    "vmscan",
    "sync",
    "periodic",
    "laptop_timer",
    "fs_free_space",
    "forker_thread",
    "foreign_flush",
];

/// The reasons a record's bit set names, in the kernel's order (a number it does not know
/// as `reason N`).
pub(crate) fn flusher_reasons(bits: u32) -> Vec<String> {
    (0..32)
        .filter(|r| bits & (1 << r) != 0)
        .map(|r| {
            WB_REASONS
                .get(r)
                .map_or_else(|| format!("reason {r}"), |n| n.to_string())
        })
        .collect()
}

/// A jbd2 commit: its journal's device, its transaction, when it started and ended
/// (CLOCK_MONOTONIC).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct EndedCommit {
    /// The kernel's device number (`MAJOR << 20 | MINOR`).
    pub(crate) dev: u32,
    pub(crate) tid: u32,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
}

impl SlowCall {
    /// Whether this is a journal commit's own record (KIND_COMMIT: the journal thread
    /// followed through a commit), not a sync call's.
    pub(crate) fn is_commit(&self) -> bool {
        self.kind.is_none() && self.last_commit.is_some()
    }
}

impl EndedCommit {
    /// `jbd2 transaction 1234 on 7:0`.
    pub(crate) fn name(&self) -> String {
        format!(
            "jbd2 transaction {} on {}:{}",
            self.tid,
            self.dev >> 20,
            self.dev & 0xfffff
        )
    }
}

impl SlowCall {
    /// An fsync of thread `tid` of fsynclab (process 1), with nothing else in it (for tests).
    #[cfg(test)]
    pub(crate) fn fsync_for_test(tid: u32, start_ns: u64, latency_ns: u64) -> SlowCall {
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

    /// Time on a CPU: what is left of the latency after every stretch off it.
    pub(crate) fn on_cpu_ns(&self) -> u64 {
        let off: u64 = self.runqueue_ns
            + self.short_sleep_ns
            + self.other_sleep_ns
            + self.short_wakers.iter().map(|s| s.ns).sum::<u64>()
            + self.sleeps.iter().map(|s| s.ns).sum::<u64>();
        self.latency_ns.saturating_sub(off)
    }

    /// Reads one record; an error says what did not fit.
    pub(crate) fn parse(bytes: &[u8]) -> Result<SlowCall, String> {
        if bytes.len() < RECORD_BYTES {
            return Err(format!(
                "a record of {} bytes, expected {RECORD_BYTES}: the BPF program and fsynclab disagree",
                bytes.len()
            ));
        }
        let mut r = Cursor::new(bytes);
        let mut call = SlowCall {
            start_ns: r.u64(),
            latency_ns: r.u64(),
            pid: r.u32(),
            tid: r.u32(),
            kind: SyncKind::from_number(r.u32()),
            fd: r.u32() as i32,
            ret: r.u64() as i64,
            comm: r.comm(),
            runqueue_ns: r.u64(),
            short_sleep_ns: r.u64(),
            other_sleep_ns: r.u64(),
            short_sleeps: r.u32(),
            long_sleeps: r.u32(),
            meanwhile: Meanwhile {
                flushes: r.u64(),
                flush_ns: r.u64(),
                write_bytes: r.u64(),
                commits: r.u64(),
                commit_ns: r.u64(),
            },
            short_wakers: Vec::new(),
            sleeps: Vec::new(),
            last_commit: None,
            ino: 0,
            dev: 0,
            disk: 0,
            commit: None,
            throttle: None,
            xfs_log_force: None,
            btrfs_transaction: None,
            flusher_reasons: 0,
            counted: false,
        };
        // off_ns, woken_ns, off_state, waker_pid, waker_comm, woken_by, woken_by_dev,
        // waker_work: the program's own bookkeeping.
        r.skip(8 + 8 + 4 + 4 + 16 + 4 + 4 + 8);
        for _ in 0..SHORT_WAKERS {
            let (ns, sleeps, waker_tid, waker_comm) = (r.u64(), r.u32(), r.u32(), r.comm());
            let (completed, disk, waker_work) = (r.u32(), r.u32(), r.u64());
            if sleeps > 0 {
                call.short_wakers.push(ShortSleeps {
                    ns,
                    sleeps,
                    waker_tid,
                    waker_comm,
                    completed: Completed::from_number(completed).map(|c| (c, disk)),
                    waker_work,
                });
            }
        }
        for _ in 0..TOP_SLEEPS {
            let ns = r.u64();
            let runnable_ns = r.u64();
            let waker_tid = r.u32();
            let stack_bytes = r.u32() as usize;
            let waker_comm = r.comm();
            let frames: Vec<u64> = (0..STACK_DEPTH).map(|_| r.u64()).collect();
            let sleeps = r.u32().max(1);
            r.skip(4);
            if ns == 0 {
                continue;
            }
            let depth = (stack_bytes / 8).min(STACK_DEPTH);
            call.sleeps.push(LongSleep {
                ns,
                runnable_ns,
                waker_tid,
                waker_comm,
                stack: frames[..depth].to_vec(),
                sleeps,
            });
        }
        call.sleeps.sort_by_key(|s| std::cmp::Reverse(s.ns));
        let (dev_tid, start_ns, end_ns) = (r.u64(), r.u64(), r.u64());
        if end_ns != 0 {
            call.last_commit = Some(EndedCommit {
                dev: (dev_tid >> 32) as u32,
                tid: dev_tid as u32,
                start_ns,
                end_ns,
            });
        }
        call.ino = r.u64();
        call.dev = r.u32();
        call.disk = r.u32();
        let throttle = Throttle {
            dirty_pages: r.u64(),
            limit_pages: r.u64(),
            pause_jiffies: r.u64() as i64,
            pauses: r.u32(),
        };
        // A call the kernel throttled has a limit (at least one page).
        call.throttle = (throttle.limit_pages > 0).then_some(throttle);
        r.skip(4);
        let (xfs_seq, btrfs_transaction, xfs_forces, btrfs_commits) = (r.u64(), r.u64(), r.u32(), r.u32());
        call.xfs_log_force = (xfs_forces > 0).then_some(xfs_seq);
        call.btrfs_transaction = (btrfs_commits > 0).then_some(btrfs_transaction);
        call.flusher_reasons = r.u32();
        // woken_into, woken_early, the last file and filesystem seen, and the entry's
        // scheduler counters: the program's own bookkeeping.
        r.skip(2 + 2 + 40 + 16);
        call.counted = r.u32() != 0;
        Ok(call)
    }
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
