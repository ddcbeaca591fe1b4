//! The `kernel` axis: `--axis kernel=host,6.1.0-56-amd64,/path/to/bzImage` makes each cell
//! on its kernel. `host` is this machine's own (no VM); any other value is booted under
//! QEMU and the cell's run made inside ([`crate::run::guest`]), with the same scenario,
//! parameters and testbed options as a `run` would take them. The kernels are checked (the
//! image, its modules, its configuration, QEMU and virtme-ng) when the plan is, before any
//! cell runs.

use std::time::Duration;

use anyhow::Result;

use super::{Cell, Plan, KERNEL_AXIS};
use crate::error::Usage;
use crate::testbed::vm::{self, Kernel};
use crate::testbed::Key;
use crate::units::parse_duration;

/// The most a guest may take, boot included, unless `--kernel-timeout` says.
pub(crate) const DEFAULT_GUEST_LIMIT: Duration = Duration::from_secs(30 * 60);

/// Below that, a guest whose run's length is known: a boot and the scenario's set-up (under
/// TCG a boot takes about a minute)...
const GUEST_ALLOWANCE: Duration = Duration::from_secs(5 * 60);
/// ...and the run this many times over (a TCG guest's CPU is several times slower).
const GUEST_SLOWDOWN: u32 = 4;

/// How long a guest whose run is expected to take `expected` may take when
/// `--kernel-timeout` is not given: a guest that hangs is ended minutes after it should have
/// finished, not half an hour.
pub(crate) fn derived_guest_limit(expected: Option<Duration>) -> Duration {
    expected.map_or(DEFAULT_GUEST_LIMIT, |e| {
        (GUEST_ALLOWANCE + e * GUEST_SLOWDOWN).min(DEFAULT_GUEST_LIMIT)
    })
}

/// `--kernel-timeout`'s default, said.
pub(crate) const DERIVED_LIMIT_TEXT: &str = "5m plus 4 times its run's expected length, at most 30m (--kernel-timeout)";

impl Plan {
    /// The kernel axis's values, if the plan has one.
    fn kernels(&self) -> Option<&[String]> {
        self.axes
            .iter()
            .find(|a| a.key == KERNEL_AXIS)
            .map(|a| a.values.as_slice())
    }

    /// Refuses a kernel axis whose values are not all bootable here, before any cell runs:
    /// a kernel that is not installed, lacks what a run needs, or no QEMU or virtme-ng.
    pub(crate) fn check_kernels(&self) -> Result<(), Usage> {
        let Some(values) = self.kernels() else {
            return Ok(());
        };
        self.guest_limit(None)?;
        let mut guests = 0;
        for v in values {
            if vm::resolve(v)
                .map_err(|e| {
                    let why = e.0.strip_prefix(&format!("--kernel {v}: ")).unwrap_or(&e.0).to_string();
                    Usage(format!("--axis kernel={v}: {why}"))
                })?
                .is_some()
            {
                guests += 1;
            }
        }
        if guests > 0 {
            vm::check_tools().map_err(|e| Usage(format!("--axis kernel: {}", e.0)))?;
        }
        Ok(())
    }

    /// Whether a kernel axis puts `host` (this machine, no VM) beside kernels booted in a VM:
    /// their cells then differ by how they ran as well as by kernel.
    pub(crate) fn mixes_host_and_guests(&self) -> bool {
        self.boots_kernels() && self.kernels().is_some_and(|vs| vs.iter().any(|v| v.trim() == "host"))
    }

    /// Whether a kernel axis boots another kernel, which needs a scratch filesystem (the
    /// guest's own, on the disk the host serves it).
    pub(crate) fn boots_kernels(&self) -> bool {
        self.kernels()
            .is_some_and(|vs| vs.iter().any(|v| !matches!(v.trim(), "host" | "")))
    }

    /// How long a guest whose run is expected to take `expected` may take, boot included.
    fn guest_limit(&self, expected: Option<Duration>) -> Result<Duration, Usage> {
        match &self.kernel_timeout {
            None => Ok(derived_guest_limit(expected)),
            Some(t) => parse_duration(t).map_err(|e| Usage(format!("--kernel-timeout {t}: {e}"))),
        }
    }

    /// The kernel `cell` runs on, with the run's arguments inside (`run SCENARIO --set ...
    /// --scratch ...`) and how long its guest may take; `None` for this host's.
    pub(crate) fn kernel_for(&self, cell: &Cell) -> Result<Option<(Kernel, Vec<String>, Duration)>> {
        let Some((_, spec)) = cell.iter().find(|(k, _)| k == KERNEL_AXIS) else {
            return Ok(None);
        };
        let Some(kernel) = vm::resolve(spec)? else {
            return Ok(None);
        };
        let mut args = vec!["run".to_string(), self.scenario.clone(), "--quiet".into()];
        args.push("--no-explain".into());
        for set in self.sets_for(cell) {
            args.extend(["--set".to_string(), set]);
        }
        for (k, v) in self.target.iter().chain(cell.iter()) {
            if let Some(key) = Key::from_name(k) {
                args.extend([format!("--{}", key.name()), v.clone()]);
            }
        }
        let expected = self.planned_for(cell)?.plan.expected_duration();
        Ok(Some((kernel, args, self.guest_limit(expected)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(kernels: &[&str]) -> Plan {
        Plan {
            scenario: "overwrite-fsync".into(),
            sets: vec!["duration=1s".into()],
            target: vec![("device".into(), "hdd-7200".into())],
            repeat: 1,
            ..super::super::tests::plan(&[(KERNEL_AXIS, kernels), ("sleep", &["100ms"])])
        }
    }

    #[test]
    fn the_kernel_is_neither_a_parameter_nor_a_testbed_option() {
        let p = plan(&["host"]);
        let cell = &p.cells()[0];
        assert_eq!(p.sets_for(cell), ["duration=1s", "sleep=100ms"]);
        assert!(p.kernel_for(cell).unwrap().is_none(), "host boots nothing");
        assert!(!p.boots_kernels());
        assert!(plan(&["host", "6.1.0-56-amd64"]).boots_kernels());
    }

    #[test]
    fn the_guests_time_limit_is_kernel_timeouts() {
        let mut p = plan(&["host"]);
        let minute = Duration::from_secs(60);
        assert_eq!(p.guest_limit(None).unwrap(), DEFAULT_GUEST_LIMIT);
        assert_eq!(p.guest_limit(Some(minute)).unwrap(), 9 * minute);
        assert_eq!(p.guest_limit(Some(10 * minute)).unwrap(), DEFAULT_GUEST_LIMIT);
        p.kernel_timeout = Some("90s".into());
        assert_eq!(p.guest_limit(Some(minute)).unwrap(), Duration::from_secs(90));
        p.kernel_timeout = Some("soon".into());
        assert!(p.check_kernels().unwrap_err().0.starts_with("--kernel-timeout soon:"));
    }

    #[test]
    fn a_kernel_that_is_not_there_is_refused_when_the_plan_is_checked() {
        let e = plan(&["host", "0.0.0-none"]).check_kernels().unwrap_err().0;
        assert!(
            e.starts_with("--axis kernel=0.0.0-none: no /boot/vmlinuz-0.0.0-none"),
            "{e}"
        );
    }
}
