//! The writeback sysctls a run may set (`--dirty-ratio`, `--dirty-background-ratio`,
//! `--dirty-expire`), read and written in /proc/sys/vm (Documentation/admin-guide/sysctl/vm.rst).
//!
//! `dirty_ratio` and `dirty_bytes` are two spellings of one limit: writing one zeroes the
//! other. So the value to restore is that of whichever was in force before.

use anyhow::{Context as _, Result};

pub fn read(name: &str) -> Result<u64> {
    let path = format!("/proc/sys/vm/{name}");
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    text.trim()
        .parse()
        .with_context(|| format!("{path}: not a number: {}", text.trim()))
}

pub fn write(name: &str, value: u64) -> Result<()> {
    let path = format!("/proc/sys/vm/{name}");
    std::fs::write(&path, value.to_string()).with_context(|| format!("cannot set vm.{name}={value}"))
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
