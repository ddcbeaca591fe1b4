//! Run-level figures: the few numbers of one run that two configurations are compared on —
//! ops/s, p50, p99 and max latency of each foreground operation kind, the background
//! writer's MB/s, and the figures a scenario names itself (fsync-tps's `commit.tps`). A run is
//! the unit of comparison (its calls share journal commits and writeback, so they are not
//! independent), and these are its measurements.
//!
//! They are computed from a result as typed ([`RunResult`]: its `ops`, `duration_s`,
//! `background` and named `figures`), so a run in memory, a result file and a stored run
//! read back all give the same figures.

use std::collections::BTreeMap;
use std::fmt;

use crate::result::RunResult;

/// What is measured of a subject.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Metric {
    /// Successful calls per second of the measured part.
    OpsPerSec,
    P50,
    P99,
    Max,
    /// Background writer throughput, mebibytes per second.
    MbPerS,
    /// Transactions per second as the scenario counts them (fsync-tps's `commit.tps`).
    Tps,
    /// Acknowledged records lost at power cuts (powercut's `acked.lost`).
    Lost,
    /// Acknowledged records torn at power cuts (`acked.torn`).
    Torn,
    /// The share of acknowledged records lost or torn (`acked.rate`).
    Rate,
}

/// Which way a figure is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    LowerIsBetter,
    HigherIsBetter,
}

/// The subject that stands for the background writer in [`Figure::subject`].
pub const BACKGROUND: &str = "background";

/// One figure of a run: a metric of an operation kind (`fsync`, `write`...) or of the
/// background writer.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Figure {
    pub subject: String,
    pub metric: Metric,
}

impl Figure {
    pub fn new(subject: &str, metric: Metric) -> Figure {
        Figure {
            subject: subject.to_string(),
            metric,
        }
    }

    pub fn direction(&self) -> Direction {
        match self.metric {
            Metric::OpsPerSec | Metric::MbPerS | Metric::Tps => Direction::HigherIsBetter,
            Metric::P50 | Metric::P99 | Metric::Max | Metric::Lost | Metric::Torn | Metric::Rate => {
                Direction::LowerIsBetter
            }
        }
    }

    /// The unit values are shown in: latencies are stored in ns and shown in ms.
    pub fn unit(&self) -> &'static str {
        match self.metric {
            Metric::OpsPerSec => "ops/s",
            Metric::P50 | Metric::P99 | Metric::Max => "ms",
            Metric::MbPerS => "MB/s",
            Metric::Tps => "tps",
            Metric::Lost | Metric::Torn => "records",
            Metric::Rate => "of acknowledged",
        }
    }

    /// A stored value (ns for latencies) in [`Figure::unit`].
    pub fn in_unit(&self, value: f64) -> f64 {
        match self.metric {
            Metric::P50 | Metric::P99 | Metric::Max => value / 1e6,
            _ => value,
        }
    }

    /// The value for a table: in [`Figure::unit`], with three significant digits at least
    /// and no more decimals than that needs.
    pub fn format(&self, value: f64) -> String {
        format_significant(self.in_unit(value))
    }

    /// Parses `fsync.p99`, `write.ops/s`, `background.mb/s` (the names [`Display`] prints).
    ///
    /// [`Display`]: fmt::Display
    pub fn parse(text: &str) -> Option<Figure> {
        let (subject, metric) = text.rsplit_once('.')?;
        let metric = match metric {
            "ops/s" | "ops" => Metric::OpsPerSec,
            "p50" => Metric::P50,
            "p99" => Metric::P99,
            "max" => Metric::Max,
            "mb/s" | "MB/s" => Metric::MbPerS,
            "tps" => Metric::Tps,
            "lost" => Metric::Lost,
            "torn" => Metric::Torn,
            "rate" => Metric::Rate,
            _ => return None,
        };
        (!subject.is_empty()).then(|| Figure::new(subject, metric))
    }
}

impl fmt::Display for Figure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let metric = match self.metric {
            Metric::OpsPerSec => "ops/s",
            Metric::P50 => "p50",
            Metric::P99 => "p99",
            Metric::Max => "max",
            Metric::MbPerS => "mb/s",
            Metric::Tps => "tps",
            Metric::Lost => "lost",
            Metric::Torn => "torn",
            Metric::Rate => "rate",
        };
        write!(f, "{}.{metric}", self.subject)
    }
}

/// `v` with at least three significant digits: 1234 → "1234", 12.345 → "12.3",
/// 0.01234 → "0.0123".
pub fn format_significant(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let magnitude = if v == 0.0 { 0 } else { v.abs().log10().floor() as i32 };
    let decimals = (2 - magnitude).clamp(0, 9) as usize;
    format!("{v:.decimals$}")
}

/// The figures of one run, by figure.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunFigures {
    /// What names the run to a reader: a run id, a file name, a matrix cell.
    pub run: String,
    pub values: BTreeMap<Figure, f64>,
}

/// What is wrong with a result that has no figures.
#[derive(Debug, thiserror::Error)]
pub enum FigureError {
    #[error("{run}: not a result this fsynclab can read ({reason})")]
    Unreadable { run: String, reason: String },
    #[error("{run}: the measured part lasted {duration_s} s, so no rate can be computed")]
    NoDuration { run: String, duration_s: f64 },
}

/// The figures of a result: for every operation kind with at least one call, ops/s
/// ((count − errors) / duration_s: failed calls are not work done), p50, p99 and max (ns,
/// from the result's histogram summary); the background writer's MB/s when there was one;
/// and the figures the scenario names itself.
pub(crate) fn run_figures(run: &str, result: &RunResult) -> Result<RunFigures, FigureError> {
    let duration_s = result.duration_s;
    if duration_s.is_nan() || duration_s <= 0.0 {
        return Err(FigureError::NoDuration {
            run: run.to_string(),
            duration_s,
        });
    }
    let mut values = BTreeMap::new();
    for (op, stats) in result.ops.iter().filter(|(_, s)| s.count > 0) {
        let subject = op.name();
        let latency = &stats.latency_ns;
        values.insert(
            Figure::new(subject, Metric::OpsPerSec),
            stats.count.saturating_sub(stats.errors) as f64 / duration_s,
        );
        values.insert(Figure::new(subject, Metric::P50), latency.p50 as f64);
        values.insert(Figure::new(subject, Metric::P99), latency.p99 as f64);
        values.insert(Figure::new(subject, Metric::Max), latency.max as f64);
    }
    if let Some(background) = &result.background {
        values.insert(Figure::new(BACKGROUND, Metric::MbPerS), background.mb_per_s);
    }
    // The scenario's own figures of the whole run, by name; names this version does not
    // know (a later one's) are left out rather than guessed at.
    for (name, v) in &result.figures {
        if let Some(figure) = Figure::parse(name) {
            values.insert(figure, *v);
        }
    }
    Ok(RunFigures {
        run: run.to_string(),
        values,
    })
}

impl RunFigures {
    /// The one figure that stands for the run: the scenario's own (fsync-tps's
    /// `commit.tps`), else the p99 latency of the sync call made most often, else that of
    /// the call made most often. `None` for a run without calls.
    pub fn main_figure(&self) -> Option<Figure> {
        if let Some(f) = self.values.keys().find(|f| f.metric == Metric::Tps) {
            return Some(f.clone());
        }
        let rates = self
            .values
            .iter()
            .filter(|(f, _)| f.metric == Metric::OpsPerSec && f.subject != BACKGROUND);
        let is_sync = |subject: &str| crate::measure::OpKind::from_name(subject).is_some_and(|k| k.is_sync());
        let busiest = |sync_only: bool| {
            rates
                .clone()
                .filter(|(f, _)| !sync_only || is_sync(&f.subject))
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map(|(f, _)| Figure::new(&f.subject, Metric::P99))
        };
        busiest(true).or_else(|| busiest(false))
    }

    /// The main figure and its value, as `commit.tps 1070 tps`; `None` without a main
    /// figure, or without its value.
    pub(crate) fn main_figure_text(&self) -> Option<String> {
        let m = self.main_figure()?;
        let v = self.values.get(&m)?;
        Some(format!("{m} {} {}", m.format(*v), m.unit()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result() -> RunResult {
        use crate::measure::{LatencySummary, OpKind, OpStats};
        let op = |count, errors, p50, p99, max| OpStats {
            count,
            errors,
            bytes: 0,
            latency_ns: LatencySummary {
                min: 1,
                p50,
                p99,
                max,
                ..LatencySummary::default()
            },
        };
        let mut background = crate::role::writer::BackgroundSummary::empty(crate::role::writer::WriterKind::Stream);
        background.mb_per_s = 24.5;
        RunResult {
            duration_s: 2.0,
            ops: [
                (OpKind::Fsync, op(400, 0, 4_000_000, 9_000_000, 25_000_000)),
                (OpKind::Write, op(402, 2, 3000, 8000, 90000)),
                (OpKind::Fdatasync, op(0, 0, 0, 0, 0)),
            ]
            .into(),
            background: Some(background),
            figures: [("commit.tps".to_string(), 812.5), ("commit.unknown".to_string(), 1.0)].into(),
            ..crate::result::tests_support::empty_result()
        }
    }

    #[test]
    fn figures_of_a_result() {
        let f = run_figures("r1", &result()).unwrap();
        assert_eq!(f.values[&Figure::new("fsync", Metric::OpsPerSec)], 200.0);
        assert_eq!(
            f.values[&Figure::new("write", Metric::OpsPerSec)],
            200.0,
            "errors are not work done"
        );
        assert_eq!(f.values[&Figure::new("fsync", Metric::P99)], 9e6);
        assert_eq!(f.values[&Figure::new("write", Metric::Max)], 90000.0);
        assert_eq!(f.values[&Figure::new(BACKGROUND, Metric::MbPerS)], 24.5);
        assert_eq!(
            f.values[&Figure::new("commit", Metric::Tps)],
            812.5,
            "the scenario's own figure"
        );
        assert!(
            !f.values.keys().any(|k| k.subject == "fdatasync"),
            "no calls, no figures"
        );
        assert_eq!(f.values.len(), 10, "an unknown named figure is left out");
    }

    #[test]
    fn the_main_figure_is_the_scenarios_own_else_the_main_sync_calls_p99() {
        let f = run_figures("r1", &result()).unwrap();
        assert_eq!(f.main_figure(), Some(Figure::new("commit", Metric::Tps)));
        let mut r = result();
        r.figures.clear();
        let f = run_figures("r1", &r).unwrap();
        assert_eq!(
            f.main_figure(),
            Some(Figure::new("fsync", Metric::P99)),
            "fewer fsyncs than writes, but fsync is the sync call"
        );
    }

    #[test]
    fn a_result_without_duration_says_so() {
        let mut r = result();
        r.duration_s = 0.0;
        let e = run_figures("r1", &r).unwrap_err().to_string();
        assert!(e.contains("r1") && e.contains("0 s"), "{e}");
    }

    #[test]
    fn names_and_formats() {
        let f = Figure::parse("fsync.p99").unwrap();
        assert_eq!(f, Figure::new("fsync", Metric::P99));
        assert_eq!(f.to_string(), "fsync.p99");
        assert_eq!(
            Figure::parse(&Figure::new("write", Metric::OpsPerSec).to_string())
                .unwrap()
                .metric,
            Metric::OpsPerSec
        );
        assert_eq!(Figure::parse("fsync.p42"), None);
        assert_eq!(f.format(12_345_678.0), "12.3");
        assert_eq!(Figure::new("fsync", Metric::OpsPerSec).format(184.06), "184");
        assert_eq!(format_significant(0.012345), "0.0123");
        assert_eq!(format_significant(1234.5), "1234");
        assert_eq!(format_significant(0.0), "0.00");
    }
}
