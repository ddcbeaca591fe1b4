//! `fsynclab exec --explain`: the command's sync calls, and those of every process and
//! thread it starts, traced in the kernel while it runs ([`crate::explain::command`]), the
//! slowest explained as a scenario's are; once it has exited, the report (the calls by
//! kind, by process name, the slowest with their parts, the timeline) is printed on stderr
//! — stdout is the command's — and the run is recorded in the results store like any run,
//! as scenario `exec`, so that `runs`, `show`, `explain`, `export` and `report` read it.
//!
//! Kept apart from [`super::run`], which calls it at three points: before the testbed is
//! used (the store is opened and checked), just before the command starts (tracing
//! starts), and once it and what it left have ended (tracing stops, the result is made).

use std::path::PathBuf;

use anyhow::Result;

use crate::environment::Fingerprint;
use crate::explain::command::{CommandTrace, TracedCommand};
use crate::explain::run::ExplainOptions;
use crate::measure::{Recorder, RunClock};
use crate::recording::Recording;
use crate::result::{now_rfc3339, RunResult, SCHEMA_VERSION};
use crate::run::cell::{self, Say};
use crate::scenario::traced_command::{Details, SCENARIO};

/// What `exec --explain` was asked for.
pub(crate) struct Request {
    pub(crate) options: ExplainOptions,
    pub(crate) store: Option<PathBuf>,
    pub(crate) no_store: bool,
}

/// An explained command before it starts: where its run will be recorded.
pub(crate) struct Explained {
    options: ExplainOptions,
    recording: Recording,
}

/// An explained command running.
pub(crate) struct Running {
    trace: CommandTrace,
    clock: RunClock,
    started_at: String,
}

impl Explained {
    /// Opens the results store (refused in one line when it cannot take the run).
    pub(crate) fn prepare(request: Request) -> Result<Explained> {
        let recording = Recording::open(request.store.as_deref(), request.no_store)?;
        Ok(Explained {
            options: request.options,
            recording,
        })
    }

    /// Starts tracing what the calling thread starts next (the command), on `dir`'s
    /// filesystem; call it just before the command is spawned, after every thread of
    /// fsynclab's own is (a thread started later would be traced as the command's).
    pub(crate) fn start(&self, dir: &std::path::Path) -> Result<Running> {
        let clock = RunClock::start();
        let started_at = now_rfc3339();
        let trace = CommandTrace::start(&self.options, dir, clock)?;
        Ok(Running {
            trace,
            clock,
            started_at,
        })
    }

    /// Makes the result of the traced run, prints its report on stderr, records it, and
    /// returns it.
    pub(crate) fn finish(
        mut self,
        running: Running,
        command: &[String],
        exit_status: i32,
        interrupted: bool,
        environment: Fingerprint,
    ) -> Result<RunResult> {
        let duration_s = running.clock.elapsed().as_secs_f64();
        let traced = running.trace.finish();
        let mut result = result_of(
            traced,
            command,
            exit_status,
            interrupted,
            environment,
            duration_s,
            running.started_at,
        );
        // On stderr, as `note!` writes: stdout is the command's own, and a closed stderr must
        // not panic before the run is recorded.
        let text = crate::report::exporter(crate::cli::Format::Text, false).render(&result);
        let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
        cell::record(&mut self.recording, &mut result, None, Say::Stored)?;
        Ok(result)
    }
}

/// The run as a result of scenario `exec`.
fn result_of(
    traced: TracedCommand,
    command: &[String],
    exit_status: i32,
    interrupted: bool,
    environment: Fingerprint,
    duration_s: f64,
    started_at: String,
) -> RunResult {
    let mut recorder = Recorder::new();
    for s in &traced.samples {
        recorder.record_sample(*s);
    }
    let (ops, samples) = recorder.into_parts();
    let details = Details::new(command.to_vec(), exit_status, &samples);
    let mut result = RunResult {
        schema_version: SCHEMA_VERSION,
        scenario: SCENARIO.to_string(),
        started_at,
        duration_s,
        interrupted,
        params: [("command".to_string(), command.join(" "))].into_iter().collect(),
        environment,
        ops,
        samples,
        background: None,
        tables: Vec::new(),
        findings: Vec::new(),
        details: Some(crate::scenario::Details::Exec(details)),
        figures: Default::default(),
        timeline: Some(traced.timeline),
        explain: Some(traced.explanation),
        stored: None,
        extra: Default::default(),
    };
    result.render_views();
    result
}
