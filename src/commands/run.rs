//! `fsynclab run`, `load` and `probe`: one scenario measured as the command line says,
//! printed, recorded in the results store, written to `--output`, with the exit status the
//! run came to, or with `--expect` the verdict on its figures.

use std::io;

use anyhow::Result;

use super::kernel;
use crate::cli::RunArgs;
use crate::compare::expect::{self, Expectation};
use crate::error::{Usage, NOT_MADE};
use crate::recording::Recording;
use crate::report;
use crate::result::RunResult;
use crate::run::cell::{self, Say};
use crate::run::engine::{self, Planned};
use crate::run::on_kernel::{Judge, Needs, Writes};
use crate::run::session::{Opened, Session};
use crate::scenario::{self, Scenario};

/// What `run`, `load` and `probe` measure.
pub(crate) enum Measured<'a> {
    /// `run SCENARIO`: a scenario by name, found once the line is read.
    Scenario(&'a str),
    /// `load` and `probe`: their own scenario.
    Planned(&'static Scenario),
}

/// `run`, `load` and `probe`: their line read ([`super::measuring`]), then [`measure`].
pub(crate) fn command(what: Measured, args: &RunArgs) -> Result<i32> {
    super::measuring(
        &args.target,
        || expectations(&args.verdict),
        |expect| {
            let scenario = match what {
                Measured::Scenario(name) => find(name)?,
                Measured::Planned(s) => s,
            };
            measure(scenario, args, expect)
        },
    )
}

/// The scenario `name` names, or a usage error listing the valid names.
pub(crate) fn find(name: &str) -> Result<&'static Scenario> {
    scenario::find(name).ok_or_else(|| Usage(format!("unknown scenario '{name}'; valid: {}", scenario::names())).into())
}

/// The `--expect` expressions, read; a malformed one is a usage error.
pub(crate) fn expectations(args: &crate::cli::VerdictArgs) -> Result<Vec<Expectation>, Usage> {
    args.expect
        .iter()
        .map(|e| Expectation::parse(e).map_err(Usage))
        .collect()
}

/// The exit status `--expect` gives a run that ended with `code` (0 clean, 1 with failed
/// calls, 128 + N stopped by signal N): each expectation's line on stderr, then 0 when all
/// are met, 1 when one is not or calls failed, 125 when a figure is missing.
pub(crate) fn judge(expect: &[Expectation], result: &RunResult, code: i32) -> i32 {
    if code >= 128 {
        return code;
    }
    let figures = match crate::compare::run_figures("the run", result) {
        Ok(f) => f,
        Err(e) => {
            note!("fsynclab: --expect: {e}");
            return NOT_MADE;
        }
    };
    let (lines, all_met) = expect::verdict(expect, &figures);
    for line in lines {
        note!("{line}");
    }
    match (code, all_met) {
        (_, None) => NOT_MADE,
        (0, Some(true)) => 0,
        (0, Some(false)) => 1,
        _ => {
            note!("fsynclab: --expect: calls failed in the run, so it does not meet what was expected");
            1
        }
    }
}

/// Runs one scenario as `args` say, prints it, writes `--output`, and picks the exit
/// status: the run's own, or with `expect` the verdict on its figures ([`judge`]).
pub(crate) fn measure(s: &'static Scenario, args: &RunArgs, expect: &[Expectation]) -> Result<i32> {
    let mut planned = Planned::new(s, &args.sets)?;
    // On another kernel (`--kernel`), the whole command runs in a guest.
    if args.target.kernel.is_some() {
        planned.check_testbed(&args.target.request()?)?;
    }
    let needs = Needs {
        space_needed: planned.plan.space_needed(),
        guest_disk: planned.plan.guest_disk(),
        expected: planned.plan.expected_duration(),
        writes: args.output.as_deref().map(Writes::File),
        command: &[],
        expect,
        judge: Judge::Last(judge),
    };
    if let Some(code) = kernel::on_kernel(&args.target, Some(&args.record), needs)? {
        return Ok(code);
    }
    // Everything that can be refused is refused before anything is made or measured.
    let (explain, explain_note) = args.explain.options()?;
    planned.explain = explain;
    if args.keep && args.target.scratch.is_some() {
        return Err(Usage(
            "--keep has nothing to keep with --scratch: the scratch filesystem is removed after the run; use --dir to keep files"
                .into(),
        )
        .into());
    }
    // The store in use, which --output must not name.
    let store = crate::recording::store_path(args.record.store.as_deref(), args.record.no_store)?;
    if let Some(path) = &args.output {
        crate::named_file::check(path, store.as_ref().and_then(|s| s.as_file()))?;
    }
    let request = args.target.request()?;
    planned.check_testbed(&request)?;

    let session = match Session::open(&request, planned.plan.space_needed(), "nothing was measured")? {
        Opened::Ready(s) => s,
        Opened::Interrupted(sig) => return Ok(128 + sig),
    };
    // The store is opened once the target is (a missing root is the first thing to say),
    // and before anything is measured.
    let mut recording = Recording::open(args.record.store.as_deref(), args.record.no_store)?;

    if let Some(note) = explain_note.filter(|_| !args.quiet) {
        note!("{note}");
    }
    let mut exporter = report::exporter(args.format, true);
    let shown = session.measure_shown(&planned, args.keep, exporter.as_mut(), args.quiet, true);
    if shown.stdout_closed {
        // Whoever read our output has gone (`| head`): stop quietly, like a shell tool.
        return Ok(141);
    }
    let mut finished = shown.finished?;
    let printed = report::print_stdout(&exporter.render(&finished.result));
    // Recorded before --output is written, so that the file names the stored run.
    let recorded = cell::record(&mut recording, &mut finished.result, None, Say::Stored);
    if let Some(path) = &args.output {
        crate::named_file::write_json(&finished.result, path, store.as_ref().and_then(|s| s.as_file()))?;
    }
    recorded?;
    if let Err(e) = printed {
        return match (&finished.status, e.kind()) {
            (_, io::ErrorKind::BrokenPipe) => Ok(141),
            // The terminal that sent SIGHUP is gone, and the output with it: the signal is
            // the news.
            (engine::Status::Interrupted(_), _) => Ok(finished.status.exit_code()),
            _ => Err(anyhow::Error::new(e).context("cannot write the result to stdout")),
        };
    }
    if args.keep {
        note!(
            "fsynclab: kept the work directory {}",
            finished.result.environment.target
        );
    }
    // A tracer asked for explicitly that could not follow the calls says why.
    if args.explain.explain {
        for n in finished.result.explain.iter().flat_map(|e| &e.notes) {
            note!("fsynclab: {n}");
        }
    }
    if finished.status != engine::Status::Ok {
        note!("fsynclab: {}", finished.status);
    }
    // A signal after the measurement (while printing, recording or undoing the testbed)
    // still ends the command as a signal does; the result above is whole.
    let code = match session.close() {
        Some(sig) if finished.status.exit_code() < 128 => {
            note!("fsynclab: interrupted by signal {sig} after the run; its result is whole and kept");
            128 + sig
        }
        _ => finished.status.exit_code(),
    };
    Ok(match expect.is_empty() {
        true => code,
        false => judge(expect, &finished.result, code),
    })
}
