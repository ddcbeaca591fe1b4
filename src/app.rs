//! What each subcommand does, from parsed arguments to output and exit status.

use std::io;
use std::path::Path;

use anyhow::Result;

use crate::cli::{Cli, Command, ListFormat, LoadKind, RunArgs};
use crate::engine::{self, Planned};
use crate::error::Usage;
use crate::params::ParamSpec;
use crate::record::Recording;
use crate::report::{self, Live};
use crate::result::write_json_atomically;
use crate::scenario::{self, load, probe, Scenario};
use crate::session::{Opened, Session};
use crate::testbed;

/// Runs the command and returns the process exit status.
pub fn run(cli: Cli) -> Result<i32> {
    if device_help_requested(&cli) {
        print!("{}", crate::testbed::device::profile::listing());
        return Ok(0);
    }
    match cli.command {
        Command::Suite(args) => crate::suite::run(&args),
        Command::List { scenario, format } => list(scenario.as_deref(), format),
        Command::Run { scenario: name, common } => measure(find(&name)?, &common),
        Command::Load { kind, common } => measure(
            match kind {
                LoadKind::Random => &load::RANDOM,
                LoadKind::Stream => &load::STREAM,
            },
            &common,
        ),
        Command::Probe { common } => measure(&probe::Probe, &common),
        Command::Show { result, format, store } => crate::review::show(&result, format, store.store.as_deref()),
        Command::Explain { result, store } => crate::review::explain(&result, store.store.as_deref()),
        Command::Exec(args) => crate::exec::run(&args.target.request()?, &args.command, args.output.as_ref()),
        Command::ListDevices => crate::review::print(&crate::testbed::device::profile::listing()),
        Command::Runs(args) => crate::review::runs(&args),
        Command::Export(args) => crate::review::export(&args),
        Command::Compare(args) => crate::review::compare(&args),
        Command::Matrix(args) => crate::matrix::run(&args),
        Command::Report(args) => crate::review::html_page(&args),
        Command::Cleanup => cleanup(),
    }
}

fn find(name: &str) -> Result<&'static dyn Scenario> {
    scenario::find(name).ok_or_else(|| Usage(format!("unknown scenario '{name}'; valid: {}", scenario::names())).into())
}

/// `--device help` on any command that takes a target: the same listing as `list-devices`.
fn device_help_requested(cli: &Cli) -> bool {
    let target = match &cli.command {
        Command::Suite(a) => &a.target,
        Command::Run { common, .. } | Command::Load { common, .. } | Command::Probe { common } => &common.target,
        Command::Exec(a) => &a.target,
        _ => return false,
    };
    target.device.as_deref() == Some("help")
}

/// Runs one scenario as `args` say, prints it, writes `--output`, and picks the exit status.
fn measure(s: &'static dyn Scenario, args: &RunArgs) -> Result<i32> {
    // Everything that can be refused is refused before anything is made or measured.
    let mut planned = Planned::new(s, &args.sets)?;
    let (explain, explain_note) = args.explain.options()?;
    planned.explain = explain;
    if args.keep && args.target.scratch.is_some() {
        return Err(Usage(
            "--keep has nothing to keep with --scratch: the scratch filesystem is removed after the run; use --dir to keep files"
                .into(),
        )
        .into());
    }
    if let Some(path) = &args.output {
        check_output_file(path)?;
    }
    let request = args.target.request()?;

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
    let mut finished = {
        let mut live = Live::new(exporter.as_mut(), args.quiet, Some(session.stop()));
        let finished = session.measure(&planned, args.keep, &mut live);
        live.finish();
        if live.stdout_closed() {
            // Whoever read our output has gone (`| head`): stop quietly, like a shell tool.
            return Ok(141);
        }
        finished?
    };
    let printed = report::print_stdout(&exporter.render(&finished.result));
    // Recorded before --output is written, so that the file names the stored run.
    let recorded = recording.record_and_say(&mut finished.result);
    if let Some(path) = &args.output {
        write_json_atomically(&finished.result, path)?;
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
    match session.close() {
        Some(sig) if finished.status.exit_code() < 128 => {
            note!("fsynclab: interrupted by signal {sig} after the run; its result is whole and kept");
            Ok(128 + sig)
        }
        _ => Ok(finished.status.exit_code()),
    }
}

/// Refuses, before anything runs, an `--output` that cannot be written: a directory, or a
/// file in a directory that does not exist or is not writable (issue 8: these were found
/// only after measuring, and the measurement was lost).
pub(crate) fn check_output_file(path: &Path) -> Result<(), Usage> {
    let shown = path.display();
    if path.is_dir() {
        return Err(Usage(format!(
            "--output {shown}: is a directory; name a file, e.g. {shown}/result.json"
        )));
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(Usage(format!(
            "--output {shown}: the directory {} does not exist; create it first",
            dir.display()
        )));
    }
    if !crate::sys::writable(dir) {
        return Err(Usage(format!(
            "--output {shown}: cannot write into {} ({}); choose another place",
            dir.display(),
            crate::sys::why_not_writable(dir)
        )));
    }
    // Permission bits do not tell everything (root may write /proc's mode bits, not make a
    // file there): make the file the result will be renamed from, and remove it.
    let probe = dir.join(format!(".fsynclab-output-check-{}", std::process::id()));
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(Usage(format!(
            "--output {shown}: cannot make a file in {} ({}); choose another place",
            dir.display(),
            e
        ))),
    }
}

/// `fsynclab cleanup`: undoes what killed runs left, says what it did and checked, and
/// what is left with why. As root it covers everything runs record in /run/fsynclab; for
/// another user, the work directories their runs recorded.
fn cleanup() -> Result<i32> {
    let Some(dir) = testbed::state::user_state_dir() else {
        return Err(Usage(
            "cleanup: no state directory for this user ($XDG_RUNTIME_DIR is not set); run it as root for scratch filesystems and sysctls".into(),
        )
        .into());
    };
    let outcome = testbed::state::cleanup_leftovers(&dir)?;
    for line in &outcome.undone {
        println!("undone: {line}");
    }
    for pid in &outcome.running {
        println!("left alone: pid {pid} is still running");
    }
    for line in &outcome.failed {
        note!("fsynclab: cleanup: could not undo {line}");
    }
    for line in &outcome.kept {
        note!("fsynclab: cleanup: kept {line}");
    }
    for file in &outcome.kept_files {
        note!(
            "fsynclab: cleanup: {} still records what is left; run `fsynclab cleanup` again once the cause above is gone",
            file.display()
        );
    }
    if outcome.undone.is_empty() && outcome.failed.is_empty() && outcome.kept.is_empty() {
        println!("nothing to clean up");
    }
    Ok(if outcome.failed.is_empty() && outcome.kept.is_empty() {
        0
    } else {
        1
    })
}

fn list(only: Option<&str>, format: ListFormat) -> Result<i32> {
    let scenarios: Vec<&dyn Scenario> = match only {
        Some(name) => vec![find(name)?],
        None => scenario::all(),
    };
    let out = match format {
        ListFormat::Text => list_text(&scenarios),
        ListFormat::Json => serde_json::to_string_pretty(&list_json(&scenarios))? + "\n",
    };
    crate::review::print(&out)
}

fn list_text(scenarios: &[&dyn Scenario]) -> String {
    let mut out = String::new();
    for s in scenarios {
        out.push_str(&format!("{}\n  {}\n  seed {}\n", s.name(), s.purpose(), s.seed()));
        let specs = s.params();
        let w = specs.iter().map(|p| p.name.len()).max().unwrap_or(0);
        let dw = specs.iter().map(|p| p.default.len()).max().unwrap_or(0);
        for p in &specs {
            let seed = p.seed.map(|v| format!(" (seed: {v})")).unwrap_or_default();
            out.push_str(&format!(
                "    {:<w$}  {:<dw$}  [{}] {}{}\n",
                p.name,
                p.default,
                p.unit(),
                p.help,
                seed
            ));
        }
        out.push('\n');
    }
    out.push_str("Set any parameter with --set KEY=VALUE; the seed's values reproduce the original experiment.\n");
    out
}

fn list_json(scenarios: &[&dyn Scenario]) -> serde_json::Value {
    let param = |p: &ParamSpec| {
        serde_json::json!({
            "name": p.name, "default": p.default, "seed": p.seed,
            "unit": p.unit(), "expected": p.kind.expected(), "help": p.help,
        })
    };
    serde_json::Value::Array(
        scenarios
            .iter()
            .map(|s| {
                serde_json::json!({
                    "name": s.name(), "purpose": s.purpose(), "seed": s.seed(),
                    "params": s.params().iter().map(param).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 8, item 9: a bad --output is refused before anything runs.
    #[test]
    fn issue8_output_paths_are_checked_first() {
        let d = tempfile::tempdir().unwrap();
        let err = check_output_file(d.path()).unwrap_err().to_string();
        assert!(err.contains("is a directory"), "{err}");
        let err = check_output_file(Path::new("/nonexistent/x.json"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not exist"), "{err}");
        assert!(check_output_file(&d.path().join("r.json")).is_ok());
    }
}
