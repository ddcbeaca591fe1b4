//! What an rndwr run found: sysbench's own figures, and the sync calls' latency that
//! sysbench counts as 'Other' without showing.

use serde::{Deserialize, Serialize};

use super::sysbench::{self, Summary};
use crate::measure::{OpKind, OpStats};
use crate::scenario::Views;
use crate::scenario::{Measured, Table};
use crate::units::{format_latency_ns, ms};

/// What the run recorded: the file set, sysbench's summary, and the sync calls' own figures
/// (sysbench counts them as 'Other' and shows no latency for them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Details {
    pub(crate) files: u64,
    pub(crate) file_size: u64,
    pub(crate) sync: OpKind,
    pub(crate) syncs: OpStats,
    pub(crate) summary: Summary,
}

impl Views for Details {
    fn tables(&self) -> Vec<Table> {
        let title = "sysbench fileio rndwr figures (requests are writes; syncs are 'Other')".to_string();
        vec![Table::of(title, std::slice::from_ref(&self.summary))]
    }

    fn findings(&self) -> Vec<String> {
        let (o, op) = (&self.syncs, self.sync);
        if o.count == 0 {
            return Vec::new();
        }
        let l = o.latency_ns;
        vec![
            format!(
                "{op} calls (sysbench's 'Other', whose latency it does not show): {} calls, p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, max {:.3} ms, mean {:.3} ms",
                o.count,
                ms(l.p50),
                ms(l.p90),
                ms(l.p99),
                ms(l.max),
                ms(l.mean)
            ),
            format!(
                "time in {op}: {:.2} s against {:.2} s in writes (summed over threads)",
                o.count as f64 * l.mean as f64 / 1e9,
                self.summary.events_sum_s
            ),
        ]
    }

    /// What sysbench reported (requests/s, MiB/s) and what it cannot show, the sync calls'
    /// own p99 and worst latency.
    fn headline(&self, _: &Measured<'_>) -> String {
        let s = &self.summary;
        let mut line = format!("{:.0} requests/s ({:.1} MiB/s)", s.requests_per_s, s.mib_per_s);
        if self.syncs.count > 0 {
            line.push_str(&format!(
                "; {} p99 {}, worst {}",
                self.sync,
                format_latency_ns(self.syncs.latency_ns.p99),
                format_latency_ns(self.syncs.latency_ns.max)
            ));
        }
        line
    }

    fn seed_lines(&self, _: &Measured<'_>) -> Vec<String> {
        let mut lines: Vec<String> = sysbench::prepare_lines(self.files, self.file_size).to_vec();
        lines.push(sysbench::TEST_LINE.to_string());
        lines.extend(sysbench::seed_lines(&self.summary));
        lines
    }
}
