//! A watch as a run of the results store: scenario `watch`, its percentiles per process and
//! kind from the kernel's histograms (details and ops, no per-call sample), the slowest calls
//! with their parts as its explanation, and what the tracer cost; so that `runs`, `show`,
//! `explain` and `report` read it as any run.
//!
//! Memory stays bounded however long it watches: the histograms live in the kernel, and
//! only the [`SLOWEST_KEPT`] slowest calls over the threshold are kept with their parts
//! ([`Slowest`]); the others are printed and forgotten.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use crate::environment::Fingerprint;
use crate::explain::attribution::{Attribution, Threshold};
use crate::explain::bpf::histogram::Buckets;
use crate::explain::bpf::record::SyncKind;
use crate::explain::bpf::{Lost, RunTime};
use crate::explain::explanation::{BpfTracing, Explanation};
use crate::measure::{OpKind, OpStats};
use crate::result::{RunResult, SCHEMA_VERSION};
use crate::scenario::process_calls::ProcessCalls;
use crate::scenario::watched::{Details, SCENARIO};

use crate::explain::bpf::ended::Ended;

/// The slow calls kept with their parts: the slowest this many.
pub(crate) const SLOWEST_KEPT: usize = 100;

/// The slowest calls seen so far, at most [`SLOWEST_KEPT`].
#[derive(Default)]
pub(super) struct Slowest {
    calls: Vec<Attribution>,
}

impl Slowest {
    /// Keeps `call` if it is among the slowest; the fastest kept makes room for it.
    pub(super) fn offer(&mut self, call: Attribution) {
        if self.calls.len() < SLOWEST_KEPT {
            self.calls.push(call);
            return;
        }
        if let Some((i, fastest)) = self.calls.iter().enumerate().min_by_key(|(_, a)| a.latency_ns) {
            if fastest.latency_ns < call.latency_ns {
                self.calls[i] = call;
            }
        }
    }

    /// Slowest first.
    fn into_sorted(mut self) -> Vec<Attribution> {
        self.calls.sort_by_key(|a| std::cmp::Reverse(a.latency_ns));
        self.calls
    }
}

/// What the watch ended with, as the tracer and the loop left it.
pub(super) struct Watched {
    pub(super) watched: String,
    pub(super) params: BTreeMap<String, String>,
    pub(super) threshold: Duration,
    pub(super) started_at: String,
    pub(super) duration_s: f64,
    /// A signal ended it before its --duration.
    pub(super) interrupted: bool,
    pub(super) latencies: HashMap<(u32, SyncKind), Buckets>,
    pub(super) names: HashMap<u32, String>,
    /// The processes that ended, their calls by name.
    pub(super) ended: Ended,
    /// Calls over the threshold, and the slowest of them.
    pub(super) slow_calls: u64,
    pub(super) slowest: Slowest,
    pub(super) lost: Lost,
    pub(super) run_time: RunTime,
    /// The kernel hooks the program was attached to.
    pub(super) hooks: crate::explain::bpf::hooks::BpfHooks,
    /// How wakeups made in an interrupt were told ([`crate::explain::explanation::BpfTracing`]).
    pub(super) interrupt_wakers_by: crate::explain::explanation::InterruptWakersBy,
    /// CPU time of this process while it watched.
    pub(super) cpu_ns: u64,
    pub(super) environment: Fingerprint,
}

/// The kind a sync call is among the operations results count (the same names).
fn op_of(kind: SyncKind) -> OpKind {
    OpKind::from_name(kind.name()).expect("every SyncKind is named as an OpKind")
}

fn stats_of(b: &Buckets) -> OpStats {
    OpStats {
        count: b.count(),
        errors: b.failed(),
        bytes: 0,
        latency_ns: b.summary(),
    }
}

impl Watched {
    /// The run to record.
    pub(super) fn into_result(self) -> RunResult {
        let mut keys: Vec<&(u32, SyncKind)> = self.latencies.keys().collect();
        keys.sort();
        let mut per_kind: BTreeMap<OpKind, Buckets> = BTreeMap::new();
        let mut by_process = Vec::new();
        for key in keys {
            let b = &self.latencies[key];
            per_kind.entry(op_of(key.1)).or_default().merge(b);
            let name = self.names.get(&key.0).map_or("?", String::as_str);
            by_process.push(ProcessCalls {
                process: format!("{name} {}", key.0),
                op: op_of(key.1),
                stats: stats_of(b),
            });
        }
        let mut exited = BTreeMap::new();
        for (name, folded) in &self.ended.by_name {
            let label = Ended::label(name, folded);
            for (kind, b) in &folded.latencies {
                per_kind.entry(op_of(*kind)).or_default().merge(b);
                by_process.push(ProcessCalls {
                    process: label.clone(),
                    op: op_of(*kind),
                    stats: stats_of(b),
                });
            }
            exited.insert(label, folded.processes);
        }
        let ops = per_kind.iter().map(|(op, b)| (*op, stats_of(b))).collect();
        let threshold_ns = u64::try_from(self.threshold.as_nanos()).unwrap_or(u64::MAX);
        let calls = self.slowest.into_sorted();
        let mut explanation = Explanation::new(
            Threshold {
                slowest_fraction: 0.0,
                over_ns: threshold_ns,
            },
            0,
        );
        if self.slow_calls > calls.len() as u64 {
            explanation.notes.push(format!(
                "only the {} slowest of the {} calls over the threshold are kept with their parts",
                calls.len(),
                self.slow_calls
            ));
        }
        let lost = self.lost;
        if lost.calls + lost.records + lost.histogram > 0 {
            explanation.notes.push(format!(
                "lost in the kernel: {} calls not followed, {} slow calls not sent, {} histogram entries",
                lost.calls, lost.records, lost.histogram
            ));
        }
        explanation.events = self.slow_calls;
        explanation.lost_events = lost.calls + lost.records + lost.histogram;
        explanation.reader_cpu_ns = self.cpu_ns;
        explanation.calls = calls;
        explanation.bpf = Some(BpfTracing {
            slowest_kept: SLOWEST_KEPT as u32,
            program_stats: self.run_time.asked,
            program_runs: self.run_time.runs,
            program_run_ns: self.run_time.ns,
            calls_not_followed: lost.calls,
            records_not_sent: lost.records,
            histogram_entries_lost: lost.histogram,
            interrupt_wakers: true,
            interrupt_wakers_by: Some(self.interrupt_wakers_by),
            hooks: Some(self.hooks),
        });
        let details = Details {
            watched: self.watched,
            threshold_ns,
            slow_calls: self.slow_calls,
            by_process,
            exited,
        };
        let mut result = RunResult {
            schema_version: SCHEMA_VERSION,
            scenario: SCENARIO.to_string(),
            started_at: self.started_at,
            duration_s: self.duration_s,
            interrupted: self.interrupted,
            params: self.params,
            environment: self.environment,
            ops,
            samples: Vec::new(),
            background: None,
            tables: Vec::new(),
            findings: Vec::new(),
            details: Some(crate::scenario::Details::Watch(details)),
            figures: Default::default(),
            timeline: None,
            explain: Some(explanation),
            stored: None,
            extra: Default::default(),
        };
        result.render_views();
        result
    }
}

/// CPU time (user + system) of this process so far, ns (`getrusage(RUSAGE_SELF)`).
pub(super) fn process_cpu_ns() -> u64 {
    use nix::sys::resource::{getrusage, UsageWho};
    let Ok(ru) = getrusage(UsageWho::RUSAGE_SELF) else {
        return 0;
    };
    let tv = |t: nix::sys::time::TimeVal| t.tv_sec() as u64 * 1_000_000_000 + t.tv_usec() as u64 * 1_000;
    tv(ru.user_time()) + tv(ru.system_time())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(latency_ns: u64) -> Attribution {
        Attribution {
            tid: 1,
            process: None,
            op: "fsync".into(),
            start_ns: 0,
            latency_ns,
            parts: Vec::new(),
            notes: Vec::new(),
        }
    }

    #[test]
    /// Issue 25.
    fn the_help_says_how_many_calls_are_kept() {
        let said = format!("only the {SLOWEST_KEPT} slowest calls");
        assert!(crate::cli::WATCH_HELP.contains(&said), "--help must say {said:?}");
    }

    #[test]
    /// Issue 25.
    fn only_the_slowest_calls_are_kept() {
        let mut kept = Slowest::default();
        for ns in 0..(SLOWEST_KEPT as u64 * 3) {
            kept.offer(call((ns * 7919) % 1000 + ns));
        }
        let calls = kept.into_sorted();
        assert_eq!(calls.len(), SLOWEST_KEPT);
        let mut all: Vec<u64> = (0..(SLOWEST_KEPT as u64 * 3))
            .map(|ns| (ns * 7919) % 1000 + ns)
            .collect();
        all.sort_unstable_by(|a, b| b.cmp(a));
        let kept: Vec<u64> = calls.iter().map(|a| a.latency_ns).collect();
        assert_eq!(kept, all[..SLOWEST_KEPT]);
    }
}
