//! The tracer in the kernel behind a run's `--explain --tracer bpf`: the BPF program of
//! `fsynclab watch` pointed at fsynclab's own process, whose slow sync calls become the
//! run's explanation, read with the same classifier as the tracefs tracer's.
//!
//! Which calls a run explains is decided after it (the slowest 1% of each kind and thread,
//! and every call over `--explain-over`, at most [`Threshold::MAX_PER_GROUP`] of each), so
//! the program cannot be told a fixed threshold. It starts sending every sync call and every
//! write of the measuring threads; a thread of ours reads them ([`RunTracer`]), keeps the
//! [`KEPT`] slowest of each thread and kind (twice what a run explains of one), and raises
//! that thread's threshold for that kind in the kernel to the [`KEPT`]th slowest. After a
//! few hundred calls of a kind, only one that would enter its slowest [`KEPT`] crosses to
//! user space; a thread that starts late, or a kind a thread has not made yet, starts with
//! every call sent. The sync calls a run makes before its first measured call (files
//! prepared and synced) are forgotten once that call is recorded
//! ([`crate::measure::samples::first_measured_ns`]), and the thresholds they raised lowered:
//! they would otherwise take the measured calls' places.
//!
//! [`super::tie::explain`] then ties each chosen call of the run to the kernel's record of it (the same
//! thread and kind, inside the time user space measured it) and splits it: the kernel's
//! parts, plus the time outside the system call (user space on either side and the entry and
//! exit), so that the parts add up to the latency the run measured. What the kernel kept
//! no record of, and the calls that are no sync call (writes), are said in a note.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, Context as _, Result};

use super::latency_record::CallLatency;
use super::record::{SlowCall, SyncKind};
use super::symbols::KernelSymbols;
use super::{BpfTracer, Detail, Filter, Lost, RunTime, Settings, Writes};
use crate::explain::attribution::Threshold;
use crate::role::pool::worker_thread_name;

/// The slowest calls kept of each thread and kind: twice as many as a run ever explains of
/// one, because the run ranks its calls by the latency user space measured and the kernel by
/// its own, which leaves out the time on either side of the system call: two calls close in
/// one may swap places in the other.
pub(crate) const KEPT: usize = 2 * Threshold::MAX_PER_GROUP;

/// A sleep at least this long inside a traced call has its kernel stack taken (as `watch`'s
/// default): a stack costs microseconds to take, and rndwr's 16 threads sleep for a
/// fraction of a millisecond tens of thousands of times a second.
pub(crate) const STACK_OVER: Duration = Duration::from_millis(1);

/// How often the reader looks whether the run has ended while no call comes.
const TICK: Duration = Duration::from_millis(50);

/// A thread's threshold is raised only when the new one is this much above the old, so that
/// the map is written a few dozen times a thread in a run, not at every call.
const RAISE_BY: f64 = 1.05;

/// Whose sync calls a [`RunTracer`] follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Traced {
    /// fsynclab's own process: a scenario's run, whose calls it measures itself. Every
    /// write of thread `tid` (the one that starts the run) and of the run's worker threads
    /// is followed too: a run times its writes, and may choose one to explain.
    ThisProcess { tid: u32 },
    /// The processes thread `tid` starts from now on, and those they start: `exec`'s
    /// command, whose every call's latency the kernel sends as well, nothing else
    /// measuring them.
    StartedBy(u32),
}

/// What the tracer brought back when the run ended.
pub(crate) struct Followed {
    pub(crate) symbols: KernelSymbols,
    /// The slowest calls of each thread and kind, in no order.
    pub(crate) calls: Vec<SlowCall>,
    /// Every call's latency, in the order the kernel sent them ([`Traced::StartedBy`] only).
    pub(crate) every: Vec<CallLatency>,
    /// Records the kernel sent in all.
    pub(crate) sent: u64,
    pub(crate) lost: Lost,
    pub(crate) cost: RunTime,
    /// CPU time of the thread that read the records.
    pub(crate) reader_cpu_ns: u64,
    /// The kernel hooks the program was attached to.
    pub(crate) hooks: crate::explain::bpf::hooks::BpfHooks,
}

/// The program loaded and followed by a thread of its own while the run goes.
pub(crate) struct RunTracer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<Followed>>>,
}

impl RunTracer {
    /// Loads and attaches the program on the `traced` tasks; returns once it is attached (or
    /// why it could not be). `origin_ns` is the run clock's start (CLOCK_MONOTONIC).
    pub(crate) fn start(traced: Traced, origin_ns: u64) -> Result<RunTracer> {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready, attached) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("fsynclab-bpf".into())
            .spawn({
                let stop = Arc::clone(&stop);
                move || follow(traced, &stop, &ready, origin_ns)
            })
            .context("starting the BPF tracer's thread")?;
        let mut tracer = RunTracer {
            stop,
            thread: Some(thread),
        };
        match attached.recv() {
            Ok(Ok(())) => Ok(tracer),
            Ok(Err(e)) => Err(e),
            // The thread ended before saying: its result says why.
            Err(_) => match tracer.join() {
                Ok(_) => Err(anyhow!("the BPF tracer's thread ended before it attached")),
                Err(e) => Err(e),
            },
        }
    }

    /// Detaches the program and returns what it kept.
    pub(crate) fn stop(mut self) -> Result<Followed> {
        self.join()
    }

    fn join(&mut self) -> Result<Followed> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take() {
            Some(thread) => thread
                .join()
                .unwrap_or_else(|_| Err(anyhow!("the BPF tracer's thread panicked"))),
            None => Err(anyhow!("the BPF tracer was already stopped")),
        }
    }
}

impl Drop for RunTracer {
    /// A run that failed still detaches the program before it goes on.
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.join();
        }
    }
}

/// What the reader keeps, and the thresholds it gave the kernel.
#[derive(Default)]
struct Kept {
    slowest: Slowest,
    /// Each thread's threshold in the kernel per kind of call, ns.
    thresholds: HashMap<(u32, SyncKind), u64>,
    /// Calls that started before this (CLOCK_MONOTONIC) are the run's preparation: set once
    /// the first measured call is recorded.
    measuring_from: Option<u64>,
}

impl Kept {
    fn offer(&mut self, tracer: &BpfTracer, call: SlowCall) {
        if self.measuring_from.is_some_and(|from| call.start_ns < from) {
            return;
        }
        let (tid, kind) = (call.tid, call.kind);
        self.slowest.offer(call);
        let Some(kind) = kind else {
            return;
        };
        let floor = self.slowest.floor(tid, kind);
        let threshold = self.thresholds.entry((tid, kind)).or_default();
        // A threshold the map could not take (4096 entries) only sends more calls.
        if floor as f64 > *threshold as f64 * RAISE_BY
            && tracer
                .set_thread_threshold(tid, kind, Duration::from_nanos(floor))
                .is_ok()
        {
            *threshold = floor;
        }
    }

    /// Once the run has recorded its first measured call: forgets the calls made before it
    /// (preparing files makes sync calls as slow as any measured, which would take the
    /// measured ones' places) and lowers the thresholds they raised.
    fn begin_measuring(&mut self, tracer: &BpfTracer, origin_ns: u64) {
        if self.measuring_from.is_some() {
            return;
        }
        let Some(first) = crate::measure::samples::first_measured_ns() else {
            return;
        };
        let from = (origin_ns + first).saturating_sub(PREPARATION_SLACK_NS);
        self.measuring_from = Some(from);
        self.slowest.forget_before(from);
        for (&(tid, kind), threshold) in &mut self.thresholds {
            let floor = self.slowest.floor(tid, kind);
            if floor < *threshold
                && tracer
                    .set_thread_threshold(tid, kind, Duration::from_nanos(floor))
                    .is_ok()
            {
                *threshold = floor;
            }
        }
    }
}

/// Calls that started up to this long before the first measured one are kept (its
/// neighbours' start times are read after the fact).
const PREPARATION_SLACK_NS: u64 = 1_000_000;

/// The reader thread: attach, say so, keep the slowest calls until told to stop.
fn follow(traced: Traced, stop: &AtomicBool, ready: &mpsc::Sender<Result<()>>, origin_ns: u64) -> Result<Followed> {
    let (pids, follow_forks_of, writes) = match traced {
        Traced::ThisProcess { tid } => (
            vec![std::process::id()],
            None,
            Writes::All {
                tid,
                comm: worker_thread_name(),
            },
        ),
        Traced::StartedBy(tid) => (Vec::new(), Some(tid), Writes::Durable),
    };
    let settings = Settings {
        filter: Filter::Processes(pids),
        report_threshold: Duration::ZERO,
        stack_threshold: STACK_OVER,
        run_time_stats: false,
        follow_forks_of,
        every_call: follow_forks_of.is_some(),
        writes,
        detail: Detail::Disk,
    };
    let started = KernelSymbols::load().and_then(|symbols| Ok((BpfTracer::start(&settings, &symbols)?, symbols)));
    let (tracer, symbols) = match started {
        Ok(t) => {
            let _ = ready.send(Ok(()));
            t
        }
        Err(e) => {
            let _ = ready.send(Err(e));
            return Err(anyhow!("the BPF tracer did not start"));
        }
    };
    let cpu_before = crate::explain::tracefs::thread_cpu_ns();
    let kept = RefCell::new(Kept::default());
    let mut sent = 0u64;
    let mut every = Vec::new();
    tracer.follow_every(
        TICK,
        || {
            if matches!(traced, Traced::ThisProcess { .. }) {
                kept.borrow_mut().begin_measuring(&tracer, origin_ns);
            }
            !stop.load(Ordering::Relaxed)
        },
        |call| {
            sent += 1;
            kept.borrow_mut().offer(&tracer, call);
        },
        |latency| every.push(latency),
    )?;
    let slowest = kept.into_inner().slowest;
    let lost = tracer.lost()?;
    let cost = tracer.run_time();
    let hooks = tracer.hooks().clone();
    drop(tracer);
    Ok(Followed {
        symbols,
        calls: slowest.into_calls(),
        every,
        sent,
        lost,
        cost,
        reader_cpu_ns: crate::explain::tracefs::thread_cpu_ns().saturating_sub(cpu_before),
        hooks,
    })
}

/// A call ordered by its latency alone.
struct ByLatency(SlowCall);

impl PartialEq for ByLatency {
    fn eq(&self, other: &ByLatency) -> bool {
        self.0.latency_ns == other.0.latency_ns
    }
}
impl Eq for ByLatency {}
impl PartialOrd for ByLatency {
    fn partial_cmp(&self, other: &ByLatency) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for ByLatency {
    fn cmp(&self, other: &ByLatency) -> std::cmp::Ordering {
        self.0.latency_ns.cmp(&other.0.latency_ns)
    }
}

/// The [`KEPT`] slowest calls of each thread and kind.
#[derive(Default)]
struct Slowest {
    groups: HashMap<(u32, Option<SyncKind>), BinaryHeap<Reverse<ByLatency>>>,
}

impl Slowest {
    fn offer(&mut self, call: SlowCall) {
        let heap = self.groups.entry((call.tid, call.kind)).or_default();
        if heap.len() < KEPT {
            heap.push(Reverse(ByLatency(call)));
        } else if heap
            .peek()
            .is_some_and(|Reverse(least)| least.0.latency_ns < call.latency_ns)
        {
            heap.pop();
            heap.push(Reverse(ByLatency(call)));
        }
    }

    /// The least latency a call of `kind` of thread `tid` may have and still enter the
    /// slowest of them: 0 while they are fewer than [`KEPT`].
    fn floor(&self, tid: u32, kind: SyncKind) -> u64 {
        match self
            .groups
            .get(&(tid, Some(kind)))
            .and_then(|heap| Some((heap.len(), heap.peek()?)))
        {
            Some((len, Reverse(least))) if len >= KEPT => least.0.latency_ns,
            _ => 0,
        }
    }

    /// Drops the calls that started before `from` (CLOCK_MONOTONIC).
    fn forget_before(&mut self, from: u64) {
        for heap in self.groups.values_mut() {
            let kept: Vec<Reverse<ByLatency>> = std::mem::take(heap)
                .into_iter()
                .filter(|Reverse(c)| c.0.start_ns >= from)
                .collect();
            *heap = kept.into();
        }
        self.groups.retain(|_, heap| !heap.is_empty());
    }

    fn into_calls(self) -> Vec<SlowCall> {
        self.groups
            .into_values()
            .flat_map(|heap| heap.into_iter().map(|Reverse(ByLatency(call))| call))
            .collect()
    }
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
