//! Seed 000 (Ts'o, "Ext3 latency fixes", April 2009): Ted's fsync-tester in the foreground —
//! write 1 MiB, time the fsync, sleep 1 s, repeat — against Linus's overwrite.c streaming
//! in the background. The point is the trade-off: worst-case fsync (6.2 s → 1.8 s after
//! the patches) against the streaming writer's rate (24 → 21 MB/s). Both are reported.

use anyhow::Result;

use super::{background, Context, Outcome, Scenario};
use crate::measure::{Recorder, Sample};
use crate::observe::Event;
use crate::params::{ParamSpec, Params};
use crate::role::prober::{self, Prober, ProberConfig};

pub struct OverwriteFsync;

/// `fsync time: 3.4732` — the fsync-tester's line (printf `%5.4f`). With another sync
/// method the label names that call (`fdatasync time: ...`).
pub fn seed_line(sync: &Sample) -> String {
    format!("{} time: {:.4}", sync.op, sync.latency_ns as f64 / 1e9)
}

impl Scenario for OverwriteFsync {
    fn name(&self) -> &'static str {
        "overwrite-fsync"
    }

    fn purpose(&self) -> &'static str {
        "fsync latency of a 1 MiB overwrite behind a streaming writer, and what the writer loses for it"
    }

    fn seed(&self) -> &'static str {
        "000 (Ts'o, ext3 latency fixes, 2009)"
    }

    fn params(&self) -> Vec<ParamSpec> {
        let mut specs: Vec<ParamSpec> = prober::params("0", "20s", "1s")
            .into_iter()
            .map(|p| if p.name == "sleep" { p.seed("1s") } else { p })
            .collect();
        specs.extend(background::params("stream"));
        specs
    }

    fn validate(&self, params: &Params) -> Result<()> {
        background::validate_with_prober(params)
    }

    fn space_needed(&self, params: &Params) -> u64 {
        background::space_with_prober(params)
    }

    fn space_hint(&self) -> &'static str {
        "lower --set file_size (or random_file_size, write_size)"
    }

    fn run(&self, ctx: &mut Context<'_>, params: &Params) -> Result<Outcome> {
        let mut prober = Prober::open(ctx.dir, ProberConfig::from_params(params)?)?;
        let writer = background::prepare(ctx, params)?;
        let mut recorder = Recorder::new();
        let running = background::Running::start(writer, ctx.clock, ctx.stop)?;
        prober.run(&ctx.clock, ctx.stop, &mut recorder, ctx.observer, |it, obs| {
            let timed = it.sync.unwrap_or(it.write);
            obs.event(Event::SeedLine(&seed_line(timed)));
        });
        let background = running.stop();
        if let Some(b) = background.as_ref().filter(|b| b.kind == "stream") {
            ctx.observer.event(Event::SeedLine(&background::seed_stream_line(b)));
        }
        let findings = background::pressure_note(params).into_iter().collect();
        Ok(Outcome {
            recorder,
            background,
            findings,
            ..Outcome::default()
        })
    }
}
