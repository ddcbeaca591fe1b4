//! Seed 003 (Mason, "buffered writeback torture program", April 2011): a large file is
//! written out, a child does random 4 KiB buffered writes into it forever, and the
//! foreground times a 1 MiB pwrite at offset 0 of a second file and its fsync, up to 60
//! times or 60 s. On xfs one such write took 128.9 s, stuck in balance_dirty_pages: the
//! write time matters as much as the fsync time, so both are reported per call.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::background;
use super::fsync_tester::{self, Lines, TesterConfig, TesterDetails, TesterPlan};
use super::{Plan, Scenario, Views};
use crate::measure::Sample;
use crate::observe::{Event, Observer};
use crate::params::{ParamSpec, Params};
use crate::role::prober::Iteration;
use crate::role::writer::{BackgroundSummary, WriterKind};
use crate::scenario::Measured;

pub(crate) struct RandomWriteback;

/// `write time: 0.0009s fsync time: 2.0142s` — the seed's printf `%5.4fs` pair. With a
/// sync method that has no separate call, only the write is printed.
pub(crate) fn seed_line(write: &Sample, sync: Option<&Sample>) -> String {
    let secs = |s: &Sample| s.latency_ns as f64 / 1e9;
    match sync {
        Some(s) => format!("write time: {:.4}s {} time: {:.4}s", secs(write), s.op, secs(s)),
        None => format!("write time: {:.4}s", secs(write)),
    }
}

/// `run done 2 fsyncs total, killing random writer`.
pub(crate) fn seed_done_line(iterations: u64, background: Option<WriterKind>) -> String {
    match background {
        Some(WriterKind::Random) => format!("run done {iterations} fsyncs total, killing random writer"),
        _ => format!("run done {iterations} fsyncs total"),
    }
}

const STARTING: &str = "starting fsync run";
const STARTING_RANDOM: &str = "starting random io!";

impl Scenario for RandomWriteback {
    fn name(&self) -> &'static str {
        "random-writeback"
    }

    fn purpose(&self) -> &'static str {
        "write and fsync latency of a 1 MiB overwrite while random 4 KiB buffered writes flood writeback"
    }

    fn seed(&self) -> &'static str {
        "003 (Mason, buffered writeback torture, 2011)"
    }

    fn params(&self) -> Vec<ParamSpec> {
        let mut specs: Vec<ParamSpec> = fsync_tester::prober_params("20", "20s", "1s")
            .into_iter()
            .map(|p| match p.name {
                n if n == fsync_tester::ITERATIONS.name() => p.seed("60"),
                n if n == fsync_tester::DURATION.name() => p.seed("60s"),
                // Public copies of fsync-tester.c sleep 4 s, later ones 1 s.
                n if n == fsync_tester::SLEEP.name() => p.seed("1s"),
                _ => p,
            })
            .collect();
        specs.extend(background::params("random"));
        specs
    }

    fn plan(&self, params: &Params) -> Result<Box<dyn Plan>> {
        Ok(Box::new(TesterPlan {
            config: TesterConfig::from_params(params)?,
            lines: &Seed003,
            space_hint: "lower --set random_file_size (or write_size)",
            details: |d| super::Details::RandomWriteback(Details(d)),
        }))
    }
}

/// Mason's lines, live.
struct Seed003;

impl Lines for Seed003 {
    fn before_writer(&self, _cfg: &TesterConfig, observer: &mut dyn Observer) {
        observer.event(Event::SeedLine(STARTING));
    }

    fn writer_started(&self, cfg: &TesterConfig, observer: &mut dyn Observer) {
        if cfg.background.kind() == Some(WriterKind::Random) {
            observer.event(Event::SeedLine(STARTING_RANDOM));
        }
    }

    fn iteration(&self, it: &Iteration<'_>, observer: &mut dyn Observer) {
        observer.event(Event::SeedLine(&seed_line(it.write, it.sync)));
    }

    fn done(&self, cfg: &TesterConfig, iterations: u64, _: Option<&BackgroundSummary>, observer: &mut dyn Observer) {
        observer.event(Event::SeedLine(&seed_done_line(iterations, cfg.background.kind())));
    }
}

/// What the run recorded beside its samples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Details(pub TesterDetails);

impl Views for Details {
    fn findings(&self) -> Vec<String> {
        self.0.findings()
    }

    fn seed_lines(&self, r: &Measured<'_>) -> Vec<String> {
        let d = &self.0;
        let mut lines: Vec<String> = d.setup.seed_lines().iter().map(|l| l.to_string()).collect();
        lines.push(STARTING.into());
        if d.background == Some(WriterKind::Random) {
            lines.push(STARTING_RANDOM.into());
        }
        for (write, sync) in fsync_tester::iterations(r.samples) {
            lines.push(seed_line(&write, sync.as_ref()));
        }
        lines.push(seed_done_line(d.iterations, d.background));
        lines
    }
}

#[cfg(test)]
mod params_tests {
    use super::*;

    #[test]
    fn every_parameter_declared_is_read_and_every_one_read_is_declared() {
        crate::params::assert_declared_and_read::<fsync_tester::TesterParams>(&RandomWriteback.params());
    }
}
