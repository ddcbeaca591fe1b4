//! What `exec --explain` records while a command runs: the timeline, and the command's sync
//! calls, with those of every process and thread it starts, from the tracer `--tracer`
//! chose ([`super::tracer`]), which times them itself (the tracefs tracer's process-tree
//! instance reads them from its system-call events, [`super::syscalls`]; the BPF program
//! sends every sync call's latency). The slow calls are explained as a scenario's are.

use std::path::Path;

use anyhow::Result;

use super::explanation::Explanation;
use super::run::ExplainOptions;
use super::timeline::{Timeline, TimelineRecord};
use super::tracefs::{current_tid, TracedFs};
use super::tracer::{self, Tracer, Whom};
use crate::measure::{RunClock, Sample};

/// Tracing while a command runs.
pub(crate) struct CommandTrace {
    timeline: Timeline,
    tracer: Box<dyn Tracer>,
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
        let root = current_tid();
        let tracer = tracer::start(options.tracer, Whom::StartedBy { tid: root }, fs, clock)?;
        Ok(CommandTrace {
            timeline,
            tracer,
            options: options.clone(),
            root,
        })
    }

    /// Stops both, reads the command's sync calls and explains the slow ones.
    pub(crate) fn finish(self) -> TracedCommand {
        let timeline = self.timeline.stop();
        let mut explanation = Explanation::new(self.options.threshold, self.root);
        let samples = self.tracer.finish(None, &mut explanation);
        TracedCommand {
            timeline,
            samples,
            explanation,
        }
    }
}
