//! The one run path `run`, `load`, `probe` and `suite` share, in named phases:
//! plan (parameters → typed plan) → work directory → preflight → fingerprint → measurement →
//! result (the testbed's figures, tables and findings rendered) → status.
//!
//! The work directory is removed on every way out (it is dropped here), and a run ended by
//! a signal still returns what it measured, marked `interrupted`. On a scratch filesystem,
//! what the kernel logged about its device is kept, and after failures the state the
//! filesystem is left in (read-only, shut down). Around the measurement,
//! the writeback timeline is sampled and, with `--explain`, the kernel traced
//! ([`crate::explain::run`]); the slow calls are explained once it ends.

use std::fmt;

use anyhow::Result;

use crate::environment;
use crate::explain::run::Explaining;
use crate::measure::RunClock;
use crate::observe::Observer;
use crate::result::{now_rfc3339, RunResult, SCHEMA_VERSION};
pub(crate) use crate::scenario::planned::Planned;
use crate::scenario::Context;
use crate::stop::Stop;
use crate::testbed::{workdir, Prepared, WorkDir};

/// How a run ended, when it produced a result.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Status {
    Ok,
    /// Some calls failed; each is recorded in the result.
    Errors {
        count: u64,
        first: String,
    },
    /// A signal ended the run early.
    Interrupted(i32),
    /// The scenario's own verdict: the run measured what it should not (an acknowledged
    /// write lost at a power cut).
    Failed(String),
}

impl Status {
    fn of(result: &RunResult, stop: &Stop) -> Status {
        match stop.signal() {
            Some(sig) => Status::Interrupted(sig),
            None => Status::of_result(result),
        }
    }

    /// How a whole run ended by its result alone: a run made in a guest, which the host
    /// reads back.
    pub(crate) fn of_result(result: &RunResult) -> Status {
        let views = result.details.as_ref().map(|d| d.views());
        if let Some(why) = views.and_then(|v| v.failure()) {
            return Status::Failed(why);
        }
        let count = result.all_errors();
        if count <= views.map_or(0, |v| v.expected_errors()) {
            return Status::Ok;
        }
        let first = match (result.samples.iter().find(|s| s.error.is_some()), &result.background) {
            (Some(s), _) => format!(
                "first: {} from {} at {:.3} s",
                s.error.map(|e| e.name()).unwrap_or_default(),
                s.op,
                s.t_ns as f64 / 1e9
            ),
            (None, Some(b)) => format!(
                "the background writer stopped with {}",
                b.error.map(|e| e.name()).unwrap_or_else(|| "a panic".into())
            ),
            _ => String::new(),
        };
        Status::Errors { count, first }
    }

    /// The process exit status: 0, 1 when calls failed, 128 + the signal.
    pub(crate) fn exit_code(&self) -> i32 {
        match self {
            Status::Ok => 0,
            Status::Errors { .. } | Status::Failed(_) => 1,
            Status::Interrupted(sig) => 128 + sig,
        }
    }

    /// The word summary.json uses.
    pub(crate) fn word(&self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Errors { .. } => "errors",
            Status::Failed(_) => "verdict",
            Status::Interrupted(_) => "interrupted",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Status::Ok => write!(f, "ok"),
            Status::Failed(why) => write!(f, "{why}"),
            Status::Errors { count, first } => {
                write!(f, "{count} calls failed ({first}); the result records each")
            }
            Status::Interrupted(sig) => {
                write!(f, "interrupted by signal {sig}; the result covers the run until then")
            }
        }
    }
}

/// A finished run: its result and how it ended.
pub(crate) struct Finished {
    pub(crate) result: RunResult,
    pub(crate) status: Status,
}

/// Runs `planned` in a new work directory on `testbed`.
pub(crate) fn run(
    planned: &Planned,
    testbed: &Prepared,
    keep: bool,
    stop: &Stop,
    observer: &mut dyn Observer,
) -> Result<Finished> {
    let plan = planned.plan.as_ref();

    // Work directory, and a preflight that refuses before anything is written if the
    // files would not fit.
    let work = WorkDir::create(testbed.dir(), keep)?;
    workdir::preflight(testbed.dir(), plan.space_needed(), plan.space_hint())?;

    // Fingerprint of the filesystem the work directory is on, and of the testbed.
    let mut environment = environment::fingerprint(work.path());
    testbed.annotate_environment(&mut environment);
    let flushes_before = testbed.flushes();
    let kernel_log = testbed.kernel_log();

    // Measurement.
    let started_at = now_rfc3339();
    let clock = RunClock::start();
    let mut ctx = Context {
        dir: work.path(),
        clock,
        stop,
        observer,
        testbed,
    };
    let explaining = Explaining::start(&planned.explain, work.path(), clock, plan.untraceable_calls())?;
    let outcome = plan.run(&mut ctx)?;
    let duration_s = clock.elapsed().as_secs_f64();
    let (ops, samples) = outcome.recorder.into_parts();
    let (timeline, explain) = explaining.finish(&samples);

    // Result: the samples, the testbed's flush count, then the rendered tables and findings.
    let mut result = RunResult {
        schema_version: SCHEMA_VERSION,
        scenario: planned.scenario.name().to_string(),
        started_at,
        duration_s,
        interrupted: stop.signal().is_some(),
        params: planned.params.to_text_map(),
        environment,
        ops,
        samples,
        background: outcome.background,
        tables: Vec::new(),
        findings: Vec::new(),
        details: Some(outcome.details),
        figures: Default::default(),
        timeline,
        explain,
        stored: None,
        extra: Default::default(),
    };
    let sync_calls = result.sync_calls();
    testbed.count_flushes(&mut result.environment, flushes_before, sync_calls);
    let disk_failed = result
        .environment
        .device_profile
        .as_ref()
        .and_then(|p| p.activity.as_ref())
        .is_some_and(|a| a.failed_writes + a.failed_reads + a.failed_flushes + a.refused_after_cut > 0);
    let failed = disk_failed || result.all_errors() > 0;
    testbed.note_after_run(&mut result.environment, kernel_log, failed);
    result.render_views();
    result.findings.extend(
        testbed
            .sysctl_finding(&result.environment)
            .map(crate::result::Finding::SysctlsChanged),
    );
    let status = Status::of(&result, stop);
    Ok(Finished { result, status })
}
