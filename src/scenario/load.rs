//! `fsynclab load random|stream`: only a background writer, no prober, for `duration` — to
//! put the seeds' writeback load under another program (a database's own test, fio).
//! Reached through its own subcommand, not listed among the scenarios.

use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::background::{self, BackgroundConfig, Running};
use super::{Context, Outcome, Plan, Scenario, Views};
use crate::measure::Recorder;
use crate::observe::{Event, Unit};
use crate::params::{Param, ParamError, ParamReader, ParamSpec, Params};
use crate::role::writer::{RandomConfig, Setup, StreamConfig, WriterKind};
use crate::scenario::Measured;

pub(crate) static RANDOM: Scenario = Scenario {
    name: "load-random",
    purpose: PURPOSE,
    seed: "003's random writer",
    params: || params(WriterKind::Random),
    plan: |p| plan(WriterKind::Random, p),
};

pub(crate) static STREAM: Scenario = Scenario {
    name: "load-stream",
    purpose: PURPOSE,
    seed: "000's overwrite.c",
    params: || params(WriterKind::Stream),
    plan: |p| plan(WriterKind::Stream, p),
};

const PURPOSE: &str = "the background writer alone, reporting its rate";

const STARTING_RANDOM: &str = "starting random io!";

fn params(kind: WriterKind) -> Vec<ParamSpec> {
    let mut specs: Vec<ParamSpec> = match kind {
        WriterKind::Random => background::random_params().to_vec(),
        WriterKind::Stream => background::stream_params().to_vec(),
    };
    specs.push(DURATION.spec);
    specs
}

fn plan(kind: WriterKind, params: &Params) -> Result<Box<dyn Plan>> {
    let p = read(kind, &mut params.reader())?;
    Ok(Box::new(Config {
        kind,
        writer: match p.writer {
            Writer::Stream(c) => BackgroundConfig::stream(c)?,
            Writer::Random(c) => BackgroundConfig::random(c)?,
        },
        duration: p.duration,
    }))
}

const DURATION: Param<Duration> = Param::duration("duration", "10s", "how long to write (0 = until Ctrl-C)");

/// A load run's parameters, as read: its writer's, and how long it writes.
struct LoadParams {
    writer: Writer,
    duration: Duration,
}

enum Writer {
    Stream(StreamConfig),
    Random(RandomConfig),
}

/// Reads the parameters of this load's writer (the subcommand names which it is).
fn read(kind: WriterKind, r: &mut ParamReader<'_>) -> Result<LoadParams, ParamError> {
    Ok(LoadParams {
        writer: match kind {
            WriterKind::Stream => Writer::Stream(background::read_stream(r)?),
            WriterKind::Random => Writer::Random(background::read_random(r)?),
        },
        duration: r.get(&DURATION)?,
    })
}

struct Config {
    kind: WriterKind,
    writer: BackgroundConfig,
    duration: Duration,
}

impl Plan for Config {
    fn space_needed(&self) -> u64 {
        self.writer.space_needed()
    }

    fn space_hint(&self) -> &'static str {
        match self.kind {
            WriterKind::Random => "lower --set random_file_size",
            WriterKind::Stream => "lower --set file_size",
        }
    }

    fn untraceable_calls(&self) -> Option<&'static str> {
        Some("a load run makes no measured calls")
    }

    fn expected_duration(&self) -> Option<Duration> {
        Some(self.duration).filter(|d| !d.is_zero())
    }

    fn run(&self, ctx: &mut Context<'_>) -> Result<Outcome> {
        let (writer, setup) = self.writer.prepare(ctx)?;
        let running = Running::start(writer, ctx.clock, ctx.stop)?;
        if self.kind == WriterKind::Random {
            ctx.observer.event(Event::SeedLine(STARTING_RANDOM));
        }
        self.wait(ctx);
        let background = running.stop();
        if let Some(b) = background.as_ref().filter(|b| b.kind == WriterKind::Stream) {
            ctx.observer.event(Event::SeedLine(&background::seed_stream_line(b)));
        }
        Ok(Outcome {
            recorder: Recorder::new(),
            background,
            details: super::Details::Load(Details {
                writer: self.kind,
                setup,
            }),
        })
    }
}

impl Config {
    /// Shows progress until `duration` (or a signal) ends the load.
    fn wait(&self, ctx: &mut Context<'_>) {
        let started = ctx.clock.elapsed();
        let total = (!self.duration.is_zero()).then_some(self.duration.as_millis() as u64);
        ctx.observer.event(Event::Phase {
            name: "writing",
            total,
            unit: Unit::Millis,
        });
        loop {
            let elapsed = ctx.clock.elapsed() - started;
            ctx.observer.event(Event::Progress {
                done: elapsed.as_millis() as u64,
            });
            if !self.duration.is_zero() && elapsed >= self.duration {
                break;
            }
            let step = if self.duration.is_zero() {
                Duration::from_millis(200)
            } else {
                (self.duration - elapsed).min(Duration::from_millis(200))
            };
            if !ctx.stop.sleep(step) {
                break;
            }
        }
    }
}

/// What the load recorded beside the writer's summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Details {
    pub(crate) writer: WriterKind,
    #[serde(default)]
    pub(crate) setup: Setup,
}

impl Views for Details {
    fn findings(&self) -> Vec<String> {
        Vec::new()
    }

    fn seed_lines(&self, r: &Measured<'_>) -> Vec<String> {
        let mut lines: Vec<String> = self.setup.seed_lines().iter().map(|l| l.to_string()).collect();
        match self.writer {
            WriterKind::Random => lines.push(STARTING_RANDOM.into()),
            WriterKind::Stream => lines.extend(r.background.map(background::seed_stream_line)),
        }
        lines
    }
}

#[cfg(test)]
mod params_tests {
    use super::*;

    #[test]
    fn every_parameter_declared_is_read_and_every_one_read_is_declared() {
        for (load, kind) in [(&RANDOM, WriterKind::Random), (&STREAM, WriterKind::Stream)] {
            let params = Params::resolve("load", &load.params(), &[]).unwrap();
            let mut reader = params.reader();
            read(kind, &mut reader).unwrap();
            let mut read = reader.names_read().to_vec();
            let mut declared: Vec<&str> = load.params().iter().map(|s| s.name).collect();
            read.sort_unstable();
            declared.sort_unstable();
            assert_eq!(declared, read, "{}", load.name());
        }
    }
}
