//! What `fsynclab watch` saw, typed: not a scenario of ours but the sync calls of running
//! processes, followed in the kernel by the BPF tracer. A result of scenario `watch` holds
//! whom it watched and its thresholds among its params, every call's latency percentiles per
//! process and kind (from the kernel's histograms, within 6.25%) in these details and in its
//! ops, no per-call sample (a watch may last for days), and the slowest calls with their
//! parts in its explanation.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::process_calls::{self, ProcessCalls};
use super::{Measured, Table, Views};
use crate::units::format_duration;

/// The scenario name results of `fsynclab watch` carry.
pub(crate) const SCENARIO: &str = "watch";

/// A watch's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Details {
    /// Whom it watched: `process 812`, `every task named etcd`, `the tasks of cgroup
    /// /sys/fs/cgroup/db`, `every process`.
    pub(crate) watched: String,
    /// Calls at least this slow were printed and are the ones explained.
    pub(crate) threshold_ns: u64,
    /// How many calls were that slow.
    pub(crate) slow_calls: u64,
    /// Each kind of sync call of each process, by process then kind; the processes that
    /// ended during the watch one row per name and kind (`dd (93 exited)`).
    pub(crate) by_process: Vec<ProcessCalls>,
    /// How many processes each row of ended processes folds, by its label.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) exited: BTreeMap<String, u32>,
}

impl Views for Details {
    fn tables(&self) -> Vec<Table> {
        vec![Table::of(
            "sync calls by process (from the kernel's histograms, within 6.25%)".into(),
            &self.by_process,
        )]
    }

    fn findings(&self) -> Vec<String> {
        let calls: u64 = self.by_process.iter().map(|p| p.stats.count).sum();
        let mut rows: Vec<&str> = self.by_process.iter().map(|p| p.process.as_str()).collect();
        rows.dedup();
        let processes: u64 = rows
            .iter()
            .map(|row| self.exited.get(*row).map_or(1, |n| u64::from(*n)))
            .sum();
        let mut out = vec![format!(
            "watched {}: {calls} sync calls by {} process{}, {} of them over {}",
            self.watched,
            processes,
            if processes == 1 { "" } else { "es" },
            self.slow_calls,
            format_duration(std::time::Duration::from_nanos(self.threshold_ns))
        )];
        out.extend(process_calls::slowest(&self.by_process));
        out
    }

    fn headline(&self, run: &Measured<'_>) -> String {
        format!("{} (watched {})", super::default_headline(run), self.watched)
    }

    /// A watch has no seed to print like.
    fn seed_lines(&self, _: &Measured<'_>) -> Vec<String> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{LatencySummary, OpKind, OpStats};

    #[test]
    /// Issue 25.
    fn a_watch_reads_as_its_calls_by_process() {
        let row = |process: &str, count: u64, max: u64| ProcessCalls {
            process: process.into(),
            op: OpKind::Fdatasync,
            stats: OpStats {
                count,
                errors: 0,
                bytes: 0,
                latency_ns: LatencySummary {
                    p99: max / 2,
                    max,
                    ..LatencySummary::default()
                },
            },
        };
        let d = Details {
            watched: "process 812".into(),
            threshold_ns: 10_000_000,
            slow_calls: 3,
            by_process: vec![row("postgres 812", 100, 30_000_000), row("postgres 813", 5, 1_000_000)],
            exited: BTreeMap::new(),
        };
        let findings = d.findings();
        assert_eq!(
            findings[0],
            "watched process 812: 105 sync calls by 2 processes, 3 of them over 10ms"
        );
        assert!(
            findings[1].contains("a fdatasync of postgres 812 took 30.000ms"),
            "{findings:?}"
        );
        assert_eq!(d.tables()[0].rows.len(), 2);
    }

    #[test]
    /// A row of processes that ended counts each of them.
    fn processes_that_ended_count_each_in_the_finding() {
        let calls = |count: u64| OpStats {
            count,
            errors: 0,
            bytes: 0,
            latency_ns: LatencySummary::default(),
        };
        let row = |process: &str, op: OpKind, count: u64| ProcessCalls {
            process: process.into(),
            op,
            stats: calls(count),
        };
        let d = Details {
            watched: "every task named dd".into(),
            threshold_ns: 10_000_000,
            slow_calls: 0,
            by_process: vec![
                row("dd 900", OpKind::Fsync, 1),
                row("dd (93 exited)", OpKind::Fsync, 93),
                row("dd (93 exited)", OpKind::Fdatasync, 4),
            ],
            exited: BTreeMap::from([("dd (93 exited)".to_string(), 93)]),
        };
        assert_eq!(
            d.findings()[0],
            "watched every task named dd: 98 sync calls by 94 processes, 0 of them over 10ms"
        );
    }
}
