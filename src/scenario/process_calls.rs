//! The sync calls of one kind made by one process (or the processes of one name), as the
//! results of programs fsynclab did not write report them: `exec --explain`'s traced command
//! ([`super::traced_command`]) and `watch` ([`super::watched`]). A table row each, and the
//! finding that names the slowest call.

use serde::{Deserialize, Serialize};

use super::table::{Cell, Row};
use crate::measure::{OpKind, OpStats};
use crate::units::{format_latency_ns, rounded, us};

/// The calls of one kind made by one process (a watch: `postgres 812`) or by the processes
/// and threads of one name (a traced command: `postgres`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ProcessCalls {
    pub(crate) process: String,
    pub(crate) op: OpKind,
    /// Failed calls are counted among the calls and in `errors`.
    pub(crate) stats: OpStats,
}

impl Row for ProcessCalls {
    const COLUMNS: &'static [&'static str] = &[
        "process", "op", "calls", "errors", "p50 us", "p90 us", "p99 us", "max us",
    ];

    fn cells(&self) -> Vec<Cell> {
        let l = &self.stats.latency_ns;
        let us2 = |ns: u64| Cell::from(rounded(us(ns), 1));
        vec![
            self.process.as_str().into(),
            self.op.name().into(),
            self.stats.count.into(),
            self.stats.errors.into(),
            us2(l.p50),
            us2(l.p90),
            us2(l.p99),
            us2(l.max),
        ]
    }
}

/// `slowest: a fsync of postgres took 31.8ms (p99 of its 812 calls 12.1ms)`: the finding
/// that names the slowest call of `rows`; none without rows.
pub(crate) fn slowest(rows: &[ProcessCalls]) -> Option<String> {
    let worst = rows.iter().max_by_key(|p| p.stats.latency_ns.max)?;
    Some(format!(
        "slowest: a {} of {} took {} (p99 of its {} calls {})",
        worst.op,
        worst.process,
        format_latency_ns(worst.stats.latency_ns.max),
        worst.stats.count,
        format_latency_ns(worst.stats.latency_ns.p99)
    ))
}
