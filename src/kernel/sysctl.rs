//! `/proc/sys`: one value per file (Documentation/admin-guide/sysctl/): the `vm.` numbers
//! (sysctl/vm.rst), and `kernel.osrelease`, `kernel.hostname` and the boot id
//! (sysctl/kernel.rst). Writing one is a change to
//! the machine, which the testbed makes.

use anyhow::{Context as _, Result};

/// The value of `vm.NAME` (`dirty_ratio`), a number.
pub(crate) fn vm(name: &str) -> Result<u64> {
    let path = format!("/proc/sys/vm/{name}");
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    text.trim()
        .parse()
        .with_context(|| format!("{path}: not a number: {}", text.trim()))
}

/// The kernel's release, as `uname -r` prints it.
pub(crate) fn osrelease() -> Option<String> {
    super::read_trimmed("/proc/sys/kernel/osrelease")
}

/// The kernel's hostname (`kernel.hostname`, sysctl/kernel.rst).
pub(crate) fn hostname() -> Option<String> {
    super::read_trimmed("/proc/sys/kernel/hostname")
}

/// This boot's id (`kernel.random.boot_id`, sysctl/kernel.rst "random"): a UUID made anew
/// at every boot, which tells a boot from the next.
pub(crate) fn boot_id() -> Option<String> {
    super::read_trimmed("/proc/sys/kernel/random/boot_id")
}
