//! What a `powercut` run found, cut by cut, and how it reads: a table of the cycles, the
//! losses beside the sync latency that bought them, and the figures `compare` and the
//! matrix see (`acked.lost`, `acked.torn`, `acked.rate`).

use serde::{Deserialize, Serialize};

use super::pattern::{Pattern, Workload};
use super::verdict::Verdict;
use crate::environment::PowerCut;
use crate::params::Choice;
use crate::scenario::table::Cell;
use crate::scenario::{default_headline, Measured, Table, Views};
use crate::testbed::device::Keep;
use crate::testbed::power::{Check, Recovery};
use crate::units::format_latency_ns;

/// The run: the workload, and each cycle.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Details {
    pub(crate) pattern: Pattern,
    pub(crate) sync: String,
    pub(crate) dir_sync: bool,
    pub(crate) record_size: u64,
    pub(crate) keep: String,
    pub(crate) cycles: Vec<Cycle>,
    /// Every cycle's verdict added up.
    pub(crate) total: Verdict,
}

/// One cut: when, what the drive lost, how the filesystem came back, what survived.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Cycle {
    /// When the cut was planned, s after the writes began.
    pub(crate) moment_s: f64,
    /// When the cut was made, s after the writes began: the planned moment, or earlier when
    /// a signal ended the cycle (issue 24). Absent in results made before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) made_s: Option<f64>,
    /// The call that failed when the power went (`fsync EIO`), if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ended: Option<String>,
    /// What the drive did at the cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cut: Option<PowerCut>,
    /// Records the pattern started.
    pub(crate) issued: u64,
    /// Making this cycle's filesystem (a cycle after the first makes its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) fresh_ms: Option<f64>,
    pub(crate) recovery: Recovery,
    pub(crate) check: Check,
    pub(crate) verdict: Verdict,
}

impl Cycle {
    /// When the cut was made, s after the writes began (the plan, for a result that did
    /// not record it).
    pub(crate) fn at_s(&self) -> f64 {
        self.made_s.unwrap_or(self.moment_s)
    }
}

impl Details {
    pub(crate) fn new(w: Workload, keep: Keep, cycles: Vec<Cycle>) -> Details {
        let mut total = Verdict::default();
        for c in &cycles {
            total.add(&c.verdict);
        }
        Details {
            pattern: w.pattern,
            sync: w.sync.name().to_string(),
            dir_sync: w.dir_sync,
            record_size: w.record_size as u64,
            keep: keep.name().to_string(),
            cycles,
            total,
        }
    }

    /// Cuts after which an acknowledged record was lost or torn.
    fn cuts_with_losses(&self) -> usize {
        self.cycles.iter().filter(|c| c.verdict.lost_acknowledged()).count()
    }

    /// `append/fsync`, `rename/none, no directory fsync`.
    fn workload(&self) -> String {
        let dir = match self.pattern {
            Pattern::Rename | Pattern::Create if !self.dir_sync => ", no directory fsync",
            _ => "",
        };
        format!("{}/{}{dir}", self.pattern.name(), self.sync)
    }
}

/// A table row per cut.
struct CycleRow<'a>(usize, &'a Cycle);

impl crate::scenario::table::Row for CycleRow<'_> {
    const COLUMNS: &'static [&'static str] = &[
        "cut",
        "at s",
        "acked",
        "intact",
        "lost",
        "torn",
        "unacked kept",
        "unacked lost",
        "drive lost writes",
        "mounted",
        "replay ms",
        "checker",
    ];

    fn cells(&self) -> Vec<Cell> {
        let CycleRow(i, c) = self;
        let v = &c.verdict;
        vec![
            Cell::from((*i + 1) as u64),
            Cell::from((c.at_s() * 1000.0).round() / 1000.0),
            Cell::from(v.acked),
            Cell::from(v.acked_intact),
            Cell::from(v.acked_lost),
            Cell::from(v.acked_torn),
            Cell::from(v.unacked_kept),
            Cell::from(v.unacked_lost),
            Cell::from(c.cut.as_ref().map_or(0, |k| k.lost_writes + k.torn_writes)),
            Cell::from(if c.recovery.mounted { "yes" } else { "no" }),
            Cell::from((c.recovery.replay_ms * 10.0).round() / 10.0),
            Cell::from(if c.check.clean {
                "clean".to_string()
            } else {
                format!("exit {}", c.check.exit_status)
            }),
        ]
    }
}

impl Views for Details {
    fn tables(&self) -> Vec<Table> {
        let rows: Vec<CycleRow<'_>> = self.cycles.iter().enumerate().map(|(i, c)| CycleRow(i, c)).collect();
        let mut tables = vec![Table::of(
            format!("{}: each power cut (keep={})", self.workload(), self.keep),
            &rows,
        )];
        if let Some(files) = &self.total.files {
            let counts = files.counts();
            tables.push(Table {
                title: format!("{}: what each file held after the cuts", self.workload()),
                columns: counts.iter().map(|(state, _)| state.to_string()).collect(),
                rows: vec![counts.iter().map(|&(_, n)| Cell::from(n)).collect()],
            });
        }
        tables
    }

    fn findings(&self) -> Vec<String> {
        let t = &self.total;
        let cuts = self.cycles.len();
        let mut out = Vec::new();
        if t.lost_acknowledged() {
            let mut ages: Vec<u64> = t.lost_ack_ages_ns.clone();
            ages.sort_unstable();
            out.push(format!(
                "{}: {} of {} acknowledged records lost and {} torn after {} of {cuts} cuts; the oldest was acknowledged {} before its cut",
                self.workload(),
                t.acked_lost,
                t.acked,
                t.acked_torn,
                self.cuts_with_losses(),
                format_latency_ns(ages.last().copied().unwrap_or(0))
            ));
        } else {
            out.push(format!(
                "{}: 0 of {} acknowledged records lost in {cuts} cuts ({} unacknowledged records lost, as may be)",
                self.workload(),
                t.acked,
                t.unacked_lost
            ));
        }
        let unmounted = self.cycles.iter().filter(|c| !c.recovery.mounted).count();
        if unmounted > 0 {
            out.push(format!("the filesystem did not mount after {unmounted} of {cuts} cuts"));
        }
        let unclean = self.cycles.iter().filter(|c| !c.check.clean).count();
        if unclean > 0 {
            let first = self
                .cycles
                .iter()
                .find(|c| !c.check.clean)
                .map(|c| c.check.command.clone());
            out.push(format!(
                "the filesystem's checker found problems after {unclean} of {cuts} cuts ({})",
                first.unwrap_or_default()
            ));
        }
        out
    }

    fn figures(&self) -> std::collections::BTreeMap<String, f64> {
        let t = &self.total;
        let mut f = std::collections::BTreeMap::new();
        f.insert("acked.lost".into(), t.acked_lost as f64);
        f.insert("acked.torn".into(), t.acked_torn as f64);
        f.insert(
            "acked.rate".into(),
            if t.acked == 0 {
                0.0
            } else {
                (t.acked_lost + t.acked_torn) as f64 / t.acked as f64
            },
        );
        f
    }

    fn headline(&self, run: &Measured<'_>) -> String {
        let t = &self.total;
        format!(
            "{}: {} of {} acknowledged records lost in {} cuts; {}",
            self.workload(),
            t.acked_lost + t.acked_torn,
            t.acked,
            self.cycles.len(),
            default_headline(run)
        )
    }

    fn seed_lines(&self, _run: &Measured<'_>) -> Vec<String> {
        // No seed program; diskchecker.pl's own summary line, per cut.
        self.cycles
            .iter()
            .map(|c| {
                format!(
                    "cut at {:.3} s: {} acknowledged, {} lost, {} torn; mounted: {}",
                    c.at_s(),
                    c.verdict.acked,
                    c.verdict.acked_lost,
                    c.verdict.acked_torn,
                    c.recovery.mounted
                )
            })
            .collect()
    }

    fn failure(&self) -> Option<String> {
        let t = &self.total;
        self.total.lost_acknowledged().then(|| {
            format!(
                "{} acknowledged records lost and {} torn after {} of {} power cuts",
                t.acked_lost,
                t.acked_torn,
                self.cuts_with_losses(),
                self.cycles.len()
            )
        })
    }

    fn expected_errors(&self) -> u64 {
        // The call under way when the power went fails (EIO): the cut's doing.
        self.cycles.iter().filter(|c| c.ended.is_some()).count() as u64
    }
}
