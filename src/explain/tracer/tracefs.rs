//! The tracefs tracer ([`crate::explain::tracefs`]) behind [`super::Tracer`]: a run's measuring
//! threads (the calling thread and the worker threads, by name) or a command's process tree
//! followed in a private instance, the trace read, and the slow calls attributed in user space
//! ([`crate::explain::attribution`]).

use anyhow::Result;

use super::{process_of, tid_of, Tracer, Whom, SAVE_TRACE, TRACE_STACKS};
use crate::explain::attribution::explain;
use crate::explain::explanation::{call_of, slow_calls, Explanation};
use crate::explain::syscalls::sync_calls;
use crate::explain::tracefs::{TraceConfig, TracedFs, Tracing, Watch};
use crate::measure::{RunClock, Sample};
use crate::role::pool::worker_thread_name;

/// tracefs tracing a run or a command.
pub(crate) struct Tracefs {
    tracing: Tracing,
}

impl Tracefs {
    /// Starts the instance on `whom`, for the filesystem `fs`. A run's trace keeps its text
    /// when FSYNCLAB_SAVE_TRACE asks, and no kernel stacks when FSYNCLAB_TRACE_STACKS=0.
    pub(crate) fn start(whom: Whom, fs: TracedFs, clock: RunClock) -> Result<Tracefs> {
        let config = match whom {
            Whom::Run { tid } => {
                let watch = Watch {
                    tids: vec![tid],
                    comms: vec![worker_thread_name()],
                    process_tree: None,
                };
                let mut config = TraceConfig::new(watch, fs, clock.origin_monotonic_ns());
                config.keep_text = std::env::var_os(SAVE_TRACE).is_some();
                config.stacks = std::env::var_os(TRACE_STACKS).is_none_or(|v| v != "0");
                config
            }
            Whom::StartedBy { .. } => {
                TraceConfig::new(Watch::descendants_of_this_thread(), fs, clock.origin_monotonic_ns())
            }
        };
        Ok(Tracefs {
            tracing: Tracing::start(config)?,
        })
    }
}

impl Tracer for Tracefs {
    fn finish(self: Box<Self>, measured: Option<&[Sample]>, explanation: &mut Explanation) -> Vec<Sample> {
        let main = explanation.traced_tid;
        let save = std::env::var_os(SAVE_TRACE).filter(|_| measured.is_some());
        if save.is_some() {
            for s in measured.unwrap_or_default().iter().filter(|s| s.error.is_none()) {
                let _ = self.tracing.mark(&call_of(s, tid_of(s, main)).marker());
            }
        }
        let trace = match self.tracing.stop() {
            Ok(trace) => trace,
            Err(e) => {
                explanation.notes.push(format!("tracing failed: {e:#}"));
                return Vec::new();
            }
        };
        if let (Some(file), Some(text)) = (save, trace.to_saved_text()) {
            let _ = std::fs::write(file, text);
        }
        // A command's calls are read from its system-call events.
        let timed = match measured {
            Some(_) => Vec::new(),
            None => sync_calls(&trace.events, trace.origin_ns, main),
        };
        let samples = measured.unwrap_or(&timed);
        let (calls, syncs) = slow_calls(samples, &explanation.threshold, |s| tid_of(s, main));
        let mut explained = explain(&trace, &calls, &syncs);
        if measured.is_none() {
            for a in &mut explained {
                a.process = process_of(samples, a.tid, a.start_ns);
            }
        }
        explained.sort_by_key(|a| std::cmp::Reverse(a.latency_ns));
        explanation.take_trace(trace, explained);
        timed
    }
}
