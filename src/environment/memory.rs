//! Memory and writeback: the `vm.dirty_*` sysctls (Documentation/admin-guide/sysctl/vm.rst)
//! and the threshold they set with the memory `/proc/meminfo` reports
//! ([`crate::kernel::meminfo`]), and whether a run's buffers fit in memory.

use std::collections::BTreeMap;

use crate::kernel::Meminfo;

/// The vm sysctls that decide when buffered data is written back.
pub const DIRTY_SYSCTLS: [&str; 6] = [
    "dirty_ratio",
    "dirty_background_ratio",
    "dirty_bytes",
    "dirty_background_bytes",
    "dirty_expire_centisecs",
    "dirty_writeback_centisecs",
];

/// About how many dirty bytes the kernel lets pile up before background writeback starts:
/// `vm.dirty_background_bytes` when set, else `dirty_background_ratio` percent of the
/// dirtyable memory, approximated as MemFree + Active(file) + Inactive(file) (the kernel's
/// `global_dirtyable_memory()` also subtracts reserves; this is an estimate).
pub(crate) fn dirty_background_threshold(sysctls: &BTreeMap<String, u64>, meminfo: &Meminfo) -> Option<u64> {
    if let Some(bytes) = sysctls.get("dirty_background_bytes").filter(|b| **b > 0) {
        return Some(*bytes);
    }
    let ratio = *sysctls.get("dirty_background_ratio")?;
    let dirtyable =
        meminfo.free_bytes? + meminfo.active_file_bytes.unwrap_or(0) + meminfo.inactive_file_bytes.unwrap_or(0);
    Some(dirtyable / 100 * ratio)
}

/// The same, for this machine now.
pub fn current_dirty_background_threshold() -> Option<u64> {
    dirty_background_threshold(&read_sysctls(), &Meminfo::read()?)
}

/// Refuses a parameter that sizes an in-memory buffer beyond half the RAM: the allocation
/// would abort the process (or wake the OOM killer) before any cleanup could run.
pub fn check_fits_in_memory(param: &str, bytes: u64) -> Result<(), crate::error::Usage> {
    check_buffers_fit(param, bytes, 1)
}

/// Refuses `count` buffers of `size` bytes (one per worker thread) that together would take
/// more than half the RAM: an allocation that fails aborts the process, and one that
/// succeeds invites the OOM killer (issue 8: 3 x 10 GiB passed a per-buffer check).
pub fn check_buffers_fit(param: &str, size: u64, count: u64) -> Result<(), crate::error::Usage> {
    let total = Meminfo::read().and_then(|m| m.total_bytes);
    let needed = size.saturating_mul(count);
    let shown = crate::units::format_size(crate::units::Bytes(size));
    match total.map(|t| t / 2) {
        Some(limit) if needed > limit && count == 1 => Err(crate::error::Usage(format!(
            "--set {param}={shown}: fsynclab holds one such write in memory; at most half the RAM ({})",
            crate::units::human_size(limit)
        ))),
        Some(limit) if needed > limit => Err(crate::error::Usage(format!(
            "--set {param}={shown}: {count} workers each hold such a buffer, {} in all; at most half the RAM ({}): lower {param} or the thread count",
            crate::units::human_size(needed),
            crate::units::human_size(limit)
        ))),
        _ => Ok(()),
    }
}

/// The [`DIRTY_SYSCTLS`] as they are now, by name.
pub fn read_sysctls() -> BTreeMap<String, u64> {
    DIRTY_SYSCTLS
        .iter()
        .filter_map(|name| {
            let v = crate::kernel::sysctl::vm(name).ok()?;
            Some((name.to_string(), v))
        })
        .collect()
}
