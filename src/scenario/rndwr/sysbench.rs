//! sysbench 0.4's fileio rndwr, rebuilt: its request generator (random block-aligned writes
//! over the whole file set, a sync sweep over every file after `fsync_freq` writes, shared
//! by all workers) and its summary, computed from the run and printed in its layout.

use serde::{Deserialize, Serialize};

use super::Config;
use crate::measure::stats::{nearest_rank, per_second, population_stddev};
use crate::measure::{OpKind, Recorder};
use crate::rng::SplitMix64;
use crate::scenario::table::Cell;
use crate::units::{secs, Bytes};

/// One request, as sysbench's generator hands them out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Request {
    Write { file: u64, offset: u64 },
    Sync { file: u64 },
    Done,
}

/// sysbench's random request generator: a write at a random block of the whole file set,
/// except that once `fsync_freq` writes have been issued since the last sweep, the next
/// `files` requests are one sync per file. Shared by all workers behind a mutex, as in
/// sysbench, so a sweep is global, not per thread.
#[derive(Debug)]
pub(crate) struct Generator {
    rng: SplitMix64,
    files: u64,
    blocks_per_file: u64,
    block_size: u64,
    fsync_freq: u64,
    max_requests: u64,
    /// Writes handed out.
    pub(crate) writes: u64,
    /// Writes since the last sweep finished.
    dirty: bool,
    next_sync: u64,
}

impl Generator {
    pub(crate) fn new(cfg: &Config) -> Generator {
        Generator {
            rng: SplitMix64::new(cfg.seed),
            files: cfg.files,
            blocks_per_file: cfg.blocks_per_file(),
            block_size: cfg.block_size,
            fsync_freq: cfg.fsync_freq,
            max_requests: cfg.max_requests,
            writes: 0,
            dirty: false,
            next_sync: 0,
        }
    }

    pub(crate) fn next_request(&mut self) -> Request {
        if self.fsync_freq != 0 && self.dirty && self.writes % self.fsync_freq == 0 {
            let file = self.next_sync;
            self.next_sync += 1;
            if self.next_sync == self.files {
                self.next_sync = 0;
                self.dirty = false;
            }
            return Request::Sync { file };
        }
        if self.max_requests != 0 && self.writes >= self.max_requests {
            return Request::Done;
        }
        let block = self.rng.next_u64() % (self.files * self.blocks_per_file);
        self.writes += 1;
        self.dirty = true;
        Request::Write {
            file: block / self.blocks_per_file,
            offset: block % self.blocks_per_file * self.block_size,
        }
    }
}

/// sysbench 0.4's figures, computed from the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Summary {
    pub(crate) writes: u64,
    pub(crate) other: u64,
    pub(crate) total_s: f64,
    pub(crate) written_bytes: u64,
    pub(crate) requests_per_s: f64,
    pub(crate) mib_per_s: f64,
    pub(crate) min_s: f64,
    pub(crate) avg_s: f64,
    pub(crate) max_s: f64,
    pub(crate) p95_s: f64,
    pub(crate) events_sum_s: f64,
    pub(crate) fairness_avg: f64,
    pub(crate) fairness_stddev: f64,
}

impl Summary {
    /// The figures of a run: `total_ns` from the first request to the last sync, and the
    /// writes each worker completed.
    pub(crate) fn of(rec: &Recorder, sync_op: OpKind, total_ns: u64, per_thread_writes: &[u64]) -> Summary {
        let mut write_ns: Vec<u64> = rec
            .samples()
            .iter()
            .filter(|s| s.op == OpKind::Write && s.error.is_none())
            .map(|s| s.latency_ns)
            .collect();
        let writes = write_ns.len() as u64;
        let write_stats = rec.op(OpKind::Write).unwrap_or_default();
        let sum_ns: u64 = write_ns.iter().sum();
        let per_thread: Vec<f64> = per_thread_writes.iter().map(|&w| w as f64).collect();
        Summary {
            writes,
            other: rec.op(sync_op).map(|o| o.count).unwrap_or(0),
            total_s: secs(total_ns),
            written_bytes: write_stats.bytes,
            requests_per_s: per_second(writes as f64, total_ns),
            mib_per_s: per_second(write_stats.bytes as f64 / Bytes::MIB as f64, total_ns),
            min_s: secs(write_stats.latency_ns.min),
            avg_s: if writes > 0 { secs(sum_ns) / writes as f64 } else { 0.0 },
            max_s: secs(write_stats.latency_ns.max),
            p95_s: secs(nearest_rank(&mut write_ns, 0.95)),
            events_sum_s: secs(sum_ns),
            fairness_avg: crate::measure::stats::mean(&per_thread),
            fairness_stddev: population_stddev(&per_thread),
        }
    }
}

impl crate::scenario::table::Row for Summary {
    const COLUMNS: &'static [&'static str] = &[
        "requests/s",
        "MiB/s",
        "writes",
        "other (syncs)",
        "total s",
        "req min us",
        "req avg us",
        "req max us",
        "req p95 us",
    ];

    fn cells(&self) -> Vec<Cell> {
        vec![
            self.requests_per_s.into(),
            self.mib_per_s.into(),
            self.writes.into(),
            self.other.into(),
            self.total_s.into(),
            (self.min_s * 1e6).into(),
            (self.avg_s * 1e6).into(),
            (self.max_s * 1e6).into(),
            (self.p95_s * 1e6).into(),
        ]
    }
}

/// sysbench's lines before the files are written: `128 files, 2048Kb each, 256Mb total`.
pub(crate) fn prepare_lines(files: u64, file_size: u64) -> [String; 2] {
    [
        format!(
            "{files} files, {}Kb each, {}Mb total",
            file_size / 1024,
            files * file_size / Bytes::MIB
        ),
        "Creating files for the test...".to_string(),
    ]
}

pub(crate) const TEST_LINE: &str = "Doing random write test";

/// A size in sysbench 0.4's style: `782.5Mb`, `0b`, `16Kb`.
pub(crate) fn sysbench_size(bytes: u64) -> String {
    let (value, unit) = match bytes {
        b if b >= Bytes::GIB => (b as f64 / Bytes::GIB as f64, "Gb"),
        b if b >= Bytes::MIB => (b as f64 / Bytes::MIB as f64, "Mb"),
        b if b >= Bytes::KIB => (b as f64 / Bytes::KIB as f64, "Kb"),
        b => (b as f64, "b"),
    };
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{unit}")
}

/// The seed's output lines, in sysbench 0.4's layout.
pub(crate) fn seed_lines(s: &Summary) -> Vec<String> {
    let rate = if s.total_s > 0.0 {
        sysbench_size((s.written_bytes as f64 / s.total_s) as u64)
    } else {
        "0b".into()
    };
    vec![
        format!(
            "Operations performed:  0 Read, {} Write, {} Other = {} Total",
            s.writes,
            s.other,
            s.writes + s.other
        ),
        format!(
            "Read 0b  Written {w}  Total transferred {w}  ({rate}/sec)",
            w = sysbench_size(s.written_bytes)
        ),
        format!("{:>9.2} Requests/sec executed", s.requests_per_s),
        String::new(),
        "Test execution summary:".into(),
        format!("    total time:                          {:.4}s", s.total_s),
        format!("    total number of events:              {}", s.writes),
        format!("    total time taken by event execution: {:.4}", s.events_sum_s),
        "    per-request statistics:".into(),
        format!("         min:                            {:.4}s", s.min_s),
        format!("         avg:                            {:.4}s", s.avg_s),
        format!("         max:                            {:.4}s", s.max_s),
        format!("         approx.  95 percentile:         {:.4}s", s.p95_s),
        String::new(),
        "Threads fairness:".into(),
        format!(
            "    events (avg/stddev):           {:.4}/{:.2}",
            s.fairness_avg, s.fairness_stddev
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Params;

    fn config(sets: &[&str]) -> Config {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let p = Params::resolve("rndwr", &super::super::RNDWR.params(), &sets).unwrap();
        Config::from_params(&p).unwrap()
    }

    #[test]
    fn generator_sweeps_every_file_after_fsync_freq_writes() {
        let cfg = config(&["files=4", "total_size=1M", "fsync_freq=10", "max_requests=25"]);
        let mut g = Generator::new(&cfg);
        let mut seq = Vec::new();
        loop {
            match g.next_request() {
                Request::Done => break,
                r => seq.push(r),
            }
        }
        // 10 writes, 4 syncs, 10 writes, 4 syncs, 5 writes, then Done.
        let kinds: String = seq
            .iter()
            .map(|r| if matches!(r, Request::Write { .. }) { 'w' } else { 's' })
            .collect();
        assert_eq!(
            kinds,
            format!("{}ssss{}ssss{}", "w".repeat(10), "w".repeat(10), "w".repeat(5))
        );
        let syncs: Vec<u64> = seq
            .iter()
            .filter_map(|r| match r {
                Request::Sync { file } => Some(*file),
                _ => None,
            })
            .collect();
        assert_eq!(syncs, vec![0, 1, 2, 3, 0, 1, 2, 3]);
        for r in &seq {
            if let Request::Write { file, offset } = r {
                assert!(*file < 4);
                assert_eq!(offset % 16384, 0);
                assert!(offset + 16384 <= cfg.file_size);
            }
        }
    }

    #[test]
    fn sizes_print_like_sysbench_0_4() {
        assert_eq!(sysbench_size(820_510_720), "782.5Mb");
        assert_eq!(sysbench_size(0), "0b");
        assert_eq!(sysbench_size(12_704_547), "12.116Mb");
    }

    #[test]
    fn seed_lines_have_the_sysbench_shape() {
        let s = Summary {
            writes: 50080,
            other: 59600,
            total_s: 64.5814,
            written_bytes: 50080 * 16384,
            requests_per_s: 775.45,
            mib_per_s: 12.116,
            min_s: 0.0,
            avg_s: 0.0742,
            max_s: 0.9375,
            p95_s: 0.2901,
            events_sum_s: 3700.0,
            fairness_avg: 391.25,
            fairness_stddev: 23.26,
        };
        let lines = seed_lines(&s);
        assert_eq!(
            lines[0],
            "Operations performed:  0 Read, 50080 Write, 59600 Other = 109680 Total"
        );
        assert!(lines[1].starts_with("Read 0b  Written 782.5Mb  Total transferred 782.5Mb  ("));
        assert_eq!(lines[2], "   775.45 Requests/sec executed");
        assert!(lines
            .iter()
            .any(|l| l.ends_with("approx.  95 percentile:         0.2901s")));
    }
}
