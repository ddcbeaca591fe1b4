//! What each subcommand does, from parsed arguments to output and exit status.

use std::io::Write;

use anyhow::Result;

use crate::cli::{Cli, Command, ListFormat, LoadKind, RunArgs};
use crate::engine::{self, Setup};
use crate::error::Usage;
use crate::params::ParamSpec;
use crate::report::{self, Live};
use crate::result::{write_json_atomically, RunResult};
use crate::role::stop::Stop;
use crate::scenario::{self, load, probe, Scenario};
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
        Command::Run { scenario: name, common } => {
            let s = scenario::find(&name)
                .ok_or_else(|| Usage(format!("unknown scenario '{name}'; valid: {}", scenario::names())))?;
            measure(s, &common)
        }
        Command::Load { kind, common } => measure(
            if kind == LoadKind::Random {
                &load::RANDOM
            } else {
                &load::STREAM
            },
            &common,
        ),
        Command::Probe { common } => measure(&probe::Probe, &common),
        Command::Exec(args) => crate::exec::run(&args.target, &args.command, args.output.as_ref()),
        Command::ListDevices => {
            print!("{}", crate::testbed::device::profile::listing());
            Ok(0)
        }
        Command::Cleanup => cleanup(),
    }
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
fn measure(s: &dyn Scenario, args: &RunArgs) -> Result<i32> {
    let params = engine::resolve(s, &args.sets)?;
    if args.keep && args.target.scratch.is_some() {
        return Err(Usage(
            "--keep has nothing to keep with --scratch: the scratch filesystem is removed after the run; use --dir to keep files"
                .into(),
        )
        .into());
    }
    let stop = Stop::on_signals()?;
    let target = match testbed::prepare_for(&args.target, s.space_needed(&params)) {
        // Ctrl-C reaches the mkfs or mount we were waiting for: say so rather than its error.
        Err(_) if stop.signal().is_some() => {
            let sig = stop.signal().unwrap_or(2);
            eprintln!("fsynclab: interrupted by signal {sig} while preparing the target; what was set up is undone");
            return Ok(128 + sig);
        }
        r => r?,
    };
    if let Some(sig) = stop.signal() {
        eprintln!("fsynclab: interrupted by signal {sig} while preparing the target; nothing was measured");
        return Ok(128 + sig);
    }
    let flushes_before = target.flushes();
    let mut exporter = report::exporter(args.format);
    let result = {
        let mut live = Live::new(exporter.as_mut(), args.quiet);
        let setup = Setup {
            dir: target.dir(),
            keep: args.keep,
            stop: &stop,
        };
        let result = engine::execute(s, &params, &setup, &mut live);
        live.finish();
        let mut result = result?;
        target.annotate(&mut result, flushes_before);
        result
    };
    print!("{}", exporter.render(&result));
    std::io::stdout().flush()?;
    if let Some(path) = &args.output {
        write_json_atomically(&result, path)?;
    }
    if args.keep {
        eprintln!("fsynclab: kept the work directory {}", result.environment.target);
    }
    Ok(exit_status(&result, &stop))
}

/// `fsynclab cleanup`: undoes what killed runs left, says what it did.
fn cleanup() -> Result<i32> {
    if !crate::sys::is_root() {
        return Err(Usage("cleanup undoes mounts and loop devices: run it as root".into()).into());
    }
    let report = testbed::state::cleanup_leftovers(std::path::Path::new(testbed::state::STATE_DIR))?;
    for line in &report.undone {
        println!("undone: {line}");
    }
    for pid in &report.running {
        println!("left alone: pid {pid} is still running");
    }
    for line in &report.failed {
        eprintln!("fsynclab: cleanup: could not undo {line}");
    }
    if report.undone.is_empty() && report.failed.is_empty() {
        println!("nothing to clean up");
    }
    Ok(if report.failed.is_empty() { 0 } else { 1 })
}

fn exit_status(result: &RunResult, stop: &Stop) -> i32 {
    if let Some(sig) = stop.signal() {
        eprintln!("fsynclab: interrupted by signal {sig}; the result above covers the run until then");
        return 128 + sig;
    }
    let errors = result.errors() + result.background.as_ref().map_or(0, |b| b.errors);
    if errors > 0 {
        let first = result.samples.iter().find(|s| s.error.is_some());
        let what = match (first, &result.background) {
            (Some(s), _) => format!(
                "first: {} from {} at {:.3} s",
                s.error.as_deref().unwrap_or("?"),
                s.op,
                s.t_ns as f64 / 1e9
            ),
            (None, Some(b)) => format!(
                "the background writer stopped with {}",
                b.error.as_deref().unwrap_or("?")
            ),
            _ => String::new(),
        };
        eprintln!("fsynclab: {errors} calls failed ({what}); the result records each");
        return 1;
    }
    0
}

fn list(only: Option<&str>, format: ListFormat) -> Result<i32> {
    let scenarios: Vec<&dyn Scenario> = match only {
        Some(name) => vec![scenario::find(name)
            .ok_or_else(|| Usage(format!("unknown scenario '{name}'; valid: {}", scenario::names())))?],
        None => scenario::all(),
    };
    let out = match format {
        ListFormat::Text => list_text(&scenarios),
        ListFormat::Json => serde_json::to_string_pretty(&list_json(&scenarios))? + "\n",
    };
    print!("{out}");
    Ok(0)
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
