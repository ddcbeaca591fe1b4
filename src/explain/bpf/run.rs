//! The tracer in the kernel behind a run's `--explain --tracer bpf`: the BPF program of
//! `fsynclab watch` pointed at fsynclab's own process, whose slow sync calls become the
//! run's explanation, read with the same classifier as the tracefs tracer's.
//!
//! Which calls a run explains is decided after it (the slowest 1% of each kind and thread,
//! and every call over `--explain-over`, at most [`Threshold::MAX_PER_GROUP`] of each), so
//! the program cannot be told a fixed threshold. It starts sending every sync call; a thread
//! of ours reads them ([`RunTracer`]), keeps the [`KEPT`] slowest of each thread and kind
//! (twice what a run explains of one), and raises each thread's threshold in the kernel to
//! the slowest call of it that it could still need (the least, over the thread's kinds of
//! call, of the [`KEPT`]th slowest). After a few hundred calls of a thread, only one that
//! would enter its slowest [`KEPT`] crosses to user space; a thread that starts late starts
//! with every call sent. The sync calls a run makes before its first measured call (files
//! prepared and synced) are forgotten once that call is recorded
//! ([`crate::measure::samples::first_measured_ns`]), and the thresholds they raised lowered:
//! they would otherwise take the measured calls' places.
//!
//! [`explain`] then ties each chosen call of the run to the kernel's record of it (the same
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

use super::attribute::attribution;
use super::record::{CallLatency, SlowCall, SyncKind};
use super::symbols::KernelSymbols;
use super::{BpfTracer, Filter, Lost, RunTime, Settings};
use crate::explain::attribution::{Attribution, Call, Cause, Part, Share, Span, ThreadCall, Threshold};

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
    /// fsynclab's own process: a scenario's run, whose calls it measures itself.
    ThisProcess,
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
    /// Each thread's threshold in the kernel, ns.
    thresholds: HashMap<u32, u64>,
    /// Calls that started before this (CLOCK_MONOTONIC) are the run's preparation: set once
    /// the first measured call is recorded.
    measuring_from: Option<u64>,
}

impl Kept {
    fn offer(&mut self, tracer: &BpfTracer, call: SlowCall) {
        if self.measuring_from.is_some_and(|from| call.start_ns < from) {
            return;
        }
        let tid = call.tid;
        self.slowest.offer(call);
        let floor = self.slowest.floor(tid);
        let threshold = self.thresholds.entry(tid).or_default();
        // A threshold the map could not take (4096 threads) only sends more calls.
        if floor as f64 > *threshold as f64 * RAISE_BY
            && tracer.set_thread_threshold(tid, Duration::from_nanos(floor)).is_ok()
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
        for (tid, threshold) in &mut self.thresholds {
            let floor = self.slowest.floor(*tid);
            if floor < *threshold && tracer.set_thread_threshold(*tid, Duration::from_nanos(floor)).is_ok() {
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
    let (pids, follow_forks_of) = match traced {
        Traced::ThisProcess => (vec![std::process::id()], None),
        Traced::StartedBy(tid) => (Vec::new(), Some(tid)),
    };
    let settings = Settings {
        filter: Filter::Processes(pids),
        report_threshold: Duration::ZERO,
        stack_threshold: STACK_OVER,
        run_time_stats: false,
        follow_forks_of,
        every_call: follow_forks_of.is_some(),
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
    let cpu_before = crate::explain::tracer::thread_cpu_ns();
    let kept = RefCell::new(Kept::default());
    let mut sent = 0u64;
    let mut every = Vec::new();
    tracer.follow_every(
        TICK,
        || {
            if traced == Traced::ThisProcess {
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
    drop(tracer);
    Ok(Followed {
        symbols,
        calls: slowest.into_calls(),
        every,
        sent,
        lost,
        cost,
        reader_cpu_ns: crate::explain::tracer::thread_cpu_ns().saturating_sub(cpu_before),
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

    /// The least latency a call of thread `tid` may have and still enter the slowest of its
    /// kind: 0 while one of its kinds holds fewer than [`KEPT`] (a kind the thread has not
    /// made yet counts from its first call, which a threshold above 0 could hide: see
    /// [`explain`]'s note).
    fn floor(&self, tid: u32) -> u64 {
        self.groups
            .iter()
            .filter(|((t, _), _)| *t == tid)
            .map(|(_, heap)| match heap.peek() {
                Some(Reverse(least)) if heap.len() >= KEPT => least.0.latency_ns,
                _ => 0,
            })
            .min()
            .unwrap_or(0)
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

/// Slack for the kernel's record to sit inside the time user space measured (both read
/// CLOCK_MONOTONIC; this covers their rounding).
const SLACK_NS: u64 = 2_000;

/// The chosen `calls` of the run (start on the run clock, which began at `origin_ns`)
/// explained from the kernel's records, and the notes on those that could not be. A sync
/// call takes its own record; any other call (fsync-tps's commit, a write followed by its
/// sync) the records of the sync calls its thread made inside it.
pub(crate) fn explain(
    followed: &Followed,
    calls: &[Call],
    syncs: &[Span],
    origin_ns: u64,
) -> (Vec<Attribution>, Vec<String>) {
    let mut explained = Vec::new();
    let (mut no_sync_inside, mut not_recorded, mut by_time) = (0usize, 0usize, 0usize);
    for call in calls {
        let kind = SyncKind::ALL.into_iter().find(|k| k.name() == call.op);
        let begin = origin_ns + call.start_ns;
        let end = begin + call.latency_ns;
        let mut inside: Vec<&SlowCall> = followed
            .calls
            .iter()
            .filter(|k| k.tid == call.tid && (kind.is_none() || k.kind == kind))
            .filter(|k| k.start_ns + SLACK_NS >= begin && k.start_ns + k.latency_ns <= end + SLACK_NS)
            .collect();
        if kind.is_some() {
            // The call itself: the longest record inside it (there is one).
            inside.sort_by_key(|k| Reverse(k.latency_ns));
            inside.truncate(1);
        }
        match (inside.is_empty(), kind) {
            (false, _) => explained.push(as_measured(&inside, call, &followed.symbols, origin_ns)),
            (true, Some(_)) => not_recorded += 1,
            (true, None) => match leaders_calls(call, syncs).as_slice() {
                [] => no_sync_inside += 1,
                leaders => {
                    by_time += 1;
                    explained.push(as_follower(call, leaders, followed, origin_ns));
                }
            },
        }
    }
    let mut notes = Vec::new();
    if by_time > 0 {
        notes.push(format!(
            "commits tied to another thread's sync call by time alone (it ended inside them; the BPF tracer does not follow a wait in user space, --tracer tracefs ties it by the wakeup): {by_time}"
        ));
    }
    if no_sync_inside > 0 {
        notes.push(format!(
            "calls chosen but not explained, having no sync call of their own inside (the BPF tracer follows only those; --tracer tracefs explains every kind): {no_sync_inside}"
        ));
    }
    if not_recorded > 0 {
        notes.push(format!(
            "sync calls chosen but not explained, the kernel having sent no record of them (their time inside the system call was under the threshold it held then; the run ranks calls by all of their latency): {not_recorded}"
        ));
    }
    (explained, notes)
}

/// The sync calls of other threads that a group commit with no sync call of its own waited
/// for, latest first: the last to end inside it (the leader's, whose end releases the
/// followers), then the one that ended inside it before that one began (an earlier group's
/// leader, which the commit came too late to join), and so on. Only a commit (fsync-tps's)
/// waits for another's sync call; a write does not.
fn leaders_calls<'a>(call: &Call, syncs: &'a [Span]) -> Vec<&'a Span> {
    if call.op != crate::measure::OpKind::Commit.name() {
        return Vec::new();
    }
    let end = call.start_ns + call.latency_ns;
    let mut ended: Vec<&Span> = syncs
        .iter()
        .filter(|s| s.tid != call.tid)
        .filter(|s| {
            let s_end = s.start_ns + s.latency_ns;
            s_end > call.start_ns && s_end <= end
        })
        .collect();
    ended.sort_by_key(|s| Reverse(s.start_ns + s.latency_ns));
    let mut chain: Vec<&Span> = Vec::new();
    for s in ended {
        if chain
            .last()
            .is_none_or(|later| s.start_ns + s.latency_ns <= later.start_ns)
        {
            chain.push(s);
        }
    }
    chain
}

/// A follower's commit: the parts of it the leaders' sync calls covered, each with that
/// call's own parts where the kernel kept its record, and the rest.
fn as_follower(call: &Call, leaders: &[&Span], followed: &Followed, origin_ns: u64) -> Attribution {
    let call_end = call.start_ns + call.latency_ns;
    let mut a = Attribution {
        tid: call.tid,
        process: None,
        op: call.op.clone(),
        start_ns: call.start_ns,
        latency_ns: call.latency_ns,
        parts: Vec::new(),
        notes: vec!["tied to the leaders' calls by time: each ended inside this commit".into()],
    };
    for leader in leaders {
        let (l_start, l_end) = (leader.start_ns, leader.start_ns + leader.latency_ns);
        let record = followed.calls.iter().find(|k| {
            k.tid == leader.tid
                && k.kind.is_some_and(|kind| kind.name() == leader.op)
                && k.start_ns + SLACK_NS >= origin_ns + l_start
                && k.start_ns + k.latency_ns <= origin_ns + l_end + SLACK_NS
        });
        let parts = record
            .map(|r| {
                attribution(r, &followed.symbols, origin_ns, STACK_OVER)
                    .parts
                    .into_iter()
                    .map(|p| Share {
                        what: p.cause.to_string(),
                        ns: p.ns,
                    })
                    .collect()
            })
            .unwrap_or_default();
        a.parts.push(Part {
            cause: Cause::WaitedForThread {
                thread: leader.tid,
                call: Some(ThreadCall {
                    op: leader.op.to_string(),
                    start_ns: l_start,
                    latency_ns: leader.latency_ns,
                    parts,
                }),
            },
            ns: l_end.min(call_end) - l_start.max(call.start_ns),
            waits: 1,
        });
    }
    let rest = call.latency_ns.saturating_sub(a.parts.iter().map(|p| p.ns).sum());
    if rest > 0 {
        a.parts.push(Part {
            cause: Cause::Unattributed {
                reason: "the rest of the commit: its own write, and the waits between the leaders' calls".into(),
            },
            ns: rest,
            waits: 0,
        });
    }
    a.parts.sort_by_key(|p| Reverse(p.ns));
    a
}

/// `call` as the run measured it, from the kernel's records of the sync calls inside it
/// (the call itself, when it is one): their parts, and the time outside them, which make up
/// the latency user space measured.
fn as_measured(records: &[&SlowCall], call: &Call, symbols: &KernelSymbols, origin_ns: u64) -> Attribution {
    let mut a = Attribution {
        tid: call.tid,
        process: None,
        op: call.op.clone(),
        start_ns: call.start_ns,
        latency_ns: 0,
        parts: Vec::new(),
        notes: Vec::new(),
    };
    for record in records {
        let one = attribution(record, symbols, origin_ns, STACK_OVER);
        a.latency_ns += one.latency_ns;
        for part in one.parts {
            match a.parts.iter_mut().find(|p| p.cause.key() == part.cause.key()) {
                Some(p) => {
                    p.ns += part.ns;
                    p.waits += part.waits;
                }
                None => a.parts.push(part),
            }
        }
        a.notes.extend(one.notes);
    }
    let outside = call.latency_ns.saturating_sub(a.latency_ns);
    if outside > 0 {
        let reason = if records.len() == 1 && records[0].kind.is_some_and(|k| k.name() == call.op) {
            "outside the system call: user space on either side of it, entering and leaving the kernel".to_string()
        } else {
            let names: Vec<&str> = records.iter().filter_map(|r| r.kind.map(SyncKind::name)).collect();
            format!("outside its {}: the rest of the {}", names.join(" and "), call.op)
        };
        a.parts.push(Part {
            cause: Cause::Unattributed { reason },
            ns: outside,
            waits: 0,
        });
        a.latency_ns = call.latency_ns;
    }
    a.parts.sort_by_key(|p| Reverse(p.ns));
    a
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
