//! Per-call samples of the foreground and the statistics per operation kind built from them.
//!
//! A sample is 40 bytes (start, latency, bytes, kind, errno, the calling thread, and for a
//! traced command the task's name): fsync-tps records about a million of them in a default
//! run, so the kind is an enum, the error an errno and the task name an interned index,
//! never a string, and recording allocates nothing once the sample vector has grown.

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::histogram::{LatencyHistogram, LatencySummary};
use super::op::OpKind;
use super::task::TaskName;
use crate::sys::Errno;

/// One timed foreground call.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Sample {
    /// Start of the call, ns since the start of the run (CLOCK_MONOTONIC).
    pub t_ns: u64,
    pub op: OpKind,
    pub latency_ns: u64,
    /// Bytes the call wrote or covered (0 for a sync of the whole file).
    pub bytes: u64,
    /// The errno when the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Errno>,
    /// The task that made the call, when it is not the run's own (a command traced by
    /// `exec --explain`: `postgres`, `pgbench`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<TaskName>,
    /// The thread that made the call (`gettid`), while the run lasts: what `--explain`
    /// ties the call to its thread's trace events by. Not kept in results (0 when read back).
    #[serde(skip)]
    pub tid: u32,
}

/// Two samples are the same call when they agree on what a result keeps: the thread id is
/// a fact of the live run only.
impl PartialEq for Sample {
    fn eq(&self, other: &Sample) -> bool {
        (
            self.t_ns,
            self.op,
            self.latency_ns,
            self.bytes,
            self.error,
            self.process,
        ) == (
            other.t_ns,
            other.op,
            other.latency_ns,
            other.bytes,
            other.error,
            other.process,
        )
    }
}

/// The statistics of one operation kind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OpStats {
    pub count: u64,
    pub errors: u64,
    /// Bytes of the calls that succeeded.
    pub bytes: u64,
    pub latency_ns: LatencySummary,
}

/// What is kept per kind while recording.
#[derive(Clone, Debug, Default)]
struct Accumulator {
    latency: LatencyHistogram,
    errors: u64,
    bytes: u64,
}

impl Accumulator {
    fn stats(&self) -> OpStats {
        OpStats {
            count: self.latency.count(),
            errors: self.errors,
            bytes: self.bytes,
            latency_ns: self.latency.summary(),
        }
    }
}

/// When (on the run clock, + 1 so that 0 means none) the first call of the process's run
/// that was measured started: a run's BPF tracer leaves out the sync calls made before it,
/// the run's preparation ([`crate::explain::bpf::run`]).
static FIRST_MEASURED: AtomicU64 = AtomicU64::new(0);

/// Forgets the first measured call (a run begins).
pub(crate) fn forget_first_measured() {
    FIRST_MEASURED.store(0, Ordering::Relaxed);
}

/// When the first measured call of this run started, on the run clock, if one was recorded.
pub(crate) fn first_measured_ns() -> Option<u64> {
    FIRST_MEASURED.load(Ordering::Relaxed).checked_sub(1)
}

/// Collects samples and a histogram per operation kind. Each sample is marked with the
/// thread that made the recorder ([`Recorder::new`] in each worker thread).
#[derive(Debug, Default)]
pub struct Recorder {
    samples: Vec<Sample>,
    kinds: [Option<Box<Accumulator>>; OpKind::ALL.len()],
    /// The thread whose calls this recorder records.
    tid: u32,
}

impl Recorder {
    /// A recorder of the calling thread's calls.
    pub fn new() -> Recorder {
        Recorder {
            tid: crate::sys::current_tid(),
            ..Recorder::default()
        }
    }

    /// Records one call and returns the sample as stored. A failed call counts as an error
    /// of its kind and adds no bytes: it wrote nothing we can vouch for.
    pub fn record(&mut self, op: OpKind, t_ns: u64, latency_ns: u64, bytes: u64, outcome: &io::Result<()>) -> Sample {
        let sample = Sample {
            t_ns,
            op,
            latency_ns,
            bytes,
            error: outcome.as_ref().err().map(Errno::of),
            process: None,
            tid: self.tid,
        };
        self.record_sample(sample);
        sample
    }

    /// Records a call as `sample` has it: one made elsewhere (a traced command's), with its
    /// own thread and task.
    pub fn record_sample(&mut self, sample: Sample) {
        if self.samples.is_empty() {
            // The earliest start of any recorder's first call.
            let start = sample.t_ns + 1;
            let _ = FIRST_MEASURED.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |first| {
                (first == 0 || start < first).then_some(start)
            });
        }
        let acc = self.kinds[sample.op.index()].get_or_insert_with(Box::default);
        acc.latency.record(sample.latency_ns);
        match sample.error {
            Some(_) => acc.errors += 1,
            None => acc.bytes += sample.bytes,
        }
        self.samples.push(sample);
    }

    /// Adds everything `other` recorded (a worker thread's own recorder), keeping the samples
    /// in order of their start time.
    pub fn merge(&mut self, other: Recorder) {
        for (mine, theirs) in self.kinds.iter_mut().zip(other.kinds) {
            let Some(theirs) = theirs else { continue };
            let acc = mine.get_or_insert_with(Box::default);
            acc.latency.merge(&theirs.latency);
            acc.errors += theirs.errors;
            acc.bytes += theirs.bytes;
        }
        // Both sides are in start order already (each recorder belongs to one thread, or is
        // itself a merge): one linear merge, not a sort, made in place from the back of
        // our own grown buffer, so that merging costs no second copy of the run's samples
        // (a new merged vector once doubled the peak memory of a long fsync-tps run).
        let theirs = other.samples;
        let (m, w) = (self.samples.len(), theirs.len());
        let Some(&first) = theirs.first() else { return };
        if self.samples.last().is_none_or(|last| last.t_ns <= first.t_ns) {
            self.samples.extend_from_slice(&theirs);
            return;
        }
        self.samples.resize(m + w, first);
        let s = &mut self.samples;
        // Slot k = i + j is never left of i: no sample of ours is overwritten unread. On
        // equal starts ours come first, as they always did.
        let (mut i, mut j) = (m, w);
        while j > 0 {
            let k = i + j - 1;
            if i > 0 && s[i - 1].t_ns > theirs[j - 1].t_ns {
                s[k] = s[i - 1];
                i -= 1;
            } else {
                s[k] = theirs[j - 1];
                j -= 1;
            }
        }
    }

    /// The statistics of one operation kind, if any call of it was recorded.
    pub fn op(&self, op: OpKind) -> Option<OpStats> {
        self.kinds[op.index()].as_ref().map(|a| a.stats())
    }

    pub fn samples(&self) -> &[Sample] {
        &self.samples
    }

    pub fn errors(&self) -> u64 {
        self.kinds.iter().flatten().map(|a| a.errors).sum()
    }

    /// The statistics of every kind recorded, in the order of their names.
    pub fn ops(&self) -> BTreeMap<OpKind, OpStats> {
        OpKind::ALL
            .iter()
            .filter_map(|op| self.op(*op).map(|s| (*op, s)))
            .collect()
    }

    pub fn into_parts(self) -> (BTreeMap<OpKind, OpStats>, Vec<Sample>) {
        let ops = self.ops();
        (ops, self.samples)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_counts_errors_and_time_order() {
        let mut a = Recorder::new();
        let mut b = Recorder::new();
        a.record(OpKind::Write, 10, 5, 4096, &Ok(()));
        b.record(OpKind::Write, 5, 7, 4096, &Ok(()));
        b.record(OpKind::Fsync, 12, 900, 0, &Err(io::Error::from_raw_os_error(libc::EIO)));
        a.merge(b);
        let w = a.op(OpKind::Write).unwrap();
        assert_eq!((w.count, w.bytes, w.latency_ns.max), (2, 8192, 7));
        assert_eq!(a.op(OpKind::Fsync).unwrap().errors, 1);
        assert_eq!(a.errors(), 1);
        let starts: Vec<u64> = a.samples().iter().map(|s| s.t_ns).collect();
        assert_eq!(starts, vec![5, 10, 12]);
    }

    /// The in-place merge keeps start order, and on equal starts puts ours first.
    #[test]
    fn merge_in_place_interleaves_in_start_order() {
        let rec = |starts: &[(u64, u64)]| {
            let mut r = Recorder::new();
            for &(t, tag) in starts {
                r.record(OpKind::Write, t, tag, 0, &Ok(()));
            }
            r
        };
        let mut a = rec(&[(1, 0), (4, 0), (4, 1), (9, 0)]);
        a.merge(rec(&[(0, 2), (4, 2), (5, 2), (10, 2), (11, 2)]));
        let got: Vec<(u64, u64)> = a.samples().iter().map(|s| (s.t_ns, s.latency_ns)).collect();
        assert_eq!(
            got,
            [(0, 2), (1, 0), (4, 0), (4, 1), (4, 2), (5, 2), (9, 0), (10, 2), (11, 2)]
        );
        let mut b = rec(&[(1, 0)]);
        b.merge(rec(&[(2, 1)]));
        b.merge(Recorder::new());
        assert_eq!(b.samples().len(), 2);
    }

    /// Issue 8, item 8: `ops.write.bytes` counted the bytes of failed writes.
    #[test]
    /// Issue 8.
    fn failed_writes_add_no_bytes() {
        let mut r = Recorder::new();
        r.record(OpKind::Write, 0, 1, 65536, &Ok(()));
        r.record(
            OpKind::Write,
            1,
            1,
            65536,
            &Err(io::Error::from_raw_os_error(libc::ENOSPC)),
        );
        let w = r.op(OpKind::Write).unwrap();
        assert_eq!((w.count, w.errors, w.bytes), (2, 1, 65536));
        assert_eq!(r.samples()[1].error, Some(Errno(libc::ENOSPC)));
    }

    #[test]
    fn a_sample_serializes_as_results_always_named_it() {
        let s = Sample {
            t_ns: 1,
            op: OpKind::WriteOsync,
            latency_ns: 2,
            bytes: 3,
            error: Some(Errno(libc::ENOSPC)),
            process: None,
            tid: 7,
        };
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(
            json,
            r#"{"t_ns":1,"op":"write_osync","latency_ns":2,"bytes":3,"error":"ENOSPC"}"#
        );
        assert_eq!(serde_json::from_str::<Sample>(&json).unwrap(), s);
        let traced = Sample {
            process: Some(TaskName::new("postgres")),
            ..s
        };
        let json = serde_json::to_string(&traced).unwrap();
        assert!(json.ends_with(r#","process":"postgres"}"#), "{json}");
        assert_eq!(serde_json::from_str::<Sample>(&json).unwrap(), traced);
    }

    /// Samples stay 40 bytes: a million of them is a default fsync-tps run.
    #[test]
    fn a_sample_is_40_bytes() {
        assert_eq!(std::mem::size_of::<Sample>(), 40);
    }

    #[test]
    fn samples_carry_the_recording_thread() {
        let mut main = Recorder::new();
        main.record(OpKind::Fsync, 1, 1, 0, &Ok(()));
        let worker = std::thread::spawn(|| {
            let mut r = Recorder::new();
            r.record(OpKind::Fsync, 2, 1, 0, &Ok(()));
            (r, crate::sys::current_tid())
        });
        let (other, tid) = worker.join().unwrap();
        main.merge(other);
        let tids: Vec<u32> = main.samples().iter().map(|s| s.tid).collect();
        assert_eq!(tids, [crate::sys::current_tid(), tid]);
        assert_ne!(tids[0], tids[1]);
    }
}
