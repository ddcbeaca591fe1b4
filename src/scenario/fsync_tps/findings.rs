//! The conclusions of an fsync-tps run, drawn from its rows: the average flush against the
//! seed's ~8 ms threshold, the best coordination at each thread count against `none`, and
//! what syncfs costs. Rows with failed calls are named and left out of every comparison.

use std::fmt;

use super::details::{Details, Row, SEED_THRESHOLD_NS};
use super::workers::CALIBRATION_COMMITS;
use super::Coordination;
use crate::measure::OpKind;
use crate::params::Choice;
use crate::units::{format_size, ms, Bytes};

impl Details {
    /// The run's conclusions, from its figures.
    pub(crate) fn findings(&self) -> Vec<Finding> {
        let mut out = vec![Finding::AverageFlush {
            avg_flush_ns: self.avg_flush_ns,
            sync: self.sync,
            record_size: self.record_size,
            placement: self.placement(),
        }];
        let failed: Vec<&Row> = self.rows.iter().filter(|r| !r.is_clean()).collect();
        if !failed.is_empty() {
            out.push(Finding::RowsFailed(
                failed.iter().map(|r| (r.coordination, r.threads, r.errors)).collect(),
            ));
        }
        let clean: Vec<&Row> = self.rows.iter().filter(|r| r.is_clean()).collect();
        let (mut compared, mut helped) = (0, 0);
        for &n in &self.thread_counts {
            let at: Vec<&Row> = clean.iter().copied().filter(|r| r.threads == n).collect();
            let Some(base) = at.iter().find(|r| r.coordination == Coordination::None) else {
                continue;
            };
            let Some(best) = at
                .iter()
                .filter(|r| r.coordination != Coordination::None)
                .max_by(|a, b| a.tps.total_cmp(&b.tps))
            else {
                continue;
            };
            compared += 1;
            let ratio = if base.tps > 0.0 { best.tps / base.tps } else { 0.0 };
            if ratio > 1.0 {
                helped += 1;
            }
            out.push(Finding::BestAt {
                threads: n,
                best: best.coordination,
                tps: best.tps,
                ratio,
                none_tps: base.tps,
                commits_per_sync: best.commits_per_sync(),
            });
        }
        if compared > 0 {
            out.push(Finding::Helped { helped, compared });
        }
        let mean_sync = |c: Coordination| {
            let at: Vec<&&Row> = clean.iter().filter(|r| r.coordination == c && r.syncs > 0).collect();
            let syncs: u64 = at.iter().map(|r| r.syncs).sum();
            let total: f64 = at.iter().map(|r| r.sync_mean_ns as f64 * r.syncs as f64).sum();
            (syncs > 0).then(|| total / syncs as f64)
        };
        if let (Some(syncfs_ns), Some(own_ns)) = (mean_sync(Coordination::Syncfs), mean_sync(Coordination::None)) {
            out.push(Finding::SyncfsCost {
                syncfs_ns,
                own_ns,
                sync: self.sync,
            });
        }
        out
    }
}

/// A conclusion of an fsync-tps run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Finding {
    /// The calibration's average flush, set against the seed's threshold.
    AverageFlush {
        avg_flush_ns: u64,
        sync: OpKind,
        record_size: u64,
        placement: &'static str,
    },
    /// Rows with failed calls, as (strategy, threads, failed calls): left out of comparisons.
    RowsFailed(Vec<(Coordination, u64, u64)>),
    /// The best coordination at one thread count against `none`.
    BestAt {
        threads: u64,
        best: Coordination,
        tps: f64,
        ratio: f64,
        none_tps: f64,
        commits_per_sync: f64,
    },
    Helped {
        helped: usize,
        compared: usize,
    },
    /// syncfs writes back the whole filesystem.
    SyncfsCost {
        syncfs_ns: f64,
        own_ns: f64,
        sync: OpKind,
    },
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::AverageFlush {
                avg_flush_ns,
                sync,
                record_size,
                placement,
            } => write!(
                f,
                "average flush: {:.3} ms ({sync} of a {} {placement}, {CALIBRATION_COMMITS} calls before the sweep) — {} the ~8 ms above which the seed found coordination pays",
                ms(*avg_flush_ns),
                format_size(Bytes(*record_size)),
                if *avg_flush_ns >= SEED_THRESHOLD_NS { "at or above" } else { "below" }
            ),
            Finding::RowsFailed(rows) => {
                let list: Vec<String> = rows
                    .iter()
                    .map(|(c, n, e)| format!("{} x{n} ({e} failed)", c.name()))
                    .collect();
                write!(f, "rows with failed calls, left out of every comparison: {}", list.join(", "))
            }
            Finding::BestAt {
                threads,
                best,
                tps,
                ratio,
                none_tps,
                commits_per_sync,
            } => write!(
                f,
                "{threads} threads: best coordination {} {tps:.2} tps = {ratio:.2}x none ({none_tps:.2} tps), {commits_per_sync:.1} commits per sync",
                best.name()
            ),
            Finding::Helped { helped, compared } => {
                write!(f, "coordination beat none at {helped} of {compared} thread counts")
            }
            Finding::SyncfsCost { syncfs_ns, own_ns, sync } => write!(
                f,
                "syncfs took {:.3} ms on average against {:.3} ms for {sync}: it writes back every dirty file of the filesystem, not only the workers'",
                syncfs_ns / 1e6,
                own_ns / 1e6
            ),
        }
    }
}
