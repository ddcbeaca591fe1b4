//! `--kernel K` read from a command's line: the kernel it names (none for `host`, or inside a
//! guest), refused on the commands that cannot take it, and what every command gives a run on
//! another kernel the same way ([`on_kernel`]); each command states its own
//! [`Needs`] and runs there through [`crate::run::on_kernel`].

use anyhow::Result;

use crate::cli::{RecordArgs, TargetArgs};
use crate::environment::VmInfo;
use crate::error::Usage;
use crate::run::on_kernel::{self, GuestCommand, Needs, StoreFlags};
use crate::testbed::vm::{self, Kernel};
use crate::units::parse_duration;

/// The kernel `--kernel` names, or `None` for the host's own (no VM).
pub(crate) fn wanted(target: &TargetArgs) -> Result<Option<Kernel>, Usage> {
    match &target.kernel {
        Some(spec) if !VmInfo::in_guest() => vm::resolve(spec),
        _ => Ok(None),
    }
}

/// Refuses `--kernel` (other than `host`) on a command that cannot take it yet.
pub(crate) fn refuse(target: &TargetArgs, command: &str) -> Result<(), Usage> {
    match target.kernel.as_deref().map(str::trim) {
        None | Some("host") => Ok(()),
        Some(k) if command == "matrix" => Err(Usage(format!(
            "--kernel {k}: a matrix runs its cells on other kernels through an axis: --axis kernel=host,{k}"
        ))),
        Some(k) => Err(Usage(format!(
            "--kernel {k}: `fsynclab {command}` does not boot other kernels yet; `run`, `load`, `probe`, `suite` and `exec` do"
        ))),
    }
}

/// Runs the command on the kernel `--kernel` names, when it names one other than this
/// host's: its exit status; `None` to run here.
pub(crate) fn on_kernel(target: &TargetArgs, record: Option<&RecordArgs>, needs: Needs) -> Result<Option<i32>> {
    let Some(kernel) = wanted(target)? else {
        return Ok(None);
    };
    let kernel_timeout = target
        .kernel_timeout
        .as_deref()
        .map(|t| parse_duration(t).map_err(|e| Usage(format!("--kernel-timeout {t}: {e}"))))
        .transpose()?;
    on_kernel::run(GuestCommand {
        kernel,
        request: target.request()?,
        kernel_timeout,
        record: record.map(|r| StoreFlags {
            path: r.store.as_deref(),
            off: r.no_store,
        }),
        needs,
    })
    .map(Some)
}
