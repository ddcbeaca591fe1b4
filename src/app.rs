//! What each subcommand does, from parsed arguments to output and exit status.

use std::io;

use anyhow::Result;

use crate::cli::{Cli, Command, ListFormat, LoadKind, RunArgs};
use crate::error::Usage;
use crate::params::ParamSpec;
use crate::recording::Recording;
use crate::report::{self, Live};
use crate::run::engine::{self, Planned};
use crate::run::session::{Opened, Session};
use crate::scenario::{self, load, probe, Scenario};
use crate::testbed;

/// Runs the command and returns the process exit status.
pub fn run(cli: Cli) -> Result<i32> {
    if device_help_requested(&cli) {
        print!("{}", crate::testbed::device::profile::listing());
        return Ok(0);
    }
    match cli.command {
        Command::Suite(args) => crate::commands::suite::run(&args),
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
        Command::Show { result, format, store } => crate::commands::show::show(&result, format, store.store.as_deref()),
        Command::Explain { result, store } => crate::commands::show::explain(&result, store.store.as_deref()),
        Command::Exec(args) => exec(&args),
        Command::ListDevices => crate::commands::show::print(&crate::testbed::device::profile::listing()),
        Command::Runs(args) => crate::commands::runs::runs(&args),
        Command::Export(args) => crate::commands::show::export(&args),
        Command::Compare(args) => crate::commands::compare::compare(&args),
        Command::Matrix(args) => crate::commands::matrix::run(&args),
        Command::Report(args) => crate::commands::report::html_page(&args),
        Command::Store { command } => crate::commands::store_copy::run(&command),
        Command::Reproduce(args) => crate::commands::reproduce::run(&args),
        Command::Cleanup => cleanup(),
    }
}

fn find(name: &str) -> Result<&'static dyn Scenario> {
    scenario::find(name).ok_or_else(|| Usage(format!("unknown scenario '{name}'; valid: {}", scenario::names())).into())
}

/// `fsynclab exec`: everything that can be refused is refused before the testbed is made.
fn exec(args: &crate::cli::ExecArgs) -> Result<i32> {
    // What the command line asks for that cannot be done, whatever the machine.
    crate::commands::exec::program_of(&args.command)?;
    if !args.explain.explain && (args.record.store.is_some() || args.record.no_store) {
        let flag = if args.record.no_store { "--no-store" } else { "--store" };
        return Err(Usage(format!(
            "exec {flag}: exec records a run only with --explain; add --explain, or leave {flag} out"
        ))
        .into());
    }
    if args.explain.explain && args.cut.is_some() {
        // The cut's watcher, the recovery and the check run beside the command and would be
        // traced as its own.
        return Err(Usage(
            "exec: --explain and --cut do not go together yet: run the power cut without --explain, or explain the command without --cut"
                .into(),
        )
        .into());
    }
    let request = args.target.request()?;
    let cut = crate::commands::exec::CutOptions::read(args.cut.as_deref(), args.check.as_deref(), &request)?;
    let explain = args
        .explain
        .options()?
        .map(|options| crate::commands::exec::ExplainRequest {
            options,
            store: args.record.store.clone(),
            no_store: args.record.no_store,
        });
    crate::commands::exec::run(&request, &args.command, args.output.as_ref(), cut.as_ref(), explain)
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
    match session.close() {
        Some(sig) if finished.status.exit_code() < 128 => {
            note!("fsynclab: interrupted by signal {sig} after the run; its result is whole and kept");
            Ok(128 + sig)
        }
        _ => Ok(finished.status.exit_code()),
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
    crate::commands::show::print(&out)
}

fn list_text(scenarios: &[&dyn Scenario]) -> String {
    let mut out = String::new();
    for s in scenarios {
        out.push_str(&format!("{}\n  {}\n  seed {}\n", s.name(), s.purpose(), s.seed()));
        if !scenario::in_suite(*s) {
            out.push_str(&format!(
                "  not in `fsynclab suite`: run it with `fsynclab run {}`\n",
                s.name()
            ));
        }
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
                    "in_suite": scenario::in_suite(*s),
                    "params": s.params().iter().map(param).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}
