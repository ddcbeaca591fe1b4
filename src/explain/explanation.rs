//! The explanation a result carries: the slow calls split into causes, with what the tracer
//! that made it read, lost and cost; and the calls a run's samples give it to explain.

use serde::{Deserialize, Serialize};

use super::attribution::{select_in_groups, Attribution, Call, Span, Threshold};
use super::bpf::hooks::BpfHooks;
use super::bpf::run::Followed;
use super::tracefs::Task;
use crate::measure::Sample;

/// The explanation a result carries: the slow calls split into causes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Explanation {
    /// Which calls were explained.
    pub(crate) threshold: Threshold,
    /// The thread whose calls were traced, and the filesystem's journal threads followed.
    pub(crate) traced_tid: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) journal_threads: Vec<Task>,
    /// Events read, events the kernel dropped, events this kernel does not offer.
    pub(crate) events: u64,
    pub(crate) lost_events: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) missing_events: Vec<String>,
    /// CPU time of the thread that read the trace, ns.
    pub(crate) reader_cpu_ns: u64,
    /// Bytes of trace text read, and when (on the run clock) tracing stopped because the
    /// trace's events reached their budget of memory: calls after that are not explained.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) trace_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) trace_cut_at_ns: Option<u64>,
    /// The calls explained, slowest first.
    pub(crate) calls: Vec<Attribution>,
    /// Why some or all calls could not be explained.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) notes: Vec<String>,
    /// Present when the tracer in the kernel (BPF, `fsynclab watch`) ran rather than the
    /// tracefs one: what it kept and what it cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) bpf: Option<BpfTracing>,
}

/// What the BPF tracer kept and cost. `events` of the explanation are then the slow calls
/// the kernel sent, `lost_events` what it could not keep (the three counts below summed),
/// `reader_cpu_ns` the CPU time of the process that read them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct BpfTracing {
    /// Only this many of the slowest calls over the threshold are kept with their parts.
    pub(crate) slowest_kept: u32,
    /// The kernel's run-time statistics were asked for (`watch --bpf-stats`; before they
    /// were optional, always: a run stored then has no such field and figures above 0).
    #[serde(default)]
    pub(crate) program_stats: bool,
    /// The BPF programs' runs and run time in all (`bpf_prog_info` with the kernel's
    /// run-time statistics on; 0 where they were not asked for or could not be counted).
    pub(crate) program_runs: u64,
    pub(crate) program_run_ns: u64,
    /// Calls not followed (no task-local storage could be made for the task), slow calls not
    /// sent (the ring buffer full), histogram entries not made (the histogram map full).
    pub(crate) calls_not_followed: u64,
    pub(crate) records_not_sent: u64,
    pub(crate) histogram_entries_lost: u64,
    /// Wakeups made in an interrupt were named so (`an interrupt`), not by the task they
    /// interrupted. Before 28 Nov 2026 never; until 677471a only where the kernel let the
    /// program read the preemption count (it lists it in /proc/kallsyms:
    /// CONFIG_KALLSYMS_ALL); since, always.
    #[serde(default)]
    pub(crate) interrupt_wakers: bool,
    /// How they were told: `preemption count`, or `interrupt tracepoints` (interrupts
    /// counted in and out) where the kernel does not let the program read the count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) interrupt_wakers_by: Option<InterruptWakersBy>,
    /// The kernel hooks the programs were attached to (a result stored before issue 61 has
    /// none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) hooks: Option<BpfHooks>,
}

impl InterruptWakersBy {
    /// How the programs tell a wakeup made in an interrupt on the kernel of `symbols`: by
    /// the CPU's preemption count where the kernel lets them read it (it lists the per-CPU
    /// variable in /proc/kallsyms), else by counting the interrupts' entries and exits at
    /// their tracepoints (watch.bpf.c: irq_depth).
    pub(crate) fn of(symbols: &super::bpf::symbols::KernelSymbols) -> InterruptWakersBy {
        match symbols.has_preempt_count() {
            true => InterruptWakersBy::PreemptionCount,
            false => InterruptWakersBy::InterruptTracepoints,
        }
    }
}

/// How the BPF programs told a wakeup made in an interrupt ([`BpfTracing::interrupt_wakers_by`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum InterruptWakersBy {
    /// The CPU's preemption count, where the kernel lets the program read it.
    #[serde(rename = "preemption count")]
    PreemptionCount,
    /// Interrupts counted in and out at their tracepoints (a device's handler, softirqs,
    /// x86's IPIs, local timer and irq_work), where the count cannot be read.
    #[serde(rename = "interrupt tracepoints")]
    InterruptTracepoints,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Explanation {
    /// An explanation of `threshold`'s calls, before the trace is read.
    pub(crate) fn new(threshold: Threshold, traced_tid: u32) -> Explanation {
        Explanation {
            threshold,
            traced_tid,
            journal_threads: Vec::new(),
            events: 0,
            lost_events: 0,
            missing_events: Vec::new(),
            reader_cpu_ns: 0,
            trace_bytes: 0,
            trace_cut_at_ns: None,
            calls: Vec::new(),
            notes: Vec::new(),
            bpf: None,
        }
    }

    /// What the BPF tracer kept and cost, and the chosen `calls` it explains.
    pub(crate) fn take_bpf(&mut self, followed: &Followed, calls: &[Call], syncs: &[Span], origin_ns: u64) {
        let (mut explained, notes) = super::bpf::tie::explain(followed, calls, syncs, origin_ns);
        explained.sort_by_key(|a| std::cmp::Reverse(a.latency_ns));
        let lost = followed.lost;
        if lost.total() > 0 {
            self.notes.push(format!(
                "lost in the kernel: {} calls not followed, {} slow calls not sent, {} histogram entries, {} latencies not sent, {} processes not followed",
                lost.calls, lost.records, lost.histogram, lost.latencies, lost.processes
            ));
        }
        self.notes.extend(notes);
        self.events = followed.sent;
        self.lost_events = lost.total();
        self.reader_cpu_ns = followed.reader_cpu_ns;
        self.calls = explained;
        self.bpf = Some(BpfTracing {
            slowest_kept: super::bpf::run::KEPT as u32,
            program_stats: followed.cost.asked,
            program_runs: followed.cost.runs,
            program_run_ns: followed.cost.ns,
            calls_not_followed: lost.calls,
            records_not_sent: lost.records,
            histogram_entries_lost: lost.histogram,
            interrupt_wakers: true,
            interrupt_wakers_by: Some(InterruptWakersBy::of(&followed.symbols)),
            hooks: Some(followed.hooks.clone()),
        });
    }

    /// What the trace cost and held, and the calls it explained; the notes say what was
    /// lost (dropped events, a trace cut at its budget).
    pub(crate) fn take_trace(&mut self, trace: super::tracefs::Trace, calls: Vec<Attribution>) {
        if trace.lost_events > 0 {
            self.notes.push(format!(
                "the kernel dropped {} trace events: parts near them may be unattributed",
                trace.lost_events
            ));
        }
        if let Some(cut) = trace.cut_at_ns {
            self.notes.push(format!(
                "tracing stopped at {:.3}s, when the trace's events reached their budget of {} MiB: later calls are not explained",
                cut.saturating_sub(trace.origin_ns) as f64 / 1e9,
                super::tracefs::TRACE_BUDGET_BYTES >> 20
            ));
        }
        self.trace_cut_at_ns = trace.cut_at_ns.map(|c| c.saturating_sub(trace.origin_ns));
        self.trace_bytes = trace.text_bytes;
        self.journal_threads = trace.journal_threads;
        self.events = trace.events.len() as u64;
        self.lost_events = trace.lost_events;
        self.missing_events = trace.missing_events;
        self.reader_cpu_ns = trace.reader_cpu_ns;
        self.calls = calls;
    }
}

pub(crate) fn call_of(s: &Sample, tid: u32) -> Call {
    Call {
        tid,
        op: s.op.to_string(),
        start_ns: s.t_ns,
        latency_ns: s.latency_ns,
    }
}

/// The calls among `samples` that `threshold` selects (by kind and thread), and every sync
/// call, which other threads' waits may be tied to. Calls that failed are left out.
pub(crate) fn slow_calls(
    samples: &[Sample],
    threshold: &Threshold,
    tid_of: impl Fn(&Sample) -> u32,
) -> (Vec<Call>, Vec<Span>) {
    let ok: Vec<&Sample> = samples.iter().filter(|s| s.error.is_none()).collect();
    let groups: Vec<((crate::measure::OpKind, u32), u64)> =
        ok.iter().map(|s| ((s.op, tid_of(s)), s.latency_ns)).collect();
    let calls = select_in_groups(&groups, threshold)
        .into_iter()
        .map(|i| call_of(ok[i], tid_of(ok[i])))
        .collect();
    let syncs = ok
        .iter()
        .filter(|s| s.op.is_sync())
        .map(|s| Span {
            tid: tid_of(s),
            op: s.op.name(),
            start_ns: s.t_ns,
            latency_ns: s.latency_ns,
        })
        .collect();
    (calls, syncs)
}
