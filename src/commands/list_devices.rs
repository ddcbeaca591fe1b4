//! `fsynclab list-devices`: the emulated disks `--device` takes, built in and from files.

use anyhow::Result;

/// Prints the device listing, as `--device help` does.
pub(crate) fn list_devices() -> Result<i32> {
    crate::report::print(&crate::testbed::device::profile::listing())
}
