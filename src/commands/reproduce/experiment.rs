//! What a seed's reproduction is made of: the [`Experiment`] each `seedNNN.rs` implements
//! (the claim, the published figures with their source, the configuration of its era as
//! [`Group`]s of runs, and the rules that judge what was measured), and what the runs
//! gave back ([`Measured`]), from which the rows are computed.

use std::fmt;

use serde::Serialize;

use super::verdict::Judgement;
use crate::matrix::plan::{Axis, Plan};
use crate::measure::OpKind;
use crate::result::RunResult;
use crate::testbed::Key;

/// How much of the posts' sizes and durations a reproduction uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Size {
    /// Scaled down to finish in about 12 minutes, 2 to 4 runs a configuration (each
    /// group's `quick_repeat`).
    Quick,
    /// The posts' sizes and durations where the machine allows, four runs a configuration.
    Full,
    /// The quick configurations cut to seconds ([`super::SMOKE_SETS`]): every row is
    /// produced, no figure means much. For the tests (`--smoke`, hidden).
    Smoke,
}

impl Size {
    /// Runs of each configuration.
    pub(crate) fn repeat(self) -> u32 {
        match self {
            Size::Quick | Size::Smoke => 1,
            // Four a side is the fewest that can reach p < 0.05 (the smallest p with three
            // against three is 0.100), so that every verdict of --full can be decided.
            Size::Full => 4,
        }
    }

    /// `quick`, `full`, `smoke`: the flag's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Size::Quick => "quick",
            Size::Full => "full",
            Size::Smoke => "smoke",
        }
    }

    /// The size a matrix's origin names (`fsynclab reproduce --full`).
    pub(crate) fn of_origin(origin: &str) -> Option<Size> {
        [Size::Quick, Size::Full, Size::Smoke]
            .into_iter()
            .find(|s| origin.ends_with(&format!("--{}", s.name())))
    }

    /// `quick` or `full`'s value (a smoke run starts from the quick one).
    pub(crate) fn pick<T>(self, quick: T, full: T) -> T {
        match self {
            Size::Quick | Size::Smoke => quick,
            Size::Full => full,
        }
    }
}

/// Where a published figure is quoted from: a seed file of the shared `seeds/` folder and
/// its lines, or another page named in SEEDS.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Source {
    pub(crate) file: &'static str,
    pub(crate) lines: &'static str,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.lines.is_empty() {
            write!(f, "{}", self.file)
        } else {
            write!(f, "{}:{}", self.file, self.lines)
        }
    }
}

/// One configuration set of a seed: runs of one scenario, on testbeds that share `target`
/// and differ along `axes` (every combination, as a matrix), each `repeat` times. It is
/// stored as a matrix of the results store, so `fsynclab runs --matrix`, `compare` and
/// `report --matrix` read it as they read any.
#[derive(Clone, Debug)]
pub(crate) struct Group {
    /// Added to the seed in the group's id (`reproduce3-003-bdi`); empty for the main one.
    pub(crate) name: &'static str,
    pub(crate) scenario: &'static str,
    pub(crate) target: Vec<(Key, String)>,
    pub(crate) sets: Vec<String>,
    pub(crate) axes: Vec<(&'static str, Vec<String>)>,
    /// The figures the stored matrix's table shows (`fsync.max`, `commit.tps`).
    pub(crate) figures: Vec<&'static str>,
    /// Explain every call at least this slow (else the explanation's default, 100 ms).
    pub(crate) explain_over_ms: Option<u64>,
    /// Runs a configuration in `--quick`, where the group's runs are short enough to repeat
    /// (else [`Size::repeat`]).
    pub(crate) quick_repeat: Option<u32>,
}

impl Group {
    pub(crate) fn new(scenario: &'static str) -> Group {
        Group {
            name: "",
            scenario,
            target: Vec::new(),
            sets: Vec::new(),
            axes: Vec::new(),
            figures: Vec::new(),
            explain_over_ms: None,
            quick_repeat: None,
        }
    }

    pub(crate) fn quick_repeat(mut self, n: u32) -> Group {
        self.quick_repeat = Some(n);
        self
    }

    /// Runs a configuration at `size`.
    pub(crate) fn repeat(&self, size: Size) -> u32 {
        match (size, self.quick_repeat) {
            (Size::Quick, Some(n)) => n,
            _ => size.repeat(),
        }
    }

    pub(crate) fn named(mut self, name: &'static str) -> Group {
        self.name = name;
        self
    }

    pub(crate) fn on(mut self, key: Key, value: impl Into<String>) -> Group {
        self.target.push((key, value.into()));
        self
    }

    pub(crate) fn set(mut self, assignment: impl Into<String>) -> Group {
        self.sets.push(assignment.into());
        self
    }

    /// An axis: a testbed option's name (`scratch`, `scheduler`) or a parameter's.
    pub(crate) fn axis(mut self, key: &'static str, values: &[&str]) -> Group {
        self.axes.push((key, values.iter().map(|v| v.to_string()).collect()));
        self
    }

    pub(crate) fn explain_over_ms(mut self, ms: u64) -> Group {
        self.explain_over_ms = Some(ms);
        self
    }

    pub(crate) fn figure(mut self, figure: &'static str) -> Group {
        self.figures.push(figure);
        self
    }

    /// The group as a matrix plan of a reproduction at `size`.
    pub(crate) fn plan(&self, size: Size) -> Plan {
        Plan {
            scenario: self.scenario.to_string(),
            sets: self.sets.clone(),
            target: self
                .target
                .iter()
                .map(|(k, v)| (k.name().to_string(), v.clone()))
                .collect(),
            axes: self
                .axes
                .iter()
                .map(|(k, values)| Axis {
                    key: k.to_string(),
                    values: values.clone(),
                })
                .collect(),
            repeat: self.repeat(size),
            kernel_timeout: None,
            figures: self.figures.iter().map(|f| f.to_string()).collect(),
            columns: None,
            implied_scratch: false,
            placement: None,
            origin: Some(format!("fsynclab reproduce --{}", size.name())),
        }
    }
}

/// One row of the table: a finding of a seed, what the post published, what this run
/// measured, and the verdict with why.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Row {
    pub(crate) seed: &'static str,
    pub(crate) claim: String,
    pub(crate) published: String,
    /// Where each published figure is quoted from.
    pub(crate) sources: Vec<String>,
    /// The configurations the measured figure comes from.
    pub(crate) configuration: String,
    pub(crate) measured: String,
    #[serde(flatten)]
    pub(crate) judgement: Judgement,
    /// The stored runs behind the measured figure.
    pub(crate) runs: Vec<i64>,
    /// The finding's own figure, run by run, where the seed names one: what `--kernel A,B`
    /// compares between kernels (else the group's main figure). Not in the JSON row: the
    /// change it makes is ([`super::kernels::Change`]).
    #[serde(skip)]
    pub(crate) figure: Option<RunFigure>,
}

/// A finding's figure over its runs: `overwrite fdatasync.ops/s`, one value a run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RunFigure {
    pub(crate) name: String,
    pub(crate) unit: &'static str,
    pub(crate) values: Vec<f64>,
}

impl Row {
    pub(crate) fn new(seed: &'static str, claim: &str) -> Row {
        Row {
            seed,
            claim: claim.to_string(),
            published: String::new(),
            sources: Vec::new(),
            configuration: String::new(),
            measured: String::new(),
            judgement: Judgement::unmeasured("no run"),
            runs: Vec::new(),
            figure: None,
        }
    }

    /// The finding's own figure, one value a run (see [`Row::figure`]).
    pub(crate) fn figure(mut self, name: impl Into<String>, unit: &'static str, values: Vec<f64>) -> Row {
        self.figure = Some(RunFigure {
            name: name.into(),
            unit,
            values,
        });
        self
    }

    pub(crate) fn published(mut self, text: &str, sources: &[Source]) -> Row {
        self.published = text.to_string();
        self.sources = sources.iter().map(|s| format!("seeds/{s}")).collect();
        self
    }

    /// A published figure quoted from elsewhere than a seed file (SEEDS.md's checked facts).
    pub(crate) fn published_elsewhere(mut self, text: &str, source: &str) -> Row {
        self.published = text.to_string();
        self.sources = vec![source.to_string()];
        self
    }

    pub(crate) fn configuration(mut self, text: impl Into<String>) -> Row {
        self.configuration = text.into();
        self
    }

    pub(crate) fn measured(mut self, text: impl Into<String>, runs: Vec<i64>) -> Row {
        self.measured = text.into();
        self.runs = runs;
        self
    }

    pub(crate) fn judged(mut self, judgement: Judgement) -> Row {
        self.judgement = judgement;
        self
    }
}

/// A seed's reproduction, one file each (`seed000.rs` ...).
pub(crate) trait Experiment: Sync {
    /// `000`.
    fn seed(&self) -> &'static str;
    /// `ext3 latency fixes (Ts'o, April 2009)`.
    fn title(&self) -> &'static str;
    /// The configuration of its era, in one line, as run at `size`.
    fn era(&self, size: Size) -> String;
    /// The configurations to run.
    fn groups(&self, size: Size) -> Vec<Group>;
    /// The findings, judged on what the runs measured.
    fn rows(&self, measured: &Measured) -> Vec<Row>;
}

/// One run as it came back: its id in the store and its result without samples.
#[derive(Clone, Debug)]
pub(crate) struct Run {
    pub(crate) id: Option<i64>,
    pub(crate) result: RunResult,
}

/// The runs of one cell of a group.
#[derive(Clone, Debug)]
pub(crate) struct CellRuns {
    pub(crate) group: &'static str,
    pub(crate) axes: Vec<(String, String)>,
    pub(crate) runs: Vec<Run>,
}

/// What a seed's runs gave back, and why any is missing.
#[derive(Clone, Debug, Default)]
pub(crate) struct Measured {
    pub(crate) cells: Vec<CellRuns>,
    /// A run that could not be made, with why (shown in the rows it would have fed).
    pub(crate) failures: Vec<String>,
}

impl Measured {
    /// The runs of the cells of `group` whose axes include every pair of `pick`.
    pub(crate) fn runs(&self, group: &str, pick: &[(&str, &str)]) -> Vec<&Run> {
        self.cells
            .iter()
            .filter(|c| c.group == group)
            .filter(|c| {
                pick.iter()
                    .all(|(k, v)| c.axes.iter().any(|(ck, cv)| ck == k && cv == v))
            })
            .flat_map(|c| &c.runs)
            .collect()
    }

    /// Every run's `figure` over those runs (the runs without it left out).
    pub(crate) fn values(
        &self,
        group: &str,
        pick: &[(&str, &str)],
        figure: impl Fn(&RunResult) -> Option<f64>,
    ) -> Vec<f64> {
        self.runs(group, pick)
            .iter()
            .filter_map(|r| figure(&r.result))
            .filter(|v| v.is_finite())
            .collect()
    }

    /// The median of `figure` over those runs (the mean of the two middle ones of an even
    /// count, as `compare` takes it), with the ids of the runs it was taken over; None when
    /// no run has the figure.
    pub(crate) fn median(
        &self,
        group: &str,
        pick: &[(&str, &str)],
        figure: impl Fn(&RunResult) -> Option<f64>,
    ) -> Option<(f64, Vec<i64>)> {
        let median = crate::compare::stats::median(&self.values(group, pick, figure))?;
        let ids = self.runs(group, pick).iter().filter_map(|r| r.id).collect();
        Some((median, ids))
    }

    /// Why a figure is missing: the failures, or that nothing ran.
    pub(crate) fn missing(&self) -> String {
        if self.failures.is_empty() {
            "no run of this configuration".into()
        } else {
            self.failures.join("; ")
        }
    }
}

/// The worst latency of `op` in a run, seconds.
pub(crate) fn worst_s(result: &RunResult, op: OpKind) -> Option<f64> {
    result
        .ops
        .get(&op)
        .filter(|s| s.count > s.errors)
        .map(|s| s.latency_ns.max as f64 / 1e9)
}

/// The background writer's rate in MB/s (MiB/s, as fsynclab reports it).
pub(crate) fn writer_mb_s(result: &RunResult) -> Option<f64> {
    result.background.as_ref().map(|b| b.mb_per_s)
}

/// `runs 12, 13` for a measured cell.
pub(crate) fn ids_text(ids: &[i64]) -> String {
    match ids {
        [] => "not stored".into(),
        [one] => format!("run {one}"),
        more => format!(
            "runs {}",
            more.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::tests_support::empty_result;

    fn run(id: i64, fsync_max_ms: u64) -> Run {
        let mut result = empty_result();
        let mut stats = crate::measure::OpStats {
            count: 3,
            ..Default::default()
        };
        stats.latency_ns.max = fsync_max_ms * 1_000_000;
        result.ops.insert(OpKind::Fsync, stats);
        Run { id: Some(id), result }
    }

    #[test]
    /// Issue 20.
    fn medians_are_taken_over_the_cells_picked() {
        let m = Measured {
            cells: vec![
                CellRuns {
                    group: "",
                    axes: vec![("scratch".into(), "ext4".into())],
                    runs: vec![run(1, 300), run(2, 100), run(3, 200)],
                },
                CellRuns {
                    group: "",
                    axes: vec![("scratch".into(), "xfs".into())],
                    runs: vec![run(4, 900)],
                },
            ],
            failures: Vec::new(),
        };
        let worst = |r: &RunResult| worst_s(r, OpKind::Fsync);
        let (v, ids) = m.median("", &[("scratch", "ext4")], worst).unwrap();
        assert_eq!((v, ids), (0.2, vec![1, 2, 3]));
        assert_eq!(m.median("", &[("scratch", "xfs")], worst).unwrap().0, 0.9);
        assert!(m.median("", &[("scratch", "btrfs")], worst).is_none());
        assert!(m.median("other", &[], worst).is_none());
        assert_eq!(m.missing(), "no run of this configuration");
        assert_eq!(ids_text(&[4]), "run 4");
        assert_eq!(ids_text(&[1, 2]), "runs 1, 2");
    }
}
