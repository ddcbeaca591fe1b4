//! What `exec --explain` records while a command runs: the timeline, and the command's sync
//! calls, with those of every process and thread it starts, from one of two tracers: the
//! tracefs tracer's process-tree instance, from whose events the calls are read
//! ([`super::syscalls`]), or the BPF program, which follows the processes the command
//! starts from its fork on and sends every sync call's latency and the slowest calls' parts
//! ([`super::bpf::run`]). The slow calls are explained as a scenario's are.

use std::path::Path;

use anyhow::Result;

use super::attribution::explain;
use super::bpf::record::CallLatency;
use super::bpf::run::{Followed, RunTracer, Traced};
use super::run::{slow_calls, ExplainOptions, Explanation, TracerKind};
use super::syscalls::sync_calls;
use super::timeline::{Timeline, TimelineRecord};
use super::tracer::{current_tid, TraceConfig, TracedFs, Tracer, Watch};
use crate::measure::{OpKind, RunClock, Sample};
use crate::sys::Errno;

/// Tracing while a command runs.
pub(crate) struct CommandTrace {
    timeline: Timeline,
    tracer: CommandTracer,
    options: ExplainOptions,
    /// The thread that starts the command (its own calls are not the command's).
    root: u32,
    /// CLOCK_MONOTONIC at the run clock's start.
    origin_ns: u64,
}

/// The tracer `--tracer` chose.
enum CommandTracer {
    Tracefs(Box<Tracer>),
    Bpf(RunTracer),
}

/// What a traced command did.
pub(crate) struct TracedCommand {
    pub(crate) timeline: TimelineRecord,
    /// Its sync calls, in order of their start, each with its process name.
    pub(crate) samples: Vec<Sample>,
    pub(crate) explanation: Explanation,
}

/// Said of every command the BPF tracer follows: what it does not see that tracefs does.
const BPF_UNSEEN: &str =
    "the BPF tracer counts every msync, with or without MS_SYNC (--tracer tracefs tells them apart)";

impl CommandTrace {
    /// Starts the timeline on `clock` and the trace of every process and thread the
    /// calling thread starts from now on; `dir` names the filesystem whose journal and disk
    /// are traced. Unlike a scenario's, a tracer that cannot start is an error: the user
    /// asked for it.
    pub(crate) fn start(options: &ExplainOptions, dir: &Path, clock: RunClock) -> Result<CommandTrace> {
        let fs = TracedFs::of_path(dir);
        let timeline = Timeline::start(clock, options.timeline_interval, fs.dev_name.as_deref())?;
        let root = current_tid();
        let tracer = match options.tracer {
            TracerKind::Tracefs => {
                let config = TraceConfig::new(Watch::descendants_of_this_thread(), fs, clock.origin_monotonic_ns());
                CommandTracer::Tracefs(Box::new(Tracer::start(config)?))
            }
            TracerKind::Bpf => {
                CommandTracer::Bpf(RunTracer::start(Traced::StartedBy(root), clock.origin_monotonic_ns())?)
            }
        };
        Ok(CommandTrace {
            timeline,
            tracer,
            options: options.clone(),
            root,
            origin_ns: clock.origin_monotonic_ns(),
        })
    }

    /// Stops both, reads the command's sync calls and explains the slow ones.
    pub(crate) fn finish(self) -> TracedCommand {
        let timeline = self.timeline.stop();
        let mut explanation = Explanation::new(self.options.threshold, self.root);
        let samples = match self.tracer {
            CommandTracer::Tracefs(tracer) => match tracer.stop() {
                Ok(trace) => {
                    let samples = sync_calls(&trace.events, trace.origin_ns, self.root);
                    let (calls, syncs) = slow_calls(&samples, &self.options.threshold, |s| s.tid);
                    let mut explained = explain(&trace, &calls, &syncs);
                    for a in &mut explained {
                        a.process = process_of(&samples, a.tid, a.start_ns);
                    }
                    explained.sort_by_key(|a| std::cmp::Reverse(a.latency_ns));
                    explanation.take_trace(trace, explained);
                    samples
                }
                Err(e) => {
                    explanation.notes.push(format!("tracing failed: {e:#}"));
                    Vec::new()
                }
            },
            CommandTracer::Bpf(tracer) => match tracer.stop() {
                Ok(followed) => {
                    let samples = samples_of(&followed, self.origin_ns);
                    let (calls, syncs) = slow_calls(&samples, &self.options.threshold, |s| s.tid);
                    explanation.take_bpf(&followed, &calls, &syncs, self.origin_ns);
                    for a in &mut explanation.calls {
                        a.process = process_of(&samples, a.tid, a.start_ns);
                    }
                    explanation.notes.push(BPF_UNSEEN.to_string());
                    samples
                }
                Err(e) => {
                    explanation.notes.push(format!("tracing failed: {e:#}"));
                    Vec::new()
                }
            },
        };
        TracedCommand {
            timeline,
            samples,
            explanation,
        }
    }
}

/// The name of the process that made the call of thread `tid` starting at `start_ns`.
fn process_of(samples: &[Sample], tid: u32, start_ns: u64) -> Option<String> {
    samples
        .iter()
        .find(|s| s.tid == tid && s.t_ns == start_ns)
        .and_then(|s| s.process)
        .map(|p| p.to_string())
}

/// The command's sync calls as the kernel timed them, as samples on the run clock (whose
/// zero is CLOCK_MONOTONIC `origin_ns`) in order of their start, each with its task's name.
fn samples_of(followed: &Followed, origin_ns: u64) -> Vec<Sample> {
    let mut samples: Vec<Sample> = followed.every.iter().filter_map(|c| sample_of(c, origin_ns)).collect();
    samples.sort_by_key(|s| s.t_ns);
    samples
}

fn sample_of(call: &CallLatency, origin_ns: u64) -> Option<Sample> {
    let kind = call.kind?;
    let op = OpKind::from_name(kind.name())?;
    Some(Sample {
        t_ns: call.start_ns.saturating_sub(origin_ns),
        op,
        latency_ns: call.latency_ns,
        bytes: if kind.is_write() { call.ret.max(0) as u64 } else { 0 },
        error: (call.ret < 0).then(|| Errno(-call.ret)),
        process: (!call.comm.is_empty()).then(|| call.comm.as_str().into()),
        tid: call.tid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::bpf::record::SyncKind;

    fn latency(start_ns: u64, pid: u32, kind: Option<SyncKind>, ret: i32, comm: &str) -> CallLatency {
        CallLatency {
            start_ns,
            latency_ns: 5_000,
            pid,
            tid: pid + 1,
            kind,
            ret,
            comm: comm.into(),
        }
    }

    #[test]
    fn the_kernels_latencies_become_samples_on_the_run_clock_with_their_process() {
        let origin = 1_000_000;
        let followed = Followed {
            symbols: crate::explain::bpf::symbols::KernelSymbols::empty(),
            calls: Vec::new(),
            every: vec![
                latency(origin + 900, 20, Some(SyncKind::Fdatasync), -5, ""),
                latency(origin + 100, 10, Some(SyncKind::Fsync), 0, "postgres"),
                latency(origin + 500, 10, None, 0, "postgres"),
            ],
            sent: 0,
            lost: Default::default(),
            cost: Default::default(),
            reader_cpu_ns: 0,
        };
        let samples = samples_of(&followed, origin);
        assert_eq!(samples.len(), 2, "a kind this fsynclab does not know is left out");
        assert_eq!(
            (samples[0].t_ns, samples[0].op, samples[0].tid),
            (100, OpKind::Fsync, 11)
        );
        assert_eq!(samples[0].process.map(|p| p.to_string()).as_deref(), Some("postgres"));
        assert_eq!(samples[0].error, None);
        assert_eq!((samples[1].t_ns, samples[1].op), (900, OpKind::Fdatasync));
        assert_eq!(samples[1].error, Some(Errno(5)));
        assert_eq!(samples[1].process, None, "a task whose name was not read");
    }
}
