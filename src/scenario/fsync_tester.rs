//! The fsync-tester shape that seeds 000 (Ts'o) and 003 (Mason) share: a foreground prober
//! writes and syncs in a loop while a background writer loads writeback. The two scenarios
//! differ in their defaults, their background writer and the lines they print ([`Lines`]);
//! the parameters, the configuration, the plan, the run and the recorded details are here,
//! once.

use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::background::{self, BackgroundConfig, BackgroundParams, PressureNote, Running};
use super::{Context, Measured, Outcome, Plan, Views};
use crate::environment::check_fits_in_memory;
use crate::error::Usage;
use crate::measure::{Recorder, Sample};
use crate::observe::Observer;
use crate::params::{Param, ParamError, ParamReader, ParamSpec, Params, ScenarioParams};
use crate::role::prober::{Iteration, Placement, Prober, ProberConfig};
use crate::role::writer::{BackgroundSummary, Setup, WriterKind};
use crate::sync::SyncMethod;
use crate::sys::AlignedBuf;
use crate::units::{format_size, Bytes};

pub(crate) const WRITE_SIZE: Param<Bytes> =
    Param::size("write_size", "1M", "prober: bytes written before each sync").seed("1M");
pub(crate) const SYNC: Param<SyncMethod> = SyncMethod::param("fsync");
pub(crate) const PLACEMENT: Param<Placement> = Param::choice(
    "placement",
    "overwrite",
    "prober: write at offset 0 (overwrite) or at the end of the file (append)",
);
/// The next three take each scenario's default ([`Pace`]).
pub(crate) const SLEEP: Param<Duration> = Param::duration("sleep", "1s", "prober: pause between iterations");
pub(crate) const ITERATIONS: Param<u64> = Param::count(
    "iterations",
    "0",
    "prober: stop after this many iterations (0 = no limit)",
);
pub(crate) const DURATION: Param<Duration> =
    Param::duration("duration", "0", "prober: stop after this long (0 = no limit)");

/// How a scenario paces its prober: [`ITERATIONS`], [`DURATION`] and [`SLEEP`], each with
/// the scenario's scaled default and, where the seed's post gives one, the seed's value.
pub(crate) struct Pace {
    pub(crate) iterations: Param<u64>,
    pub(crate) duration: Param<Duration>,
    pub(crate) sleep: Param<Duration>,
}

/// A fsync-tester scenario's parameters: the prober's, paced by the scenario, then the
/// background writer's, `background` (`stream`, `random`) by default.
pub(crate) fn params(pace: Pace, background: &'static str) -> Vec<ParamSpec> {
    let mut specs = vec![
        WRITE_SIZE.spec,
        SYNC.spec,
        PLACEMENT.spec,
        pace.sleep.spec,
        pace.iterations.spec,
        pace.duration.spec,
    ];
    specs.extend(background::params(background));
    specs
}

/// A fsync-tester scenario's parameters, as read: the prober's and the background's.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TesterParams {
    pub(crate) write_size: Bytes,
    pub(crate) sync: SyncMethod,
    pub(crate) placement: Placement,
    pub(crate) sleep: Duration,
    pub(crate) iterations: u64,
    pub(crate) duration: Duration,
    pub(crate) background: BackgroundParams,
}

impl ScenarioParams for TesterParams {
    fn read(r: &mut ParamReader<'_>) -> Result<Self, ParamError> {
        Ok(TesterParams {
            write_size: r.get(&WRITE_SIZE)?,
            sync: r.get(&SYNC)?,
            placement: r.get(&PLACEMENT)?,
            sleep: r.get(&SLEEP)?,
            iterations: r.get(&ITERATIONS)?,
            duration: r.get(&DURATION)?,
            background: BackgroundParams::read(r)?,
        })
    }
}

/// A fsync-tester run, decided.
#[derive(Clone, Debug)]
pub(crate) struct TesterConfig {
    pub(crate) prober: ProberConfig,
    pub(crate) background: BackgroundConfig,
}

impl TesterConfig {
    pub(crate) fn from_params(p: &Params) -> Result<TesterConfig> {
        let p = TesterParams::from_params(p)?;
        let method = p.sync;
        let write_size = p.write_size.get();
        if write_size == 0 {
            return Err(Usage("--set write_size=0: the prober must write at least one byte".into()).into());
        }
        check_fits_in_memory(WRITE_SIZE.name(), write_size)?;
        if method.needs_alignment() && write_size % AlignedBuf::ALIGN as u64 != 0 {
            return Err(Usage(format!(
                "--set write_size={}: sync=direct (O_DIRECT) needs a multiple of 4k",
                format_size(p.write_size)
            ))
            .into());
        }
        Ok(TesterConfig {
            prober: ProberConfig {
                write_size,
                method,
                placement: p.placement,
                sleep: p.sleep,
                iterations: p.iterations,
                duration: p.duration,
            },
            background: BackgroundConfig::from_params(&p.background)?,
        })
    }

    /// Bytes of the prober's file and the background writer's file.
    pub(crate) fn space_needed(&self) -> u64 {
        self.prober.space_needed() + self.background.space_needed()
    }
}

/// What a fsync-tester run records beside its samples (its scenario's lines print them:
/// [`Recorded`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct TesterDetails {
    /// Iterations the prober completed.
    pub(crate) iterations: u64,
    pub(crate) background: Option<WriterKind>,
    /// Whether the random writer's file had to be written out first.
    #[serde(default)]
    pub(crate) setup: Setup,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) pressure: Option<PressureNote>,
}

/// A fsync-tester scenario's details as results store them: the [`TesterDetails`] alone
/// (the scenario's [`Lines`], which print them again, are no part of the stored form).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct Recorded<L: Lines + Default> {
    pub(crate) details: TesterDetails,
    #[serde(skip)]
    lines: L,
}

impl<L: Lines + Default> Recorded<L> {
    pub(crate) fn new(details: TesterDetails) -> Self {
        Recorded {
            details,
            lines: L::default(),
        }
    }
}

impl<L: Lines + Default> Views for Recorded<L> {
    fn findings(&self) -> Vec<String> {
        self.details.pressure.iter().map(ToString::to_string).collect()
    }

    fn seed_lines(&self, run: &Measured<'_>) -> Vec<String> {
        self.lines.recorded(&self.details, run)
    }
}

/// A fsync-tester run of one scenario: its configuration, the lines it prints, and how its
/// details are filed.
struct TesterPlan {
    config: TesterConfig,
    lines: &'static (dyn Lines + Sync),
    space_hint: &'static str,
    details: fn(TesterDetails) -> super::Details,
}

/// The plan of a fsync-tester scenario that prints `lines`, says `space_hint` when its
/// files do not fit, and files its details with `details`.
pub(crate) fn plan(
    params: &Params,
    lines: &'static (dyn Lines + Sync),
    space_hint: &'static str,
    details: fn(TesterDetails) -> super::Details,
) -> Result<Box<dyn Plan>> {
    Ok(Box::new(TesterPlan {
        config: TesterConfig::from_params(params)?,
        lines,
        space_hint,
        details,
    }))
}

impl Plan for TesterPlan {
    fn space_needed(&self) -> u64 {
        self.config.space_needed()
    }

    fn space_hint(&self) -> &'static str {
        self.space_hint
    }

    fn expected_duration(&self) -> Option<Duration> {
        Some(self.config.prober.duration).filter(|d| !d.is_zero())
    }

    fn run(&self, ctx: &mut Context<'_>) -> Result<Outcome> {
        let (recorder, background, details) = run(ctx, &self.config, self.lines)?;
        Ok(Outcome {
            recorder,
            background,
            details: (self.details)(details),
        })
    }
}

/// Where a scenario prints its seed lines during a run, and the same lines again from the
/// stored run.
pub(crate) trait Lines {
    /// After the background writer's file is set up, before the writer starts.
    fn before_writer(&self, _cfg: &TesterConfig, _observer: &mut dyn Observer) {}
    /// Once the writer runs.
    fn writer_started(&self, _cfg: &TesterConfig, _observer: &mut dyn Observer) {}
    /// After each iteration.
    fn iteration(&self, it: &Iteration<'_>, observer: &mut dyn Observer);
    /// After the last iteration, with the writer's summary.
    fn done(
        &self,
        cfg: &TesterConfig,
        iterations: u64,
        background: Option<&BackgroundSummary>,
        observer: &mut dyn Observer,
    );
    /// The lines of a stored run (`--format seed`), as the run printed them.
    fn recorded(&self, details: &TesterDetails, run: &Measured<'_>) -> Vec<String>;
}

/// Runs the prober against the background writer, printing the seed's lines as they happen.
pub(crate) fn run(
    ctx: &mut Context<'_>,
    cfg: &TesterConfig,
    lines: &dyn Lines,
) -> Result<(Recorder, Option<BackgroundSummary>, TesterDetails)> {
    let mut prober = Prober::open(ctx.dir, cfg.prober.clone())?;
    let (writer, setup) = cfg.background.prepare(ctx)?;
    let mut recorder = Recorder::new();
    lines.before_writer(cfg, ctx.observer);
    let running = Running::start(writer, ctx.clock, ctx.stop)?;
    lines.writer_started(cfg, ctx.observer);
    let iterations = prober.run(&ctx.clock, ctx.stop, &mut recorder, ctx.observer, |it, obs| {
        lines.iteration(it, obs)
    });
    let background = running.stop();
    lines.done(cfg, iterations, background.as_ref(), ctx.observer);
    let details = TesterDetails {
        iterations,
        background: cfg.background.kind(),
        setup,
        pressure: cfg.background.pressure_note(),
    };
    Ok((recorder, background, details))
}

/// The prober's iterations, from a run's samples: each write with the sync that followed it
/// (the prober records nothing else).
pub(crate) fn iterations(samples: &[Sample]) -> Vec<(Sample, Option<Sample>)> {
    let mut out: Vec<(Sample, Option<Sample>)> = Vec::new();
    for s in samples {
        match out.last_mut() {
            Some((_, sync @ None)) if !s.op.is_write() => *sync = Some(*s),
            _ => out.push((*s, None)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::OpKind;
    use crate::scenario::overwrite_fsync::OVERWRITE_FSYNC;
    use crate::scenario::random_writeback::RANDOM_WRITEBACK;

    #[test]
    fn every_parameter_declared_is_read_and_every_one_read_is_declared() {
        for scenario in [&OVERWRITE_FSYNC, &RANDOM_WRITEBACK] {
            crate::params::assert_declared_and_read::<TesterParams>(&scenario.params());
        }
    }

    fn sample(op: OpKind, t_ns: u64) -> Sample {
        Sample {
            t_ns,
            op,
            latency_ns: 1,
            bytes: 0,
            error: None,
            process: None,
            tid: 0,
        }
    }

    #[test]
    fn iterations_pair_each_write_with_its_sync() {
        let s = [
            sample(OpKind::Write, 0),
            sample(OpKind::Fsync, 1),
            sample(OpKind::Write, 2),
            sample(OpKind::Fsync, 3),
        ];
        let its = iterations(&s);
        assert_eq!(its.len(), 2);
        assert_eq!(its[1].1.map(|x| x.t_ns), Some(3));
        let osync = [sample(OpKind::WriteOsync, 0), sample(OpKind::WriteOsync, 1)];
        assert!(iterations(&osync).iter().all(|(_, sync)| sync.is_none()));
    }
}
