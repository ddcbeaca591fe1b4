//! Looking at results after the fact: `fsynclab runs` lists the store, `show` prints a run
//! again, `export` writes it out, `compare` sets two groups of runs against each other and
//! `report` draws them in HTML.
//!
//! - [`select`]: what names runs on the command line (`42`, `3-7`, `m3:device=ram`, files)
//! - [`listing`]: the `runs` table; [`compare`]: the `compare` command; [`html_page`]: the
//!   `report` command's HTML page
//!
//! `show` and `export` are here: a run read from the store or a file, printed or written.

use std::io::{self, Write};
use std::path::Path;

use anyhow::Result;

use crate::cli::{ExportArgs, ExportFormat, Format};
use crate::error::Usage;
use crate::recording;
use crate::result::RunResult;
use crate::store::{RunId, Store};

/// The exit status after writing `text` to stdout: 141 when its reader went away.
pub(crate) fn print(text: &str) -> Result<i32> {
    match crate::report::print_stdout(text) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(141),
        r => r.map(|()| 0).map_err(Into::into),
    }
}

/// `fsynclab show RUN|FILE`: a stored run or a saved result printed again, in any format.
pub(crate) fn show(what: &Path, format: Format, store: Option<&Path>) -> Result<i32> {
    let result = if what.is_file() {
        let mut result = RunResult::load(what)?;
        samples_from_store(&mut result, format)?;
        result
    } else {
        let id = run_id(&what.to_string_lossy(), "show")?;
        let (store, _) = recording::open_for_reading(store)?;
        recording::result_of(recording::read_run(&store, id)?)?
    };
    if format == Format::Seed && result.details.is_none() {
        return Err(Usage(format!(
            "{}: this result has no details to print the seed format from (an older fsynclab wrote it); rerun it with this version",
            what.display()
        ))
        .into());
    }
    print(&crate::report::exporter(format, false).render(&result))
}

/// `fsynclab explain RUN|FILE`: the slow calls of a stored run or a saved result, each with
/// every part of its time, the timeline in one line, and the failed calls on it.
pub(crate) fn explain(what: &Path, store: Option<&Path>) -> Result<i32> {
    let result = if what.is_file() {
        RunResult::load(what)?
    } else {
        let id = run_id(&what.to_string_lossy(), "explain")?;
        let (store, _) = recording::open_for_reading(store)?;
        recording::result_of(recording::read_run(&store, id)?)?
    };
    let mut text = format!("{}  started {}\n", result.scenario, result.started_at);
    match &result.explain {
        Some(e) => text.push_str(&crate::explain::text::full(e)),
        None => text.push_str("no calls explained: the run was not traced (rerun as root with --explain)\n"),
    }
    let failures = crate::report::failures::lines(&result);
    if result.timeline.is_some() || !failures.is_empty() {
        text.push('\n');
    }
    if let Some(t) = &result.timeline {
        text.push_str(&crate::explain::text::timeline_line(t));
    }
    for line in failures {
        text.push_str(&line);
        text.push('\n');
    }
    print(&text)
}

/// A result file without its samples (a suite's, whose samples are in the store) gets them
/// from the run it names, when the format prints calls and the store still has the run.
fn samples_from_store(result: &mut RunResult, format: Format) -> Result<()> {
    let Some(at) = result
        .stored
        .clone()
        .filter(|_| result.samples.is_empty() && format != Format::Text)
    else {
        return Ok(());
    };
    let at_store = crate::store::Location::parse(Path::new(&at.store));
    let found = at_store
        .as_file()
        .is_none_or(Path::is_file)
        .then(|| Store::open_read_only(&at_store).ok())
        .flatten()
        .and_then(|store| store.run(RunId(at.run)).ok())
        .filter(|run| run.uid == at.uid);
    match found {
        Some(run) => {
            result.samples = recording::samples_of(&run.samples).map_err(|e| anyhow::anyhow!("run {}: {e}", at.run))?;
            Ok(())
        }
        None => Err(Usage(format!(
            "this file leaves its samples to run {} of the results store {}, which no longer has it; `--format text` prints the file alone",
            at.run, at.store
        ))
        .into()),
    }
}

/// A run id typed for `command`, or a one-line error saying what is expected.
pub(crate) fn run_id(text: &str, command: &str) -> Result<RunId, Usage> {
    text.parse::<RunId>().map_err(|_| {
        Usage(format!(
            "{command} {text}: neither a file nor a run id; `fsynclab runs` lists the stored runs"
        ))
    })
}

/// `fsynclab export RUN`: the run as its JSON result, or its samples as CSV, streamed to a
/// file (atomically) or stdout.
pub(crate) fn export(args: &ExportArgs) -> Result<i32> {
    let id = run_id(&args.run, "export")?;
    let (store, store_path) = recording::open_for_reading(args.store.store.as_deref())?;
    if let Some(path) = &args.output {
        crate::named_file::check(path, store_path.as_file())?;
    }
    let run = recording::read_run(&store, id)?;
    let write = |out: &mut dyn Write| -> Result<()> {
        match args.format {
            ExportFormat::Json => {
                run.write_result_json(&mut *out, false)?;
                out.write_all(b"\n")?;
            }
            ExportFormat::Csv => run.samples.write_csv(&mut *out)?,
        }
        Ok(out.flush()?)
    };
    match &args.output {
        Some(path) => {
            crate::named_file::write(path, store_path.as_file(), |out| write(out))?;
            note!("run {id}: {} calls written to {}", run.samples.len(), path.display());
            Ok(0)
        }
        None => {
            let stdout = io::stdout();
            let mut out = io::BufWriter::with_capacity(1 << 20, stdout.lock());
            match write(&mut out) {
                Err(e)
                    if e.downcast_ref::<io::Error>()
                        .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe) =>
                {
                    Ok(141)
                }
                Err(e)
                    if e.downcast_ref::<serde_json::Error>()
                        .and_then(|e| e.io_error_kind())
                        .is_some_and(|k| k == io::ErrorKind::BrokenPipe) =>
                {
                    Ok(141)
                }
                r => r.map(|()| 0),
            }
        }
    }
}
