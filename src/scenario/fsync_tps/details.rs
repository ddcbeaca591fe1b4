//! What an fsync-tps run found, typed: one [`Row`] per strategy and thread count, the
//! average flush time, and the [`Finding`]s that answer the seed's question — was the flush
//! slow enough for coordination to pay, and did it? Rows with failed calls are marked and
//! left out of every comparison (issue 8: a row cut short by ENOSPC once claimed 273,488 tps).

use serde::{Deserialize, Serialize};

use super::{Config, Coordination};
use crate::measure::{OpKind, Recorder};
use crate::params::Choice;
use crate::role::group_commit::Delay;
use crate::scenario::table::Cell;
use crate::scenario::{default_headline, Views};
use crate::scenario::{Measured, Table};
use crate::units::{format_size, ms, us, Bytes};

/// The flush time above which Wong found coordination to pay (the post's "about 8ms").
pub(crate) const SEED_THRESHOLD_NS: u64 = 8_000_000;

/// One row of the results: a strategy at one thread count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Row {
    pub(crate) coordination: Coordination,
    pub(crate) threads: u64,
    pub(crate) tps: f64,
    pub(crate) commits: u64,
    pub(crate) syncs: u64,
    pub(crate) commit_p50_ns: u64,
    pub(crate) commit_p99_ns: u64,
    pub(crate) commit_max_ns: u64,
    pub(crate) sync_mean_ns: u64,
    pub(crate) errors: u64,
}

impl Row {
    /// The row of one step from what its workers recorded in `elapsed_ns`.
    pub(crate) fn of(
        coordination: Coordination,
        threads: u64,
        elapsed_ns: u64,
        rec: &Recorder,
        sync_op: OpKind,
    ) -> Row {
        let commit = rec.op(OpKind::Commit).unwrap_or_default();
        let sync = rec.op(sync_op).unwrap_or_default();
        let commits = commit.count - commit.errors;
        Row {
            coordination,
            threads,
            tps: crate::measure::stats::per_second(commits as f64, elapsed_ns),
            commits,
            syncs: sync.count,
            commit_p50_ns: commit.latency_ns.p50,
            commit_p99_ns: commit.latency_ns.p99,
            commit_max_ns: commit.latency_ns.max,
            sync_mean_ns: sync.latency_ns.mean,
            errors: rec.errors(),
        }
    }

    pub(super) fn commits_per_sync(&self) -> f64 {
        if self.syncs > 0 {
            self.commits as f64 / self.syncs as f64
        } else {
            0.0
        }
    }

    /// Only rows without failed calls are compared.
    pub(super) fn is_clean(&self) -> bool {
        self.errors == 0
    }
}

impl crate::scenario::table::Row for Row {
    const COLUMNS: &'static [&'static str] = &[
        "coordination",
        "threads",
        "tps",
        "commits",
        "syncs",
        "commits/sync",
        "commit p50 us",
        "commit p99 us",
        "commit max us",
        "sync mean us",
        "errors",
    ];

    fn cells(&self) -> Vec<Cell> {
        vec![
            self.coordination.name().into(),
            self.threads.into(),
            self.tps.into(),
            self.commits.into(),
            self.syncs.into(),
            self.commits_per_sync().into(),
            us(self.commit_p50_ns).into(),
            us(self.commit_p99_ns).into(),
            us(self.commit_max_ns).into(),
            us(self.sync_mean_ns).into(),
            self.errors.into(),
        ]
    }
}

/// `none threads 4: 145.84 tps` — one cell of the seed's spreadsheet.
pub(crate) fn seed_line(row: &Row) -> String {
    format!(
        "{} threads {}: {:.2} tps",
        row.coordination.name(),
        row.threads,
        row.tps
    )
}

/// `average fdatasync time: 0.113 ms`, printed after the calibration.
pub(crate) fn calibration_line(sync: crate::sync::SyncMethod, avg_flush_ns: u64) -> String {
    format!("average {} time: {:.3} ms", sync.name(), ms(avg_flush_ns))
}

/// What the run recorded: its settings as the table and findings name them, the average
/// flush, and the rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Details {
    /// The durable call of `none` and `wal`: fsync or fdatasync.
    pub(crate) sync: OpKind,
    pub(crate) record_size: u64,
    pub(crate) append: bool,
    pub(crate) step_s: f64,
    /// The leader's wait in µs; None for avg-flush.
    pub(crate) delay_us: Option<u64>,
    pub(crate) thread_counts: Vec<u64>,
    pub(crate) avg_flush_ns: u64,
    pub(crate) rows: Vec<Row>,
}

impl Details {
    pub(crate) fn new(cfg: &Config, avg_flush_ns: u64, rows: Vec<Row>) -> Details {
        Details {
            sync: cfg.sync.sync_op().unwrap_or(OpKind::Fdatasync),
            record_size: cfg.record_size,
            append: cfg.append,
            step_s: cfg.duration.as_secs_f64(),
            delay_us: match cfg.delay {
                Delay::AvgFlush => None,
                Delay::Fixed(d) => Some(d.as_micros() as u64),
            },
            thread_counts: cfg.threads.clone(),
            avg_flush_ns,
            rows,
        }
    }

    pub(super) fn placement(&self) -> &'static str {
        if self.append {
            "append"
        } else {
            "overwrite"
        }
    }
}

impl Views for Details {
    fn tables(&self) -> Vec<Table> {
        let delay = match self.delay_us {
            None => "avg-flush".to_string(),
            Some(us) => format!("{us} us"),
        };
        let title = format!(
            "transactions: {} {} + durable, {} s per row, delay {delay}",
            format_size(Bytes(self.record_size)),
            self.placement(),
            self.step_s
        );
        vec![Table::of(title, &self.rows)]
    }

    fn findings(&self) -> Vec<String> {
        Details::findings(self).iter().map(ToString::to_string).collect()
    }

    /// `commit.tps`: the best transactions/s of the sweep's clean rows, the seed's figure
    /// (the run's `commit.ops/s` would also count the file setup and the calibration).
    fn figures(&self) -> std::collections::BTreeMap<String, f64> {
        let best = self
            .rows
            .iter()
            .filter(|r| r.is_clean())
            .map(|r| r.tps)
            .reduce(f64::max);
        best.map(|tps| ("commit.tps".to_string(), tps)).into_iter().collect()
    }

    /// The best transactions/s of the sweep with its strategy and thread count, the
    /// single-thread `none` rate it compares with, and the average flush time.
    fn headline(&self, r: &Measured<'_>) -> String {
        let clean = self.rows.iter().filter(|r| r.is_clean());
        let Some(best) = clean.clone().max_by(|a, b| a.tps.total_cmp(&b.tps)) else {
            return default_headline(r);
        };
        let mut line = format!(
            "best {:.0} tps ({}, {} threads)",
            best.tps,
            best.coordination.name(),
            best.threads
        );
        if let Some(base) = clean
            .clone()
            .find(|r| r.coordination == Coordination::None && r.threads == 1)
        {
            line.push_str(&format!(", none x1 {:.0} tps", base.tps));
        }
        line.push_str(&format!("; avg flush {:.3} ms", ms(self.avg_flush_ns)));
        line
    }

    fn seed_lines(&self, _: &Measured<'_>) -> Vec<String> {
        let sync = match self.sync {
            OpKind::Fsync => crate::sync::SyncMethod::Fsync,
            _ => crate::sync::SyncMethod::Fdatasync,
        };
        std::iter::once(calibration_line(sync, self.avg_flush_ns))
            .chain(self.rows.iter().map(seed_line))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(c: Coordination, threads: u64, tps: f64, commits: u64, syncs: u64) -> Row {
        Row {
            coordination: c,
            threads,
            tps,
            commits,
            syncs,
            commit_p50_ns: 0,
            commit_p99_ns: 0,
            commit_max_ns: 0,
            sync_mean_ns: 0,
            errors: 0,
        }
    }

    fn details(rows: Vec<Row>) -> Details {
        Details {
            sync: OpKind::Fdatasync,
            record_size: 4096,
            append: false,
            step_s: 2.0,
            delay_us: Some(0),
            thread_counts: vec![4],
            avg_flush_ns: 9_000_000,
            rows,
        }
    }

    #[test]
    fn findings_compare_against_none_and_the_seed_threshold() {
        let d = details(vec![
            row(Coordination::None, 4, 100.0, 200, 200),
            row(Coordination::Wal, 4, 250.0, 500, 125),
        ]);
        let f: Vec<String> = Views::findings(&d);
        assert!(f[0].contains("9.000 ms") && f[0].contains("at or above"), "{}", f[0]);
        assert!(f[1].contains("wal 250.00 tps = 2.50x none"), "{}", f[1]);
        assert_eq!(f[2], "coordination beat none at 1 of 1 thread counts");
    }

    /// Issue 8, item 7: a row cut short by ENOSPC must not make a finding.
    #[test]
    /// Issue 8.
    fn failed_rows_are_marked_and_not_compared() {
        let mut failed = row(Coordination::None, 4, 273_488.0, 3, 3);
        failed.errors = 1;
        let d = details(vec![failed, row(Coordination::Wal, 4, 250.0, 500, 125)]);
        let f: Vec<String> = Views::findings(&d);
        assert_eq!(
            f[1],
            "rows with failed calls, left out of every comparison: none x4 (1 failed)"
        );
        assert_eq!(f.len(), 2, "{f:?}");
        let (ops, environment) = (std::collections::BTreeMap::new(), Default::default());
        let r = Measured {
            environment: &environment,
            ops: &ops,
            samples: &[],
            background: None,
        };
        assert!(
            d.headline(&r).starts_with("best 250 tps (wal, 4 threads)"),
            "{}",
            d.headline(&r)
        );
    }
}
