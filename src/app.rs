//! The dispatch: each subcommand to its home in [`crate::commands`].

use anyhow::Result;

use crate::cli::{Cli, Command, LoadKind};
use crate::commands::run::Measured;
use crate::commands::{
    cleanup, compare, exec, explain, export, list, list_devices, matrix, report, reproduce, run as measure, runs,
    shell, show, store_copy, suite, watch,
};
use crate::scenario::{load, probe};

/// Runs the command the command line names; returns the process exit status.
pub fn run(cli: Cli) -> Result<i32> {
    if measures_this_machine(&cli.command) {
        if let Some(why) = crate::sys::missing_kernel_mount() {
            return Err(crate::error::Usage(why).into());
        }
    }
    match cli.command {
        Command::Suite(args) => suite::command(&args),
        Command::List { scenario, format } => list::list(scenario.as_deref(), format),
        Command::Run { scenario, common } => measure::command(Measured::Scenario(&scenario), &common),
        Command::Load { kind, common } => measure::command(
            Measured::Planned(match kind {
                LoadKind::Random => &load::RANDOM,
                LoadKind::Stream => &load::STREAM,
            }),
            &common,
        ),
        Command::Probe { common } => measure::command(Measured::Planned(&probe::PROBE), &common),
        Command::Show { result, format, store } => show::show(&result, format, store.store.as_deref()),
        Command::Explain { result, store } => explain::explain(&result, store.store.as_deref()),
        Command::Exec(args) => exec::command(&args),
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
