//! One home per subcommand: each module reads its arguments and does what the command
//! says, from parsed arguments to output and exit status. `app` only dispatches to them.
//!
//! - measuring: [`run`] (`run`, `load`, `probe`), [`suite`], [`exec`], [`matrix`] (with
//!   its farm schedulers), [`reproduce`]; [`kernel`] runs any of the first and `exec` on
//!   another kernel (`--kernel`)
//! - describing: [`list`], [`list_devices`], [`shell`] (completions and man pages)
//! - looking at results after the fact: [`runs`], [`show`], [`export`], [`compare`],
//!   [`report`] (the HTML page), [`explain`]; [`select`] reads what names runs on the
//!   command line
//! - watching running processes: [`watch`] (the BPF tracer, `explain::bpf`)
//! - the store and the machine: [`store_copy`] (`store copy`), [`cleanup`]

pub(crate) mod cleanup;
pub(crate) mod compare;
pub(crate) mod exec;
pub(crate) mod explain;
pub(crate) mod export;
pub(crate) mod kernel;
pub(crate) mod list;
pub(crate) mod list_devices;
pub(crate) mod matrix;
pub(crate) mod report;
pub(crate) mod reproduce;
pub(crate) mod run;
pub(crate) mod runs;
pub(crate) mod select;
pub(crate) mod shell;
pub(crate) mod show;
pub(crate) mod store_copy;
pub(crate) mod suite;
pub(crate) mod watch;

use anyhow::Result;

use crate::cli::TargetArgs;
use crate::compare::expect::Expectation;
use crate::error::Usage;

/// What every measuring command (run, load, probe, suite, exec) does first with its line:
/// `--device help` lists the device profiles, as `list-devices` does; a malformed `--expect`
/// is bad input (exit status 2) before anything runs; with one, whatever stops the run
/// afterwards is "could not be made" (125) for `git bisect run`. Then `measure` with the
/// expectations read.
pub(crate) fn measuring(
    target: &TargetArgs,
    expect: impl FnOnce() -> Result<Vec<Expectation>, Usage>,
    measure: impl FnOnce(&[Expectation]) -> Result<i32>,
) -> Result<i32> {
    if target.device.as_deref() == Some("help") {
        print!("{}", crate::testbed::device::profile::listing());
        return Ok(0);
    }
    let expect = expect()?;
    let judged = !expect.is_empty();
    measure(&expect).map_err(|e| match judged {
        true => e.context(crate::error::NotMade),
        false => e,
    })
}
