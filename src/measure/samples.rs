//! Per-call samples of the foreground and the statistics per operation kind built from them.

use std::collections::BTreeMap;
use std::io;

use serde::{Deserialize, Serialize};

use super::histogram::{LatencyHistogram, LatencySummary};
use crate::sys;

/// One timed foreground call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Start of the call, ns since the start of the run (CLOCK_MONOTONIC).
    pub t_ns: u64,
    /// Operation kind: `write`, `fsync`, `fdatasync`, `sync_file_range`, `write_osync`, ...
    pub op: String,
    pub latency_ns: u64,
    /// Bytes the call wrote or covered (0 for a sync of the whole file).
    pub bytes: u64,
    /// The errno name (`EIO`, `ENOSPC`) when the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The statistics of one operation kind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OpStats {
    pub count: u64,
    pub errors: u64,
    pub bytes: u64,
    pub latency_ns: LatencySummary,
}

/// Collects samples and a histogram per operation kind.
#[derive(Debug, Default)]
pub struct Recorder {
    samples: Vec<Sample>,
    histograms: BTreeMap<String, (LatencyHistogram, u64, u64)>,
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder::default()
    }

    /// Records one call and returns the sample as stored.
    pub fn record(&mut self, op: &str, t_ns: u64, latency_ns: u64, bytes: u64, outcome: &io::Result<()>) -> &Sample {
        let error = outcome.as_ref().err().map(sys::error_name);
        // Look up before inserting: no allocation for an op kind already seen.
        if !self.histograms.contains_key(op) {
            self.histograms.insert(op.to_string(), Default::default());
        }
        let entry = self.histograms.get_mut(op).expect("just inserted");
        entry.0.record(latency_ns);
        entry.1 += u64::from(error.is_some());
        entry.2 += bytes;
        self.samples.push(Sample {
            t_ns,
            op: op.to_string(),
            latency_ns,
            bytes,
            error,
        });
        self.samples.last().expect("just pushed")
    }

    /// Adds everything `other` recorded (a worker thread's own recorder), keeping the samples
    /// in order of their start time.
    pub fn merge(&mut self, other: Recorder) {
        for (op, (h, errors, bytes)) in other.histograms {
            let entry = self.histograms.entry(op).or_default();
            entry.0.merge(&h);
            entry.1 += errors;
            entry.2 += bytes;
        }
        // Both sides are in start order already (each recorder belongs to one thread, or is
        // itself a merge): one linear merge, not a sort.
        let mine = std::mem::take(&mut self.samples);
        let mut merged = Vec::with_capacity(mine.len() + other.samples.len());
        let (mut a, mut b) = (mine.into_iter().peekable(), other.samples.into_iter().peekable());
        loop {
            let take_a = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) => x.t_ns <= y.t_ns,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            merged.extend(if take_a { a.next() } else { b.next() });
        }
        self.samples = merged;
    }

    /// The statistics of one operation kind, if any call of it was recorded.
    pub fn op(&self, op: &str) -> Option<OpStats> {
        self.histograms.get(op).map(|(h, errors, bytes)| OpStats {
            count: h.count(),
            errors: *errors,
            bytes: *bytes,
            latency_ns: h.summary(),
        })
    }

    pub fn samples(&self) -> &[Sample] {
        &self.samples
    }

    pub fn errors(&self) -> u64 {
        self.histograms.values().map(|h| h.1).sum()
    }

    pub fn ops(&self) -> BTreeMap<String, OpStats> {
        self.histograms
            .iter()
            .map(|(op, (h, errors, bytes))| {
                (
                    op.clone(),
                    OpStats {
                        count: h.count(),
                        errors: *errors,
                        bytes: *bytes,
                        latency_ns: h.summary(),
                    },
                )
            })
            .collect()
    }

    pub fn into_parts(self) -> (BTreeMap<String, OpStats>, Vec<Sample>) {
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
        a.record("write", 10, 5, 4096, &Ok(()));
        b.record("write", 5, 7, 4096, &Ok(()));
        b.record("fsync", 12, 900, 0, &Err(io::Error::from_raw_os_error(libc::EIO)));
        a.merge(b);
        let w = a.op("write").unwrap();
        assert_eq!((w.count, w.bytes, w.latency_ns.max), (2, 8192, 7));
        assert_eq!(a.op("fsync").unwrap().errors, 1);
        assert_eq!(a.errors(), 1);
        let starts: Vec<u64> = a.samples().iter().map(|s| s.t_ns).collect();
        assert_eq!(starts, vec![5, 10, 12]);
    }
}
