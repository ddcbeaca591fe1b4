//! `/proc/sys`: one value per file (Documentation/admin-guide/sysctl/): the `vm.` numbers
//! (sysctl/vm.rst) and `kernel.osrelease` (sysctl/kernel.rst). Writing one is a change to
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
