//! What `exec --explain` records while a command runs: the timeline, and a trace of every
//! process and thread the command starts (the tracer's process-tree instance), from which
//! its sync calls are read ([`super::syscalls`]) and the slow ones explained as a
//! scenario's are.

use std::path::Path;

use anyhow::Result;

use super::attribution::explain;
use super::run::{slow_calls, ExplainOptions, Explanation};
use super::syscalls::sync_calls;
use super::timeline::{Timeline, TimelineRecord};
use super::tracer::{current_tid, TraceConfig, TracedFs, Tracer, Watch};
use crate::measure::{RunClock, Sample};

/// Tracing while a command runs.
pub(crate) struct CommandTrace {
    timeline: Timeline,
    tracer: Tracer,
    options: ExplainOptions,
    /// The thread that starts the command (its own calls are not the command's).
    root: u32,
}

/// What a traced command did.
pub(crate) struct TracedCommand {
    pub(crate) timeline: TimelineRecord,
    /// Its sync calls, in order of their start, each with its process name.
    pub(crate) samples: Vec<Sample>,
    pub(crate) explanation: Explanation,
}

impl CommandTrace {
    /// Starts the timeline on `clock` and the trace of every process and thread the
    /// calling thread starts from now on; `dir` names the filesystem whose journal and disk
    /// are traced. Unlike a scenario's, a tracer that cannot start is an error: the user
    /// asked for it.
    pub(crate) fn start(options: &ExplainOptions, dir: &Path, clock: RunClock) -> Result<CommandTrace> {
        let fs = TracedFs::of_path(dir);
        let timeline = Timeline::start(clock, options.timeline_interval, fs.dev_name.as_deref())?;
        let config = TraceConfig::new(Watch::descendants_of_this_thread(), fs, clock.origin_monotonic_ns());
        let tracer = Tracer::start(config)?;
        Ok(CommandTrace {
            timeline,
            tracer,
            options: options.clone(),
            root: current_tid(),
        })
    }

    /// Stops both, reads the command's sync calls and explains the slow ones.
    pub(crate) fn finish(self) -> TracedCommand {
        let timeline = self.timeline.stop();
        let mut explanation = Explanation::new(self.options.threshold, self.root);
        let samples = match self.tracer.stop() {
            Ok(trace) => {
                let samples = sync_calls(&trace.events, trace.origin_ns, self.root);
                let (calls, syncs) = slow_calls(&samples, &self.options.threshold, |s| s.tid);
                let mut explained = explain(&trace, &calls, &syncs);
                for a in &mut explained {
                    a.process = samples
                        .iter()
                        .find(|s| s.tid == a.tid && s.t_ns == a.start_ns)
                        .and_then(|s| s.process)
                        .map(|p| p.to_string());
                }
                explained.sort_by_key(|a| std::cmp::Reverse(a.latency_ns));
                explanation.take_trace(trace, explained);
                samples
            }
            Err(e) => {
                explanation.notes.push(format!("tracing failed: {e:#}"));
                Vec::new()
            }
        };
        TracedCommand {
            timeline,
            samples,
            explanation,
        }
    }
}
