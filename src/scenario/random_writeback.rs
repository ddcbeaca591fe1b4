//! Seed 003 (Mason, "buffered writeback torture program", April 2011): a large file is
//! written out, a child does random 4 KiB buffered writes into it forever, and the
//! foreground times a 1 MiB pwrite at offset 0 of a second file and its fsync, up to 60
//! times or 60 s. On xfs one such write took 128.9 s, stuck in balance_dirty_pages: the
//! write time matters as much as the fsync time, so both are reported per call.

use anyhow::Result;

use super::fsync_tester::{self, Lines, Pace, Recorded, TesterConfig, TesterDetails, DURATION, ITERATIONS, SLEEP};
use super::{Plan, Scenario};
use crate::measure::Sample;
use crate::observe::{Event, Observer};
use crate::params::{ParamSpec, Params};
use crate::role::prober::Iteration;
use crate::role::writer::{BackgroundSummary, WriterKind};
use crate::scenario::Measured;

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

pub(crate) static RANDOM_WRITEBACK: Scenario = Scenario {
    name: "random-writeback",
    purpose: "write and fsync latency of a 1 MiB overwrite while random 4 KiB buffered writes flood writeback",
    seed: "003 (Mason, buffered writeback torture, 2011)",
    params,
    plan,
};

fn params() -> Vec<ParamSpec> {
    let pace = Pace {
        iterations: ITERATIONS.default("20").seed("60"),
        duration: DURATION.default("20s").seed("60s"),
        // Public copies of fsync-tester.c sleep 4 s, later ones 1 s.
        sleep: SLEEP.default("1s").seed("1s"),
    };
    fsync_tester::params(pace, "random")
}

fn plan(params: &Params) -> Result<Box<dyn Plan>> {
    let details = |d| super::Details::RandomWriteback(Details::new(d));
    fsync_tester::plan(params, &Seed003, SPACE_HINT, details)
}

const SPACE_HINT: &str = "lower --set random_file_size (or write_size)";

/// Mason's lines.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Seed003;

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

    fn recorded(&self, d: &TesterDetails, r: &Measured<'_>) -> Vec<String> {
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

/// What the run recorded beside its samples.
pub(crate) type Details = Recorded<Seed003>;
