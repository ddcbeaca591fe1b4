//! What a part of a call's time is (a cause, with the commits and shares it names), and
//! how it reads in the text report.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::units::{format_latency_ns, human_size};

/// The waker either tracer names for a wakeup made in an interrupt (a hardirq, a softirq or
/// an NMI: a device's completion, a timer), as task 0, rather than the task it interrupted
/// (the BPF program's INTERRUPT_COMM; tracefs's hardirq/softirq flag of `sched_waking`).
pub(crate) const INTERRUPT_WAKER: &str = "interrupt";

/// Who ended a sleep, as the text names it: `jbd2/sda1-8 412`, or `an interrupt`.
pub(crate) fn waker_name(tid: u32, comm: &str) -> String {
    if tid == 0 && comm == INTERRUPT_WAKER {
        return "an interrupt".into();
    }
    format!("{comm} {tid}")
}

/// A share of a journal commit's own time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Share {
    pub(crate) what: String,
    pub(crate) ns: u64,
}

/// A commit a call waited behind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Commit {
    /// `jbd2 transaction 42`, `xfs log force to lsn 0x100000045`, `btrfs transaction 17`.
    pub(crate) name: String,
    /// When it started, ns on the run clock (negative: before the run), if traced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) start_ns: Option<i64>,
    /// Its own duration, start to end, if both were traced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) duration_ns: Option<u64>,
    /// How much of the call's wait it covered.
    pub(crate) overlap_ns: u64,
    /// Where its time went (the journal thread's time for jbd2 and btrfs), largest first.
    pub(crate) waited_for: Vec<Share>,
    /// Device cache flushes completed during it.
    pub(crate) flushes: u32,
    /// Bytes the device wrote during it (all writers).
    pub(crate) device_write_bytes: u64,
    /// Journal blocks it wrote (jbd2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) blocks_logged: Option<u32>,
}

/// Another thread's call a wait was for: the sync call a group commit's leader made while
/// its followers waited.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ThreadCall {
    /// `fdatasync`, `syncfs`...
    pub(crate) op: String,
    /// Its start, ns on the run clock, and its latency.
    pub(crate) start_ns: u64,
    pub(crate) latency_ns: u64,
    /// Where its own time went, largest first (its explanation's parts, in words).
    pub(crate) parts: Vec<Share>,
}

/// What a part of a call's time was spent on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cause", rename_all = "snake_case")]
pub(crate) enum Cause {
    /// Running on a CPU.
    OnCpu,
    /// Runnable, waiting for a CPU (preempted).
    Runnable,
    /// Woken from a sleep and not yet off CPU again, when the switch that put the thread
    /// back on a CPU is missing from the trace: on a CPU or waiting for one, which the trace
    /// cannot tell apart (it would have recorded a new sleep).
    Woken,
    /// Waiting for pages of a file to finish writeback.
    DataWriteback {
        /// Inodes waited on (`folio_wait_writeback` events).
        inodes: Vec<u64>,
        /// Bytes the device wrote meanwhile (all writers).
        device_write_bytes: u64,
        /// Why the flusher wrote back on the disk meanwhile (`background`, `periodic`, ...:
        /// the `reason` of its `writeback_start` events), each once; empty when it did not
        /// (or the tracer did not see it).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        flusher: Vec<String>,
    },
    /// Waiting for a journal commit (jbd2), log force (xfs) or transaction commit (btrfs).
    JournalCommit {
        /// `jbd2`, `xfs log`, `btrfs`.
        journal: String,
        commits: Vec<Commit>,
    },
    /// A device cache flush the call issued and waited for.
    DeviceFlush { flushes: u32 },
    /// Reads from the disk the call waited for (a bitmap or a tree block read to allocate),
    /// named by their completion where no stack was taken (the BPF tracer's short sleeps).
    DeviceRead { reads: u32 },
    /// Paused by dirty throttling (`balance_dirty_pages`).
    DirtyThrottle {
        pauses: u32,
        /// The pauses the kernel chose, summed, ms.
        pause_ms: u64,
        /// Dirty pages and the limit at the last pause.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dirty_pages: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit_pages: Option<u64>,
    },
    /// Asleep in user-space synchronisation (a futex: a lock, a condition variable) until
    /// another traced thread woke it: a group commit's follower waiting for the leader,
    /// with the leader's sync call that covered the wait when there was one.
    WaitedForThread {
        thread: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call: Option<ThreadCall>,
    },
    /// Another wait, with the top of its kernel stack.
    OtherWait { stack: Vec<String> },
    /// Time the trace cannot explain, and why.
    Unattributed { reason: String },
}

impl Cause {
    /// Parts with the same key are merged; the page colours parts by it.
    pub(crate) fn key(&self) -> String {
        match self {
            Cause::OnCpu => "on_cpu".into(),
            Cause::Runnable => "runnable".into(),
            Cause::Woken => "woken".into(),
            Cause::DataWriteback { .. } => "data_writeback".into(),
            Cause::JournalCommit { .. } => "journal_commit".into(),
            Cause::DeviceFlush { .. } => "device_flush".into(),
            Cause::DeviceRead { .. } => "device_read".into(),
            Cause::DirtyThrottle { .. } => "dirty_throttle".into(),
            Cause::WaitedForThread { thread, call } => {
                format!("thread:{thread}:{}", call.as_ref().map_or(0, |c| c.start_ns))
            }
            Cause::OtherWait { stack } => format!("other:{}", stack.join(" ")),
            Cause::Unattributed { reason } => format!("unattributed:{reason}"),
        }
    }

    pub(super) fn merge(&mut self, other: Cause) {
        match (self, other) {
            (
                Cause::DataWriteback {
                    inodes,
                    device_write_bytes,
                    flusher,
                },
                Cause::DataWriteback {
                    inodes: i2,
                    device_write_bytes: b2,
                    flusher: f2,
                },
            ) => {
                for i in i2 {
                    if !inodes.contains(&i) {
                        inodes.push(i);
                    }
                }
                *device_write_bytes += b2;
                for reason in f2 {
                    if !flusher.contains(&reason) {
                        flusher.push(reason);
                    }
                }
            }
            (Cause::JournalCommit { commits, .. }, Cause::JournalCommit { commits: c2, .. }) => {
                for c in c2 {
                    match commits.iter_mut().find(|x| x.name == c.name) {
                        Some(x) => x.merge(c),
                        None => commits.push(c),
                    }
                }
            }
            (Cause::DeviceFlush { flushes }, Cause::DeviceFlush { flushes: f2 }) => *flushes += f2,
            (Cause::DeviceRead { reads }, Cause::DeviceRead { reads: r2 }) => *reads += r2,
            (
                Cause::DirtyThrottle {
                    pauses,
                    pause_ms,
                    dirty_pages,
                    limit_pages,
                },
                Cause::DirtyThrottle {
                    pauses: p2,
                    pause_ms: m2,
                    dirty_pages: d2,
                    limit_pages: l2,
                },
            ) => {
                *pauses += p2;
                *pause_ms += m2;
                *dirty_pages = d2.or(*dirty_pages);
                *limit_pages = l2.or(*limit_pages);
            }
            _ => {}
        }
    }
}

/// One cause and the time it took.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Part {
    #[serde(flatten)]
    pub(crate) cause: Cause,
    pub(crate) ns: u64,
    /// How many separate off-CPU intervals it was made of (0 for on-CPU time).
    pub(crate) waits: u32,
}

/// The explanation of one call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Attribution {
    pub(crate) tid: u32,
    /// The name of the task that made the call, when it is not the run's own (a command
    /// traced by `exec --explain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) process: Option<String>,
    pub(crate) op: String,
    /// Start of the call, ns on the run clock.
    pub(crate) start_ns: u64,
    pub(crate) latency_ns: u64,
    /// Largest first; they add up to `latency_ns`.
    pub(crate) parts: Vec<Part>,
    /// What may make the parts less certain (events lost, a stack missing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) notes: Vec<String>,
}

impl Attribution {
    /// The parts summed (equals `latency_ns`).
    pub(crate) fn total_ns(&self) -> u64 {
        self.parts.iter().map(|p| p.ns).sum()
    }

    /// The time of the parts with cause key like `f`.
    #[cfg(test)]
    pub(crate) fn ns_of(&self, f: impl Fn(&Cause) -> bool) -> u64 {
        self.parts.iter().filter(|p| f(&p.cause)).map(|p| p.ns).sum()
    }

    /// One line: `fsync at 12.301s took 5.334s: 4.9s waiting for jbd2 transaction 42 ...`,
    /// with the `max_parts` largest parts.
    #[cfg(test)]
    pub(crate) fn summary(&self, max_parts: usize) -> String {
        let parts: Vec<String> = self
            .parts
            .iter()
            .filter(|p| p.ns > 0)
            .take(max_parts)
            .map(|p| format!("{} {}", format_latency_ns(p.ns), p.cause))
            .collect();
        format!(
            "{} at {:.3}s took {}: {}",
            self.op,
            self.start_ns as f64 / 1e9,
            format_latency_ns(self.latency_ns),
            parts.join("; ")
        )
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::OnCpu => f.write_str("on CPU"),
            Cause::Runnable => f.write_str("waiting for a CPU (preempted)"),
            Cause::Woken => f.write_str(
                "woken, then on a CPU or waiting for one (the switch back onto a CPU is missing from the trace)",
            ),
            Cause::DataWriteback {
                inodes,
                device_write_bytes,
                flusher,
            } => {
                f.write_str("waiting for data writeback")?;
                if !inodes.is_empty() {
                    let list: Vec<String> = inodes.iter().map(u64::to_string).collect();
                    write!(f, " of inode {}", list.join(", "))?;
                }
                let wrote =
                    (*device_write_bytes > 0).then(|| format!("the device wrote {}", human_size(*device_write_bytes)));
                let flushing =
                    (!flusher.is_empty()).then(|| format!("the flusher's {} writeback", flusher.join(" and ")));
                match (wrote, flushing) {
                    (Some(w), Some(fl)) => write!(f, " ({w} meanwhile; {fl} ran)"),
                    (Some(w), None) => write!(f, " ({w} meanwhile)"),
                    (None, Some(fl)) => write!(f, " ({fl} ran meanwhile)"),
                    (None, None) => Ok(()),
                }
            }
            Cause::JournalCommit { journal, commits } => {
                let what = match journal.as_str() {
                    "xfs log" => "an xfs log force",
                    "btrfs" => "a btrfs commit",
                    _ => "a journal commit",
                };
                write!(f, "waiting for {what}")?;
                let named: Vec<String> = commits.iter().map(Commit::describe).collect();
                if !named.is_empty() {
                    write!(f, ": {}", named.join("; "))?;
                }
                Ok(())
            }
            Cause::DeviceFlush { flushes } => write!(f, "device cache flush ({flushes} completed)"),
            Cause::DeviceRead { reads } => write!(f, "waiting for reads from the disk ({reads} completed)"),
            Cause::DirtyThrottle {
                pauses,
                dirty_pages,
                limit_pages,
                ..
            } => {
                write!(f, "dirty throttling ({pauses} pauses in balance_dirty_pages")?;
                if let (Some(d), Some(l)) = (dirty_pages, limit_pages) {
                    write!(f, "; {} dirty, limit {}", human_size(d * 4096), human_size(l * 4096))?;
                }
                f.write_str(")")
            }
            Cause::WaitedForThread { thread, call: None } => {
                write!(f, "waiting for thread {thread}, which woke it (a lock or condition)")
            }
            Cause::WaitedForThread { thread, call: Some(c) } => {
                write!(
                    f,
                    "waiting for thread {thread}'s {} at {:.3}s ({}",
                    c.op,
                    c.start_ns as f64 / 1e9,
                    format_latency_ns(c.latency_ns)
                )?;
                let parts: Vec<String> = c
                    .parts
                    .iter()
                    .take(2)
                    .map(|p| format!("{} {}", format_latency_ns(p.ns), p.what))
                    .collect();
                if !parts.is_empty() {
                    write!(f, ": {}", parts.join("; "))?;
                }
                f.write_str(")")
            }
            Cause::OtherWait { stack } => match stack.first().map(String::as_str) {
                // Blocked submitting I/O: the device's queue is full of others' writes.
                Some("rq_qos_wait") => write!(
                    f,
                    "waiting to submit I/O (block-layer throttling in {})",
                    stack.join(" < ")
                ),
                _ => write!(f, "other wait in {}", stack.join(" < ")),
            },
            Cause::Unattributed { reason } => write!(f, "unattributed ({reason})"),
        }
    }
}

impl Commit {
    /// Adds another wait on the same commit. A whole jbd2 commit (its duration known)
    /// describes itself the same way each time; a log force or btrfs commit seen through
    /// the wait describes only that wait, so those descriptions add up.
    pub(super) fn merge(&mut self, other: Commit) {
        self.overlap_ns += other.overlap_ns;
        if self.duration_ns.is_some() {
            return;
        }
        self.flushes += other.flushes;
        self.device_write_bytes += other.device_write_bytes;
        for share in other.waited_for {
            match self.waited_for.iter_mut().find(|w| w.what == share.what) {
                Some(w) => w.ns += share.ns,
                None => self.waited_for.push(share),
            }
        }
        self.waited_for.sort_by_key(|w| std::cmp::Reverse(w.ns));
    }

    /// `jbd2 transaction 42 (commit 1.234s: 1.100s ordered data writeback, 60.000ms cache flushes)`.
    pub(crate) fn describe(&self) -> String {
        let mut s = self.name.clone();
        let shares: Vec<String> = self
            .waited_for
            .iter()
            .filter(|w| w.ns > 0)
            .take(3)
            .map(|w| format!("{} {}", format_latency_ns(w.ns), w.what))
            .collect();
        let mut inside = Vec::new();
        if let Some(d) = self.duration_ns {
            inside.push(format!("commit {}", format_latency_ns(d)));
        }
        let mut what = shares.join(", ");
        if self.device_write_bytes > 0 {
            if !what.is_empty() {
                what += "; ";
            }
            what += &format!("the device wrote {} meanwhile", human_size(self.device_write_bytes));
        }
        match (inside.pop(), what.is_empty()) {
            (Some(d), false) => s += &format!(" ({d}: {what})"),
            (Some(d), true) => s += &format!(" ({d})"),
            (None, false) => s += &format!(" ({what})"),
            (None, true) => {}
        }
        s
    }
}
