//! The explanation in words: the text report's short "slowest calls" section and one line
//! on the timeline, and the longer form `fsynclab explain RESULT` prints (every explained
//! call with all its parts, and the timeline's extremes).

use std::fmt::Write as _;
use std::time::Duration;

use super::attribution::{Attribution, Threshold};
use super::explanation::Explanation;
use super::timeline::{TimelinePoint, TimelineRecord};
use crate::units::{format_duration, format_latency_ns, human_size};

/// Calls the text report shows; `fsynclab explain` shows them all.
const REPORT_CALLS: usize = 5;
/// Causes per call in the text report.
const REPORT_CAUSES: usize = 3;
/// Threads the text report gives their own slowest call, when several made calls.
const REPORT_THREADS: usize = 16;

/// Which calls were explained, in words: `the slowest 1% of each kind and every call over
/// 100ms`.
fn selection(e: &Explanation) -> String {
    // A watch (no thread of a run traced) keeps the slowest calls over its threshold.
    if let (Some(b), 0) = (&e.bpf, e.traced_tid) {
        return format!(
            "the {} slowest calls over {} (a watch keeps at most {})",
            e.calls.len(),
            format_duration(Duration::from_nanos(e.threshold.over_ns)),
            b.slowest_kept
        );
    }
    format!(
        "the slowest {}% of each kind of call and every call over {}{} (at most {} of a kind per thread)",
        e.threshold.slowest_fraction * 100.0,
        format_duration(Duration::from_nanos(e.threshold.over_ns)),
        if threads(e).len() > 1 { ", per thread" } else { "" },
        Threshold::MAX_PER_GROUP
    )
}

/// The threads whose calls were explained, in order of first appearance.
fn threads(e: &Explanation) -> Vec<u32> {
    let mut seen = Vec::new();
    for a in &e.calls {
        if !seen.contains(&a.tid) {
            seen.push(a.tid);
        }
    }
    seen
}

/// Who made the call, when that is worth saying: `postgres 4242`, `thread 4242`.
fn who(a: &Attribution) -> String {
    match &a.process {
        Some(p) => format!("{p} {}", a.tid),
        None => format!("thread {}", a.tid),
    }
}

/// The call that best shows a thread's wait: its slowest explained commit (a whole
/// transaction, fsync-tps'), else its slowest sync call, else its slowest call.
fn thread_headline(e: &Explanation, tid: u32) -> Option<&Attribution> {
    let mine = || e.calls.iter().filter(move |a| a.tid == tid);
    let kind = |a: &&Attribution| crate::measure::OpKind::from_name(&a.op);
    mine()
        .filter(|a| a.op == crate::measure::OpKind::Commit.name())
        .max_by_key(|a| a.latency_ns)
        .or_else(|| {
            mine()
                .filter(|a| kind(a).is_some_and(|k| k.is_sync()))
                .max_by_key(|a| a.latency_ns)
        })
        .or_else(|| mine().max_by_key(|a| a.latency_ns))
}

/// `  12.301s  fsync  5.334s  4.902s waiting for a journal commit: ...; 310ms ...`, with
/// `causes` parts (all when None); with `who`, the thread or process after the latency.
fn call_line(a: &Attribution, causes: Option<usize>, show_who: bool) -> String {
    let parts: Vec<String> = a
        .parts
        .iter()
        .filter(|p| p.ns > 0)
        .take(causes.unwrap_or(usize::MAX))
        .map(|p| format!("{} {}", format_latency_ns(p.ns), p.cause))
        .collect();
    let rest = a.parts.iter().filter(|p| p.ns > 0).count().saturating_sub(parts.len());
    let more = if rest > 0 {
        format!("; {rest} smaller")
    } else {
        String::new()
    };
    let by = if show_who {
        format!("  [{}]", who(a))
    } else {
        String::new()
    };
    format!(
        "  {:>9.3}s  {:<9} {:>9}{by}  {}{more}",
        a.start_ns as f64 / 1e9,
        a.op,
        format_latency_ns(a.latency_ns),
        parts.join("; ")
    )
}

/// The text report's section: the few slowest calls, each with its largest causes.
pub(crate) fn slowest_calls(e: &Explanation) -> String {
    let mut out = String::new();
    if e.calls.is_empty() {
        let _ = writeln!(out, "slowest calls: none explained");
    } else {
        let _ = writeln!(
            out,
            "slowest calls (at, op, latency, where the time went; {} of {} explained, `fsynclab explain` shows all)",
            e.calls.len().min(REPORT_CALLS),
            e.calls.len()
        );
        let threads = threads(e);
        let several = threads.len() > 1 || e.calls.iter().any(|a| a.process.is_some());
        for a in e.calls.iter().take(REPORT_CALLS) {
            let _ = writeln!(out, "{}", call_line(a, Some(REPORT_CAUSES), several));
        }
        if threads.len() > 1 {
            let who = if e.calls.iter().any(|a| a.process.is_some()) {
                "process or thread"
            } else {
                "thread"
            };
            let _ = writeln!(out, "slowest call of each {who} ({} of them)", threads.len());
            for tid in threads.iter().take(REPORT_THREADS) {
                if let Some(a) = thread_headline(e, *tid) {
                    let _ = writeln!(out, "{}", call_line(a, Some(REPORT_CAUSES), true));
                }
            }
            if threads.len() > REPORT_THREADS {
                let _ = writeln!(out, "  and {} more threads", threads.len() - REPORT_THREADS);
            }
        }
    }
    for n in &e.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    out
}

/// The explanation in full: every call explained, every part.
pub(crate) fn full(e: &Explanation) -> String {
    let mut out = String::new();
    if let Some(b) = &e.bpf {
        let programs = if b.program_runs > 0 {
            format!(
                "its programs ran {} times for {}",
                b.program_runs,
                format_latency_ns(b.program_run_ns)
            )
        } else if b.program_stats {
            "its programs' run time could not be counted".to_string()
        } else {
            "its programs' run time not counted (watch --bpf-stats counts it)".to_string()
        };
        let _ = writeln!(
            out,
            "explained: {}; by the tracer in the kernel (BPF): {} slow calls sent, {} lost; {programs}, the reader's CPU {}",
            selection(e),
            e.events,
            e.lost_events,
            format_latency_ns(e.reader_cpu_ns)
        );
        if !b.interrupt_wakers {
            let _ = writeln!(
                out,
                "wakers: a wakeup made in an interrupt is named by the task it interrupted (the kernel lists no per-CPU data in /proc/kallsyms, CONFIG_KALLSYMS_ALL, so the program cannot tell; --tracer tracefs can)"
            );
        }
    } else {
        let _ = writeln!(
            out,
            "explained: {}; {} trace events ({} lost, {} of text), reader CPU {}",
            selection(e),
            e.events,
            e.lost_events,
            human_size(e.trace_bytes),
            format_latency_ns(e.reader_cpu_ns)
        );
    }
    if !e.journal_threads.is_empty() {
        let names: Vec<String> = e
            .journal_threads
            .iter()
            .map(|t| format!("{} ({})", t.comm, t.pid))
            .collect();
        let _ = writeln!(out, "journal threads followed: {}", names.join(", "));
    }
    if !e.missing_events.is_empty() {
        let _ = writeln!(
            out,
            "events this kernel does not offer: {}",
            e.missing_events.join(", ")
        );
    }
    for n in &e.notes {
        let _ = writeln!(out, "note: {n}");
    }
    let several = threads(e).len() > 1 || e.calls.iter().any(|a| a.process.is_some());
    for a in &e.calls {
        out.push('\n');
        let by = if several {
            format!(" ({})", who(a))
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{}{by} at {:.3}s took {}; parts add up to {}",
            a.op,
            a.start_ns as f64 / 1e9,
            format_latency_ns(a.latency_ns),
            format_latency_ns(a.total_ns())
        );
        for p in a.parts.iter().filter(|p| p.ns > 0) {
            let share = 100.0 * p.ns as f64 / a.latency_ns.max(1) as f64;
            let _ = writeln!(out, "  {:>9} {share:>5.1}%  {}", format_latency_ns(p.ns), p.cause);
        }
        for n in &a.notes {
            let _ = writeln!(out, "  note: {n}");
        }
    }
    out
}

fn peak(points: &[TimelinePoint], f: impl Fn(&TimelinePoint) -> Option<u64>) -> Option<(u64, u64)> {
    points
        .iter()
        .filter_map(|p| Some((f(p)?, p.t_ns)))
        .max_by_key(|(v, _)| *v)
}

/// One line: `timeline: 231 samples every 100ms; dirty peaked at 1.2 GiB at 8.1s (limit
/// 4.7 GiB), writeback at ...; I/O stall (PSI some) 61% of the run; sampler CPU 0.3ms/s`.
pub(crate) fn timeline_line(t: &TimelineRecord) -> String {
    let mut parts = vec![format!(
        "{} samples every {}",
        t.points.len(),
        format_duration(Duration::from_nanos(t.interval_ns))
    )];
    if let Some((bytes, at)) = peak(&t.points, |p| p.dirty_bytes) {
        let limit = t
            .points
            .iter()
            .find(|p| p.t_ns == at)
            .and_then(|p| p.dirty_threshold_bytes)
            .map(|l| format!(" (dirty limit {})", human_size(l)))
            .unwrap_or_default();
        parts.push(format!(
            "dirty peaked at {} at {:.1}s{limit}",
            human_size(bytes),
            at as f64 / 1e9
        ));
    }
    if let Some((bytes, at)) = peak(&t.points, |p| p.writeback_bytes) {
        parts.push(format!("writeback at {} at {:.1}s", human_size(bytes), at as f64 / 1e9));
    }
    if let Some(share) = stall_share(&t.points, |p| p.io_some_total_us) {
        parts.push(format!("some task stalled on I/O {share:.0}% of the time (PSI)"));
    }
    if let Some((n, _)) = peak(&t.points, |p| p.device_in_flight) {
        let dev = t.device.as_deref().unwrap_or("the device");
        parts.push(format!("up to {n} requests in flight on {dev}"));
    }
    parts.push(format!("sampler CPU {}/s", format_latency_ns(t.sampler_cpu_ns_per_s)));
    format!("timeline: {}\n", parts.join("; "))
}

/// The share of the timeline's span during which a PSI counter (µs) grew, in percent.
fn stall_share(points: &[TimelinePoint], f: impl Fn(&TimelinePoint) -> Option<u64>) -> Option<f64> {
    let first = points.iter().find_map(|p| Some((f(p)?, p.t_ns)))?;
    let last = points.iter().rev().find_map(|p| Some((f(p)?, p.t_ns)))?;
    let span_us = last.1.saturating_sub(first.1) / 1_000;
    (span_us > 0).then(|| 100.0 * last.0.saturating_sub(first.0) as f64 / span_us as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::attribution::{Cause, Part};

    fn explanation() -> Explanation {
        Explanation {
            threshold: Threshold::default(),
            traced_tid: 1,
            journal_threads: Vec::new(),
            events: 10,
            lost_events: 0,
            missing_events: Vec::new(),
            reader_cpu_ns: 0,
            trace_bytes: 0,
            trace_cut_at_ns: None,
            calls: vec![Attribution {
                tid: 1,
                process: None,
                op: "fsync".into(),
                start_ns: 2_500_000_000,
                latency_ns: 1_000_000_000,
                parts: vec![
                    Part {
                        cause: Cause::JournalCommit {
                            journal: "jbd2".into(),
                            commits: Vec::new(),
                        },
                        ns: 700_000_000,
                        waits: 1,
                    },
                    Part {
                        cause: Cause::DataWriteback {
                            inodes: vec![12],
                            device_write_bytes: 0,
                            flusher: Vec::new(),
                        },
                        ns: 250_000_000,
                        waits: 1,
                    },
                    Part {
                        cause: Cause::OnCpu,
                        ns: 40_000_000,
                        waits: 0,
                    },
                    Part {
                        cause: Cause::Runnable,
                        ns: 10_000_000,
                        waits: 1,
                    },
                ],
                notes: Vec::new(),
            }],
            notes: Vec::new(),
            bpf: None,
        }
    }

    #[test]
    /// Issue 10.
    fn the_report_names_the_largest_causes_of_each_slow_call() {
        let text = slowest_calls(&explanation());
        let line = text.lines().nth(1).unwrap();
        assert!(line.contains("2.500s") && line.contains("fsync"), "{line}");
        assert!(line.contains("waiting for a journal commit"), "{line}");
        assert!(line.contains("waiting for data writeback of inode 12"), "{line}");
        assert!(line.contains("on CPU") && line.ends_with("1 smaller"), "{line}");
        assert!(!line.contains("preempted"), "{line}");
    }

    #[test]
    /// Issue 10.
    fn explain_prints_every_part_with_its_share() {
        let text = full(&explanation());
        assert!(
            text.contains("the slowest 1% of each kind of call and every call over 100"),
            "{text}"
        );
        assert!(text.contains("70.0%") && text.contains("preempted"), "{text}");
    }

    /// Issue 25: a BPF explanation whose program could not tell interrupts' wakeups says
    /// that the wakers it names may be interrupted tasks; one that could says nothing.
    #[test]
    fn a_bpf_explanation_says_when_its_wakers_may_be_interrupted_tasks() {
        let with = |told: bool| {
            let mut e = explanation();
            e.bpf = Some(crate::explain::explanation::BpfTracing {
                slowest_kept: 100,
                program_stats: false,
                program_runs: 0,
                program_run_ns: 0,
                calls_not_followed: 0,
                records_not_sent: 0,
                histogram_entries_lost: 0,
                interrupt_wakers: told,
                interrupt_wakers_by: None,
                hooks: None,
            });
            full(&e)
        };
        let untold = with(false);
        assert!(
            untold.contains("wakers: a wakeup made in an interrupt is named by the task it interrupted"),
            "{untold}"
        );
        assert!(!with(true).contains("wakers:"));
    }

    #[test]
    fn timeline_line_gives_the_peaks_and_the_stall_share() {
        let p = |t_s: u64, dirty_mib: u64, psi_us: u64| TimelinePoint {
            t_ns: t_s * 1_000_000_000,
            dirty_bytes: Some(dirty_mib << 20),
            writeback_bytes: Some(0),
            io_some_total_us: Some(psi_us),
            ..Default::default()
        };
        let t = TimelineRecord {
            interval_ns: 100_000_000,
            device: None,
            points: vec![p(0, 1, 0), p(1, 300, 500_000), p(2, 2, 1_000_000)],
            sampler_cpu_ns: 0,
            sampler_cpu_ns_per_s: 120_000,
        };
        let line = timeline_line(&t);
        assert!(line.contains("dirty peaked at 300.0 MiB at 1.0s"), "{line}");
        assert!(line.contains("stalled on I/O 50%"), "{line}");
    }
}
