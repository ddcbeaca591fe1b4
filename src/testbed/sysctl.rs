//! The writeback sysctls a run may set (`--dirty-ratio`, `--dirty-background-ratio`,
//! `--dirty-expire`), read and written in /proc/sys/vm (Documentation/admin-guide/sysctl/vm.rst).
//!
//! `dirty_ratio` and `dirty_bytes` are two spellings of one limit: writing one zeroes the
//! other. So the value to restore is that of whichever was in force before.
//!
//! Sysctls are machine-wide, so one run at a time may change them: it holds [`SysctlLock`]
//! from before it sets them until it has put them back. Overlapping runs could otherwise
//! each restore what the other set (a run's result would claim a value it did not run
//! under, and the last one out would leave the other's value behind).

use anyhow::{Context as _, Result};

/// The sysctls a run sets or restores. `fsynclab cleanup` writes no other, whatever a state
/// file says.
pub const SETTABLE: [&str; 5] = [
    "dirty_ratio",
    "dirty_bytes",
    "dirty_background_ratio",
    "dirty_background_bytes",
    "dirty_expire_centisecs",
];

/// The right to change the vm sysctls: the machine-wide lock `sysctls`
/// ([`super::machine_lock`]), whatever the state directory (two runs with different
/// `FSYNCLAB_STATE_DIR`s still share the machine's sysctls). The kernel drops it when the
/// holder exits, SIGKILL included, so it never goes stale.
#[derive(Debug)]
pub struct SysctlLock {
    _lock: super::machine_lock::MachineLock,
}

/// The name of the lock (`/run/lock/fsynclab-sysctls.lock`).
pub const LOCK: &str = "sysctls";

/// Takes the lock, or None while another process holds it.
pub fn try_lock() -> Result<Option<SysctlLock>> {
    Ok(super::machine_lock::MachineLock::try_take(LOCK)?.map(|l| SysctlLock { _lock: l }))
}

/// The value of `vm.NAME` now.
pub fn read(name: &str) -> Result<u64> {
    crate::kernel::sysctl::vm(name)
}

/// Sets `vm.name` and checks that the kernel took the value.
pub fn write(name: &str, value: u64) -> Result<()> {
    let path = format!("/proc/sys/vm/{name}");
    std::fs::write(&path, value.to_string()).with_context(|| format!("cannot set vm.{name}={value}"))?;
    let now = read(name)?;
    if now != value {
        anyhow::bail!("vm.{name} reads {now} after writing {value}");
    }
    Ok(())
}

/// The sysctl in force for the limit `name` sets, and its value: `dirty_bytes` instead of
/// `dirty_ratio` when the byte form is in use, and likewise for the background limit.
pub fn in_force(name: &str) -> Result<(String, u64)> {
    let twin = match name {
        "dirty_ratio" => Some("dirty_bytes"),
        "dirty_background_ratio" => Some("dirty_background_bytes"),
        _ => None,
    };
    if let Some(twin) = twin {
        let bytes = read(twin)?;
        if bytes != 0 {
            return Ok((twin.to_string(), bytes));
        }
    }
    Ok((name.to_string(), read(name)?))
}
