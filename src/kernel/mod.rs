//! What the kernel says in /proc and /sys, read and parsed in one place: one parser per
//! file, each following the kernel document it links and saying which fields it ignores;
//! fixture files in tests/fixtures drive their tests. Nothing here changes the machine
//! (the testbed does that) or decides what a figure means (the environment and the
//! explanation do).
//!
//! - [`block`]: a block device's sysfs directory and queue attributes
//! - [`block_stat`]: `/sys/block/DEV/stat`, a block device's I/O counters
//! - [`config`]: `/boot/config-RELEASE` or `/proc/config.gz`, the kernel's build options
//! - [`cpuinfo`]: `/proc/cpuinfo`, the processor's model
//! - [`ext4`]: `/proc/fs/ext4/DEV/options` and `/proc/fs/jbd2/DEV-INO/info`, the journal
//! - [`kmsg`]: `/dev/kmsg`, what the kernel logs (an I/O error, a filesystem shut down)
//! - [`meminfo`]: `/proc/meminfo`, memory and the dirty and writeback pages
//! - [`mountinfo`]: `/proc/self/mountinfo`, what is mounted where
//! - [`pressure`]: `/proc/pressure/io`, time stalled on I/O
//! - [`process`]: `/proc/PID/{stat,cmdline,comm}`, a process's start time, arguments, name
//! - [`sysctl`]: `/proc/sys`, the `vm.` numbers, the kernel's release, hostname and boot id
//! - [`vmstat`]: `/proc/vmstat`, the dirty limits the kernel computed

pub(crate) mod block;
pub(crate) mod block_stat;
pub(crate) mod config;
pub(crate) mod cpuinfo;
pub(crate) mod ext4;
pub(crate) mod kmsg;
pub(crate) mod meminfo;
pub(crate) mod mountinfo;
pub(crate) mod pressure;
pub(crate) mod process;
pub(crate) mod sysctl;
pub(crate) mod vmstat;

pub(crate) use block_stat::BlockStat;
pub(crate) use meminfo::Meminfo;
pub(crate) use mountinfo::{mount_of, mounts, MountInfo};
pub(crate) use pressure::Pressure;
pub(crate) use vmstat::Vmstat;

/// A sysfs or procfs file's content without the newline; None when it cannot be read.
pub(crate) fn read_trimmed(path: impl AsRef<std::path::Path>) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}
