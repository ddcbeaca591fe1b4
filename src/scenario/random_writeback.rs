//! Seed 003 (Mason, "buffered writeback torture program", April 2011): a large file is
//! written out, a child does random 4 KiB buffered writes into it forever, and the
//! foreground times a 1 MiB pwrite at offset 0 of a second file and its fsync, up to 60
//! times or 60 s. On xfs one such write took 128.9 s, stuck in balance_dirty_pages: the
//! write time matters as much as the fsync time, so both are reported per call.

use anyhow::Result;

use super::{background, Context, Outcome, Scenario};
use crate::measure::{Recorder, Sample};
use crate::observe::Event;
use crate::params::{ParamSpec, Params};
use crate::role::prober::{self, Prober, ProberConfig};

pub struct RandomWriteback;

/// `write time: 0.0009s fsync time: 2.0142s` — the seed's printf `%5.4fs` pair. With a
/// sync method that has no separate call, only the write is printed.
pub fn seed_line(write: &Sample, sync: Option<&Sample>) -> String {
    let secs = |s: &Sample| s.latency_ns as f64 / 1e9;
    match sync {
        Some(s) => format!("write time: {:.4}s {} time: {:.4}s", secs(write), s.op, secs(s)),
        None => format!("write time: {:.4}s", secs(write)),
    }
}

/// `run done 2 fsyncs total, killing random writer`.
pub fn seed_done_line(iterations: u64, background: &str) -> String {
    match background {
        "random" => format!("run done {iterations} fsyncs total, killing random writer"),
        _ => format!("run done {iterations} fsyncs total"),
    }
}

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
        let mut specs: Vec<ParamSpec> = prober::params("20", "20s", "1s")
            .into_iter()
            .map(|p| match p.name {
                "iterations" => p.seed("60"),
                "duration" => p.seed("60s"),
                // Public copies of fsync-tester.c sleep 4 s, later ones 1 s.
                "sleep" => p.seed("1s"),
                _ => p,
            })
            .collect();
        specs.extend(background::params("random"));
        specs
    }

    fn validate(&self, params: &Params) -> Result<()> {
        background::validate_with_prober(params)
    }

    fn space_needed(&self, params: &Params) -> u64 {
        background::space_with_prober(params)
    }

    fn space_hint(&self) -> &'static str {
        "lower --set random_file_size (or write_size)"
    }

    fn run(&self, ctx: &mut Context<'_>, params: &Params) -> Result<Outcome> {
        let mut prober = Prober::open(ctx.dir, ProberConfig::from_params(params)?)?;
        let writer = background::prepare(ctx, params)?;
        let mut recorder = Recorder::new();
        ctx.observer.event(Event::SeedLine("starting fsync run"));
        let running = background::Running::start(writer, ctx.clock, ctx.stop)?;
        if params.text("background") == "random" {
            ctx.observer.event(Event::SeedLine("starting random io!"));
        }
        let done = prober.run(&ctx.clock, ctx.stop, &mut recorder, ctx.observer, |it, obs| {
            obs.event(Event::SeedLine(&seed_line(it.write, it.sync)));
        });
        ctx.observer
            .event(Event::SeedLine(&seed_done_line(done, params.text("background"))));
        let background = running.stop();
        let findings = background::pressure_note(params).into_iter().collect();
        Ok(Outcome {
            recorder,
            background,
            findings,
            ..Outcome::default()
        })
    }
}
