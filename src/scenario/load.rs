//! `fsynclab load random|stream`: only a background writer, no prober, for `duration` — to
//! put the seeds' writeback load under another program (a database's own test, fio).
//! Reached through its own subcommand, not listed among the scenarios.

use std::time::Duration;

use anyhow::Result;

use super::{background, Context, Outcome, Scenario};
use crate::observe::{Event, Unit};
use crate::params::{Kind, ParamSpec, Params};
use crate::role::writer::{RANDOM_PARAMS, STREAM_PARAMS};

pub struct Load {
    pub kind: &'static str,
}

pub const RANDOM: Load = Load { kind: "random" };
pub const STREAM: Load = Load { kind: "stream" };

impl Load {
    /// The parameters as the background glue reads them: `background` fixed to this kind.
    fn full(&self, params: &Params) -> Params {
        let mut sets: Vec<String> = params
            .to_text_map()
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        sets.push(format!("background={}", self.kind));
        let mut specs = background::params(self.kind);
        specs.push(duration_param());
        Params::resolve(self.name(), &specs, &sets).expect("own parameters re-parse")
    }
}

fn duration_param() -> ParamSpec {
    ParamSpec::new(
        "duration",
        Kind::Duration,
        "10s",
        "how long to write (0 = until Ctrl-C)",
    )
}

impl Scenario for Load {
    fn name(&self) -> &'static str {
        if self.kind == "random" {
            "load-random"
        } else {
            "load-stream"
        }
    }

    fn purpose(&self) -> &'static str {
        "the background writer alone, reporting its rate"
    }

    fn seed(&self) -> &'static str {
        if self.kind == "random" {
            "003's random writer"
        } else {
            "000's overwrite.c"
        }
    }

    fn params(&self) -> Vec<ParamSpec> {
        let mut specs: Vec<ParamSpec> = if self.kind == "random" {
            RANDOM_PARAMS.to_vec()
        } else {
            STREAM_PARAMS.to_vec()
        };
        specs.push(duration_param());
        specs
    }

    fn validate(&self, params: &Params) -> Result<()> {
        background::validate(&self.full(params))
    }

    fn space_needed(&self, params: &Params) -> u64 {
        background::space_needed(&self.full(params))
    }

    fn space_hint(&self) -> &'static str {
        if self.kind == "random" {
            "lower --set random_file_size"
        } else {
            "lower --set file_size"
        }
    }

    fn run(&self, ctx: &mut Context<'_>, params: &Params) -> Result<Outcome> {
        let full = self.full(params);
        let writer = background::prepare(ctx, &full)?;
        let duration = params.duration("duration");
        let running = background::Running::start(writer, ctx.clock, ctx.stop)?;
        if self.kind == "random" {
            ctx.observer.event(Event::SeedLine("starting random io!"));
        }
        let started = ctx.clock.elapsed();
        let total = (!duration.is_zero()).then_some(duration.as_millis() as u64);
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
            if !duration.is_zero() && elapsed >= duration {
                break;
            }
            let step = if duration.is_zero() {
                Duration::from_millis(200)
            } else {
                (duration - elapsed).min(Duration::from_millis(200))
            };
            if !ctx.stop.sleep(step) {
                break;
            }
        }
        let background = running.stop();
        if let Some(b) = background.as_ref().filter(|b| b.kind == "stream") {
            ctx.observer.event(Event::SeedLine(&background::seed_stream_line(b)));
        }
        Ok(Outcome {
            background,
            ..Outcome::default()
        })
    }
}
