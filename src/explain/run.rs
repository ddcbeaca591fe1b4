//! What a run records to explain itself, as the engine uses it: the timeline always, and,
//! with `--explain`, a kernel trace of the threads that make the measured calls — the one
//! that runs the scenario, and the worker threads of [`crate::role::pool`], followed by
//! their name — whose slow calls are then split into causes ([`super::attribution`]).
//!
//! The options are decided before the run ([`ExplainOptions::decide`]): `--explain` is
//! on by default where it can work (root, tracefs in the kernel) and says in one line why
//! not where it cannot. The engine starts [`Explaining`] just before the measurement and
//! finishes it just after; dropping it on an error path still removes the trace instance.
//!
//! The tracer is chosen and started at the plug point ([`super::tracer`]).

use std::time::Duration;

use anyhow::Result;

use super::attribution::Threshold;
use super::explanation::Explanation;
use super::timeline::{Timeline, TimelineRecord, DEFAULT_INTERVAL};
use super::tracefs::{current_tid, TracedFs};
use super::tracer::{self, unavailable, Tracer, TracerKind, Whom};
use crate::error::Usage;
use crate::measure::{RunClock, Sample};

/// What a run records to explain itself.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ExplainOptions {
    /// Trace the kernel and attribute the slow calls.
    pub(crate) trace: bool,
    pub(crate) threshold: Threshold,
    pub(crate) timeline_interval: Duration,
    /// Which tracer explains the calls.
    pub(crate) tracer: TracerKind,
    /// `--explain` was given: a tracer that cannot start fails the run, rather than leaving
    /// its calls unexplained with a note (a bench would take an untraced run for a cheap
    /// tracer).
    pub(crate) required: bool,
}

impl Default for ExplainOptions {
    /// The timeline only: what `suite` and `matrix` runs record.
    fn default() -> ExplainOptions {
        ExplainOptions {
            trace: false,
            threshold: Threshold::default(),
            timeline_interval: DEFAULT_INTERVAL,
            tracer: TracerKind::Tracefs,
            required: false,
        }
    }
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
        tracer: TracerKind,
    ) -> Result<(ExplainOptions, Option<String>), Usage> {
        let mut options = ExplainOptions {
            trace: wish != TraceWish::Declined,
            threshold,
            timeline_interval,
            tracer,
            required: wish == TraceWish::Asked,
        };
        let mut note = None;
        if options.trace {
            if let Some(why) = unavailable(tracer) {
                if wish == TraceWish::Asked {
                    let instead = match tracer {
                        TracerKind::Bpf if crate::sys::is_root() => "or use --tracer tracefs",
                        _ => "run as root, or leave --explain out",
                    };
                    return Err(Usage(format!("--explain: {why}; {instead}")));
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

/// The timeline and the tracer while a run goes.
pub(crate) struct Explaining {
    timeline: Option<Timeline>,
    tracer: Option<Box<dyn Tracer>>,
    tid: u32,
    threshold: Threshold,
    /// What kept tracing from starting.
    notes: Vec<String>,
}

impl Explaining {
    /// Starts the timeline on `clock`, and the tracer on the calling thread and the worker
    /// threads (the ones that make the measured calls) when `options` ask for it and the
    /// scenario makes measured calls (`untraceable` says why not). A tracer that cannot start
    /// is a note, not an error, unless `--explain` asked for it ([`ExplainOptions::required`]).
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
            (true, None) => match tracer::start(options.tracer, Whom::Run { tid }, fs, clock) {
                Ok(t) => Some(t),
                Err(e) if options.required => return Err(could_not_start(options.tracer, &e)),
                Err(e) => {
                    notes.push(format!("tracing could not start: {e:#}"));
                    None
                }
            },
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
        if self.tracer.is_none() && self.notes.is_empty() {
            return (timeline, None);
        }
        let mut explanation = Explanation::new(self.threshold, self.tid);
        explanation.notes = std::mem::take(&mut self.notes);
        if let Some(tracer) = self.tracer.take() {
            tracer.finish(Some(samples), &mut explanation);
        }
        (timeline, Some(explanation))
    }
}

/// The one line that ends a run whose `--explain` tracer could not start.
fn could_not_start(tracer: TracerKind, e: &anyhow::Error) -> anyhow::Error {
    let instead = match tracer {
        TracerKind::Bpf => "use --tracer tracefs, or --no-explain",
        TracerKind::Tracefs => "use --no-explain",
    };
    anyhow::anyhow!(
        "--explain: the {} tracer could not start: {e:#}; {instead}",
        tracer.name()
    )
}
