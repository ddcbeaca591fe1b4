//! Runs one scenario from start to end, in named phases:
//! parameters → checks → work directory → fingerprint → measurement → result.
//! The work directory is removed on every way out (it is dropped here), and a run ended
//! by a signal still returns what it measured, marked `interrupted`.

use std::path::Path;

use anyhow::Result;

use crate::environment;
use crate::measure::RunClock;
use crate::observe::Observer;
use crate::params::Params;
use crate::result::{now_rfc3339, RunResult, SCHEMA_VERSION};
use crate::role::stop::Stop;
use crate::scenario::{Context, Scenario};
use crate::testbed::{workdir, WorkDir};

/// Where and how a run happens.
pub struct Setup<'a> {
    /// The directory under test (`--dir`).
    pub dir: &'a Path,
    /// Keep the work directory afterwards (`--keep`).
    pub keep: bool,
    pub stop: &'a Stop,
}

/// Parameters from the scenario's defaults and `--set`, checked together.
pub fn resolve(scenario: &dyn Scenario, sets: &[String]) -> Result<Params> {
    let params = Params::resolve(scenario.name(), &scenario.params(), sets)?;
    scenario.validate(&params)?;
    Ok(params)
}

pub fn execute(
    scenario: &dyn Scenario,
    params: &Params,
    setup: &Setup<'_>,
    observer: &mut dyn Observer,
) -> Result<RunResult> {
    // Checks: refuse before creating anything if the files would not fit.
    let work = WorkDir::create(setup.dir, setup.keep)?;
    workdir::preflight(setup.dir, scenario.space_needed(params), scenario.space_hint())?;

    // Fingerprint of the filesystem the work directory is on.
    let environment = environment::fingerprint(work.path());

    // Measurement.
    let started_at = now_rfc3339();
    let clock = RunClock::start();
    let mut ctx = Context {
        dir: work.path(),
        clock,
        stop: setup.stop,
        observer,
    };
    let outcome = scenario.run(&mut ctx, params)?;
    let duration_s = clock.elapsed().as_secs_f64();

    // Result.
    let (ops, samples) = outcome.recorder.into_parts();
    Ok(RunResult {
        schema_version: SCHEMA_VERSION,
        scenario: scenario.name().to_string(),
        started_at,
        duration_s,
        interrupted: setup.stop.signal().is_some(),
        params: params.to_text_map(),
        environment,
        ops,
        samples,
        background: outcome.background,
        tables: outcome.tables,
        findings: outcome.findings,
    })
}
