//! The dispatch: each subcommand to its home in [`crate::commands`].

use anyhow::Result;

use crate::cli::{Cli, Command, LoadKind};
use crate::commands::{
    cleanup, compare, exec, explain, export, kernel, list, list_devices, matrix, report, reproduce, run as measure,
    runs, shell, show, store_copy, suite, watch,
};
use crate::compare::expect::Expectation;
use crate::scenario::{load, probe};
use crate::testbed::vm::GuestDisk;

/// Runs the command and returns the process exit status.
pub fn run(cli: Cli) -> Result<i32> {
    if device_help_requested(&cli) {
        print!("{}", crate::testbed::device::profile::listing());
        return Ok(0);
    }
    // A malformed --expect is bad input (exit status 2) before anything runs; with one,
    // whatever stops the run afterwards is "could not be made" (125) for `git bisect run`.
    let expect = match &cli.command {
        Command::Run { common, .. } | Command::Load { common, .. } | Command::Probe { common } => {
            measure::expectations(&common.verdict)?
        }
        Command::Exec(args) => exec::expectations(args)?,
        Command::Suite(args) => suite::verdict::expectations(args)?,
        _ => Vec::new(),
    };
    let judged = !expect.is_empty();
    dispatch(cli, expect).map_err(|e| match judged {
        true => e.context(crate::error::NotMade),
        false => e,
    })
}

/// Runs the command the command line names.
fn dispatch(cli: Cli, expect: Vec<Expectation>) -> Result<i32> {
    if measures_this_machine(&cli.command) {
        if let Some(why) = crate::sys::missing_kernel_mount() {
            return Err(crate::error::Usage(why).into());
        }
    }
    if let Some(code) = on_another_kernel(&cli, &expect)? {
        return Ok(code);
    }
    match cli.command {
        Command::Suite(args) => suite::run(&args, &expect),
        Command::List { scenario, format } => list::list(scenario.as_deref(), format),
        Command::Run { scenario: name, common } => measure::measure(measure::find(&name)?, &common, &expect),
        Command::Load { kind, common } => measure::measure(
            match kind {
                LoadKind::Random => &load::RANDOM,
                LoadKind::Stream => &load::STREAM,
            },
            &common,
            &expect,
        ),
        Command::Probe { common } => measure::measure(&probe::Probe, &common, &expect),
        Command::Show { result, format, store } => show::show(&result, format, store.store.as_deref()),
        Command::Explain { result, store } => explain::explain(&result, store.store.as_deref()),
        Command::Exec(args) => exec::command(&args, &expect),
        Command::ListDevices => list_devices::list_devices(),
        Command::Runs(args) => runs::runs(&args),
        Command::Export(args) => export::export(&args),
        Command::Compare(args) => compare::compare(&args),
        Command::Matrix(args) => matrix::run(&args),
        Command::Report(args) => report::html_page(&args),
        Command::Store { command } => store_copy::run(&command),
        Command::Reproduce(args) => reproduce::run(&args),
        Command::Cleanup => cleanup::cleanup(),
        Command::Completions { shell } => shell::completions(shell),
        Command::Manpages { dir } => shell::manpages(&dir),
        Command::Cell(args) => matrix::cell(&args),
        Command::Watch(args) => watch::watch(&args),
    }
}

/// Whether the command reads this machine's kernel (/proc, /sys): the ones that measure,
/// trace or undo; not those that read the store or print.
fn measures_this_machine(command: &Command) -> bool {
    matches!(
        command,
        Command::Suite(_)
            | Command::Run { .. }
            | Command::Load { .. }
            | Command::Probe { .. }
            | Command::Exec(_)
            | Command::Matrix(_)
            | Command::Reproduce(_)
            | Command::Cleanup
            | Command::Cell(_)
            | Command::Watch(_)
    )
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

/// `--kernel K` (other than `host`) on a command that boots it: the command run inside a
/// guest booting K ([`kernel`]), its exit status; `None` to run here.
fn on_another_kernel(cli: &Cli, expect: &[Expectation]) -> Result<Option<i32>> {
    let command: &[std::ffi::OsString] = match &cli.command {
        Command::Exec(args) => &args.command,
        _ => &[],
    };
    let (target, record, space_needed, writes, guest_disk, expected) = match &cli.command {
        Command::Run { scenario, common } => {
            let planned = crate::run::engine::Planned::new(measure::find(scenario)?, &common.sets)?;
            if common.target.kernel.is_some() {
                planned.check_testbed(&common.target.request()?)?;
            }
            (
                &common.target,
                Some(&common.record),
                planned.plan.space_needed(),
                common.output.as_deref().map(kernel::Writes::File),
                planned.plan.guest_disk(),
                planned.plan.expected_duration(),
            )
        }
        Command::Load { kind, common } => {
            let s: &'static dyn crate::scenario::Scenario = match kind {
                LoadKind::Random => &load::RANDOM,
                LoadKind::Stream => &load::STREAM,
            };
            let planned = crate::run::engine::Planned::new(s, &common.sets)?;
            (
                &common.target,
                Some(&common.record),
                planned.plan.space_needed(),
                common.output.as_deref().map(kernel::Writes::File),
                GuestDisk::Served,
                planned.plan.expected_duration(),
            )
        }
        Command::Probe { common } => {
            let planned = crate::run::engine::Planned::new(&probe::Probe, &common.sets)?;
            (
                &common.target,
                Some(&common.record),
                planned.plan.space_needed(),
                common.output.as_deref().map(kernel::Writes::File),
                GuestDisk::Served,
                planned.plan.expected_duration(),
            )
        }
        Command::Exec(args) => {
            exec::refuse_the_impossible(args)?;
            (
                &args.target,
                args.explain.explain.then_some(&args.record),
                0,
                args.output.as_deref().map(kernel::Writes::File),
                match args.cut.is_some() {
                    true => GuestDisk::Driven,
                    false => GuestDisk::Served,
                },
                None,
            )
        }
        Command::Suite(args) => (
            &args.target,
            Some(&args.record),
            suite::space_needed(args)?,
            args.results.as_deref().map(kernel::Writes::Directory),
            GuestDisk::Served,
            suite::expected_duration(args)?,
        ),
        Command::Matrix(args) => {
            kernel::refuse(&args.target, "matrix")?;
            return Ok(None);
        }
        _ => return Ok(None),
    };
    match kernel::wanted(target)? {
        Some(k) => kernel::run(kernel::GuestRun {
            kernel: k,
            target,
            record,
            space_needed,
            guest_disk,
            expected,
            writes,
            command,
            expect,
            judge: match cli.command {
                Command::Exec(_) => kernel::Judge::Last(exec::judged),
                Command::Suite(_) => kernel::Judge::All(suite::verdict::judged_in_guest),
                _ => kernel::Judge::Last(measure::judge),
            },
        })
        .map(Some),
        None => Ok(None),
    }
}
