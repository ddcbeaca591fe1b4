//! What a run records to explain itself, as the engine uses it: the timeline always, and,
//! with `--explain`, a kernel trace of the thread that makes the measured calls, whose slow
//! calls are then split into causes ([`super::attribute`]).
//!
//! The options are decided before the run ([`ExplainOptions::decide`]): `--explain` is
//! on by default where it can work (root, tracefs in the kernel) and says in one line why
//! not where it cannot. The engine starts [`Explaining`] just before the measurement and
//! finishes it just after; dropping it on an error path still removes the trace instance.
//!
//! `FSYNCLAB_SAVE_TRACE=FILE` saves the run's raw trace, with its calls written in as
//! markers, to FILE: how the fixtures in tests/fixtures/trace-*.txt were captured.

use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::attribution::{attribute, Attribution, Call, Threshold};
use super::timeline::{Timeline, TimelineRecord, DEFAULT_INTERVAL};
use super::tracer::{current_tid, Task, TraceConfig, TracedFs, Tracer, Watch};
use crate::error::Usage;
use crate::measure::{RunClock, Sample};

/// What a run records to explain itself.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ExplainOptions {
    /// Trace the kernel and attribute the slow calls.
    pub(crate) trace: bool,
    pub(crate) threshold: Threshold,
    pub(crate) timeline_interval: Duration,
}

impl Default for ExplainOptions {
    /// The timeline only: what `suite` and `matrix` runs record.
    fn default() -> ExplainOptions {
        ExplainOptions {
            trace: false,
            threshold: Threshold::default(),
            timeline_interval: DEFAULT_INTERVAL,
        }
    }
}

/// Why tracing cannot work here, if it cannot: no root, or no tracefs in the kernel.
pub(crate) fn unavailable() -> Option<&'static str> {
    if !crate::sys::is_root() {
        return Some("tracing the kernel needs root");
    }
    (!crate::testbed::tracefs::in_kernel()).then_some("this kernel has no tracefs (CONFIG_TRACING)")
}

/// Whether the kernel is to be traced, as the command line said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TraceWish {
    /// `--explain`: trace, or refuse the run where tracing cannot work.
    Asked,
    /// Neither flag: trace where it can work, say in one line why not elsewhere.
    Default,
    /// `--no-explain`.
    Declined,
}

impl ExplainOptions {
    /// Decides whether to trace; returns the options and, when tracing was left to its
    /// default and cannot work here, the one line that says so. An explicit `--explain` that
    /// cannot work is refused.
    pub(crate) fn decide(
        wish: TraceWish,
        threshold: Threshold,
        timeline_interval: Duration,
    ) -> Result<(ExplainOptions, Option<String>), Usage> {
        let mut options = ExplainOptions {
            trace: wish != TraceWish::Declined,
            threshold,
            timeline_interval,
        };
        let mut note = None;
        if options.trace {
            if let Some(why) = unavailable() {
                if wish == TraceWish::Asked {
                    return Err(Usage(format!("--explain: {why}; run as root, or leave --explain out")));
                }
                options.trace = false;
                note = Some(format!(
                    "fsynclab: slow calls are not explained: {why} (the timeline is still recorded)"
                ));
            }
        }
        Ok((options, note))
    }
}

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
    /// The calls explained, slowest first.
    pub(crate) calls: Vec<Attribution>,
    /// Why some or all calls could not be explained.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) notes: Vec<String>,
}

/// Names a file to save the raw trace in (see the module's comment).
const SAVE_TRACE: &str = "FSYNCLAB_SAVE_TRACE";

/// The timeline and the tracer while a run goes.
pub(crate) struct Explaining {
    timeline: Option<Timeline>,
    tracer: Option<Tracer>,
    tid: u32,
    threshold: Threshold,
    /// What kept tracing from starting.
    notes: Vec<String>,
}

impl Explaining {
    /// Starts the timeline on `clock`, and the tracer on the calling thread (the one that
    /// makes the measured calls) when `options` ask for it and the scenario's calls are made
    /// there (`untraceable` says why not). A tracer that cannot start is a note, not an error.
    pub(crate) fn start(
        options: &ExplainOptions,
        dir: &std::path::Path,
        clock: RunClock,
        untraceable: Option<&str>,
    ) -> Result<Explaining> {
        let fs = TracedFs::of_path(dir);
        let timeline = Timeline::start(clock, options.timeline_interval, fs.dev_name.as_deref())?;
        let tid = current_tid();
        let mut notes = Vec::new();
        let tracer = match (options.trace, untraceable) {
            (false, _) => None,
            (true, Some(why)) => {
                notes.push(format!("slow calls are not explained: {why}"));
                None
            }
            (true, None) => {
                let mut config = TraceConfig::new(Watch::threads(&[tid]), fs, clock.origin_monotonic_ns());
                config.keep_text = std::env::var_os(SAVE_TRACE).is_some();
                match Tracer::start(config) {
                    Ok(t) => Some(t),
                    Err(e) => {
                        notes.push(format!("tracing could not start: {e:#}"));
                        None
                    }
                }
            }
        };
        Ok(Explaining {
            timeline: Some(timeline),
            tracer,
            tid,
            threshold: options.threshold,
            notes,
        })
    }

    /// Stops both and explains the slow calls among `samples`.
    pub(crate) fn finish(mut self, samples: &[Sample]) -> (Option<TimelineRecord>, Option<Explanation>) {
        let timeline = self.timeline.take().map(Timeline::stop);
        let calls: Vec<Call> = samples
            .iter()
            .filter(|s| s.error.is_none())
            .map(|s| Call {
                tid: self.tid,
                op: s.op.to_string(),
                start_ns: s.t_ns,
                latency_ns: s.latency_ns,
            })
            .collect();
        let traced = match self.tracer.take() {
            Some(tracer) => {
                let save = std::env::var_os(SAVE_TRACE);
                if save.is_some() {
                    for c in &calls {
                        let _ = tracer.mark(&c.marker());
                    }
                }
                let trace = tracer.stop();
                if let (Some(file), Ok(trace)) = (save, &trace) {
                    if let Some(text) = trace.to_saved_text() {
                        let _ = std::fs::write(file, text);
                    }
                }
                Some(trace)
            }
            None if self.notes.is_empty() => return (timeline, None),
            None => None,
        };
        let mut explanation = Explanation {
            threshold: self.threshold,
            traced_tid: self.tid,
            journal_threads: Vec::new(),
            events: 0,
            lost_events: 0,
            missing_events: Vec::new(),
            reader_cpu_ns: 0,
            calls: Vec::new(),
            notes: std::mem::take(&mut self.notes),
        };
        match traced {
            Some(Ok(trace)) => {
                let mut explained = attribute(&trace, &calls, &self.threshold);
                explained.sort_by_key(|a| std::cmp::Reverse(a.latency_ns));
                if trace.lost_events > 0 {
                    explanation.notes.push(format!(
                        "the kernel dropped {} trace events: parts near them may be unattributed",
                        trace.lost_events
                    ));
                }
                explanation.journal_threads = trace.journal_threads;
                explanation.events = trace.events.len() as u64;
                explanation.lost_events = trace.lost_events;
                explanation.missing_events = trace.missing_events;
                explanation.reader_cpu_ns = trace.reader_cpu_ns;
                explanation.calls = explained;
            }
            Some(Err(e)) => explanation.notes.push(format!("tracing failed: {e:#}")),
            None => {}
        }
        (timeline, Some(explanation))
    }
}
