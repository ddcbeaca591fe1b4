//! The BPF tracer ([`crate::explain::bpf`]) behind [`super::Tracer`]: the program of `fsynclab
//! watch` on a run's own process or on a command's process tree ([`crate::explain::bpf::run`]), the
//! slow calls it split in the kernel tied to the calls measured ([`crate::explain::bpf::tie`]).

use anyhow::Result;

use super::{process_of, tid_of, Tracer, Whom};
use crate::explain::bpf::latency_record::CallLatency;
use crate::explain::bpf::run::{Followed, RunTracer, Traced};
use crate::explain::explanation::{slow_calls, Explanation};
use crate::measure::{OpKind, RunClock, Sample};
use crate::sys::Errno;

/// Said of every command the BPF tracer follows: what it does not see that tracefs does.
const BPF_UNSEEN: &str =
    "the BPF tracer counts every msync, with or without MS_SYNC (--tracer tracefs tells them apart)";

/// The BPF program following a run or a command.
pub(crate) struct Bpf {
    tracer: RunTracer,
    /// CLOCK_MONOTONIC at the run clock's start.
    origin_ns: u64,
}

impl Bpf {
    /// Loads and attaches the program on `whom`.
    pub(crate) fn start(whom: Whom, clock: RunClock) -> Result<Bpf> {
        let traced = match whom {
            Whom::Run { tid } => {
                // The run's first call is measured after the program is attached.
                crate::measure::samples::forget_first_measured();
                Traced::ThisProcess { tid }
            }
            Whom::StartedBy { tid } => Traced::StartedBy(tid),
        };
        Ok(Bpf {
            tracer: RunTracer::start(traced, clock.origin_monotonic_ns())?,
            origin_ns: clock.origin_monotonic_ns(),
        })
    }
}

impl Tracer for Bpf {
    fn finish(self: Box<Self>, measured: Option<&[Sample]>, explanation: &mut Explanation) -> Vec<Sample> {
        let main = explanation.traced_tid;
        let followed = match self.tracer.stop() {
            Ok(followed) => followed,
            Err(e) => {
                explanation.notes.push(format!("tracing failed: {e:#}"));
                return Vec::new();
            }
        };
        // A command's calls are the latencies the kernel sent of each.
        let timed = match measured {
            Some(_) => Vec::new(),
            None => samples_of(&followed, self.origin_ns),
        };
        let samples = measured.unwrap_or(&timed);
        let (calls, syncs) = slow_calls(samples, &explanation.threshold, |s| tid_of(s, main));
        explanation.take_bpf(&followed, &calls, &syncs, self.origin_ns);
        if measured.is_none() {
            for a in &mut explanation.calls {
                a.process = process_of(samples, a.tid, a.start_ns);
            }
            explanation.notes.push(BPF_UNSEEN.to_string());
        }
        timed
    }
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
            hooks: Default::default(),
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
