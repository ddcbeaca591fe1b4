//! Seed 000 (Ts'o, "Ext3 latency fixes", April 2009): Ted's fsync-tester in the foreground —
//! write 1 MiB, time the fsync, sleep 1 s, repeat — against Linus's overwrite.c streaming
//! in the background. The point is the trade-off: worst-case fsync (6.2 s → 1.8 s after
//! the patches) against the streaming writer's rate (24 → 21 MB/s). Both are reported.

use anyhow::Result;

use super::background::seed_stream_line;
use super::fsync_tester::{self, Lines, Pace, Recorded, TesterConfig, TesterDetails, DURATION, ITERATIONS, SLEEP};
use super::{Plan, Scenario};
use crate::measure::Sample;
use crate::observe::{Event, Observer};
use crate::params::{ParamSpec, Params};
use crate::role::prober::Iteration;
use crate::role::writer::{BackgroundSummary, WriterKind};
use crate::scenario::Measured;

/// `fsync time: 3.4732` — the fsync-tester's line (printf `%5.4f`). With another sync
/// method the label names that call (`fdatasync time: ...`).
pub(crate) fn seed_line(sync: &Sample) -> String {
    format!("{} time: {:.4}", sync.op, sync.latency_ns as f64 / 1e9)
}

/// overwrite.c's line, printed when a stream writer ran.
fn stream_line(background: Option<&BackgroundSummary>) -> Option<String> {
    background
        .filter(|b| b.kind == WriterKind::Stream)
        .map(seed_stream_line)
}

pub(crate) static OVERWRITE_FSYNC: Scenario = Scenario {
    name: "overwrite-fsync",
    purpose: "fsync latency of a 1 MiB overwrite behind a streaming writer, and what the writer loses for it",
    seed: "000 (Ts'o, ext3 latency fixes, 2009)",
    params,
    plan,
};

fn params() -> Vec<ParamSpec> {
    let pace = Pace {
        iterations: ITERATIONS.default("0"),
        duration: DURATION.default("20s"),
        sleep: SLEEP.default("1s").seed("1s"),
    };
    fsync_tester::params(pace, "stream")
}

fn plan(params: &Params) -> Result<Box<dyn Plan>> {
    let details = |d| super::Details::OverwriteFsync(Details::new(d));
    fsync_tester::plan(params, &Seed000, SPACE_HINT, details)
}

const SPACE_HINT: &str = "lower --set file_size (or random_file_size, write_size)";

/// The fsync-tester's lines.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Seed000;

impl Lines for Seed000 {
    fn iteration(&self, it: &Iteration<'_>, observer: &mut dyn Observer) {
        observer.event(Event::SeedLine(&seed_line(it.sync.unwrap_or(it.write))));
    }

    fn done(&self, _: &TesterConfig, _: u64, background: Option<&BackgroundSummary>, observer: &mut dyn Observer) {
        if let Some(line) = stream_line(background) {
            observer.event(Event::SeedLine(&line));
        }
    }

    fn recorded(&self, _: &TesterDetails, r: &Measured<'_>) -> Vec<String> {
        let mut lines: Vec<String> = fsync_tester::iterations(r.samples)
            .iter()
            .map(|(write, sync)| seed_line(sync.as_ref().unwrap_or(write)))
            .collect();
        lines.extend(stream_line(r.background));
        lines
    }
}

/// What the run recorded beside its samples.
pub(crate) type Details = Recorded<Seed000>;
