//! The environment fingerprint recorded in every result: the host that made it, kernel,
//! filesystem and mount options of the target, its block device (scheduler, write cache,
//! rotational, model and firmware), the `vm.dirty_*` sysctls, CPUs and memory. Two results
//! can only be compared if these agree.
//!
//! Sources, each parsed in [`crate::kernel`] (one parser per file, with its kernel document):
//! `/proc/self/mountinfo`, `/sys/dev/block/MAJ:MIN/queue/{scheduler,write_cache,rotational}`,
//! `/proc/sys/vm/dirty_*`, `/proc/meminfo`, and for the journal settings ([`journal`])
//! `/proc/fs/ext4/DEV/options` and `/proc/fs/jbd2/DEV-INO/info`.
//!
//! The parts: `host` (which host, for a farm), `device` (the block device, and the emulated
//! disk's figures and counts),
//! `journal` (the filesystem's journal settings), `memory` (the dirty sysctls and their
//! thresholds, what fits in memory).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::kernel::{block, mount_of, mounts, Meminfo};

mod device;
mod findings;
mod host;
pub(crate) mod journal;
mod memory;
mod vm;

pub(crate) use device::device_numbers;
pub use device::{device_info, DeviceActivity, DeviceInfo, DeviceProfileInfo, DiskModelInfo, PowerCut, ScratchInfo};

pub use findings::{DeviceFinding, NotThisFinding, SysctlChange, SysctlsChanged};
pub use host::{job_from, this_host, HostInfo, HOST_ENV, JOB_ENV};
pub use memory::{
    check_buffers_fit, check_fits_in_memory, current_dirty_background_threshold, read_sysctls, DIRTY_SYSCTLS,
};
pub use vm::{VmInfo, VM_ENV};

/// How far behind its model the emulated disk's daemon may fall before a run says that the
/// daemon, not the profile, set the pace.
pub const DAEMON_LAG_MS: f64 = 250.0;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub fsynclab_version: String,
    pub kernel: String,
    pub cpus: usize,
    pub memory_bytes: u64,
    /// The directory the run worked in.
    pub target: String,
    pub filesystem: Option<FilesystemInfo>,
    pub device: Option<DeviceInfo>,
    /// `vm.dirty_*` sysctls by name (without the `vm.` prefix).
    pub sysctls: BTreeMap<String, u64>,
    /// The scratch filesystem fsynclab made for the run (`--scratch`), as requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scratch: Option<ScratchInfo>,
    /// The device profile behind the scratch filesystem (`--device`), with flush counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_profile: Option<DeviceProfileInfo>,
    /// The sysctls fsynclab set for the run (`--dirty-ratio`...), restored afterwards.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sysctls_set: BTreeMap<String, u64>,
    /// The filesystem's journal: whether it has one, data mode, commit interval, batch
    /// times (ext4); log buffers (xfs); commit interval (btrfs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<journal::JournalInfo>,
    /// The host that made the run (absent in results made before hosts were recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostInfo>,
    /// The virtual machine the run was made in (`--kernel`), absent on the host's own kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm: Option<VmInfo>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FilesystemInfo {
    pub fstype: String,
    pub mount_point: String,
    /// The mount source (`/dev/vda`, `tmpfs`, `/dev/loop3`).
    pub source: String,
    /// Per-mount options (`rw,relatime`).
    pub mount_options: String,
    /// Per-superblock options (`rw,data=ordered,commit=5`): where ext4 and xfs report theirs.
    pub super_options: String,
}

/// `uname -r`.
fn kernel_release() -> String {
    crate::kernel::sysctl::osrelease().unwrap_or_else(|| "unknown".into())
}

/// Takes the fingerprint of the machine and of the filesystem holding `target`.
pub fn fingerprint(target: &Path) -> Fingerprint {
    let canonical = std::fs::canonicalize(target).unwrap_or_else(|_| target.to_path_buf());
    let mounts = mounts();
    let mount = mount_of(&mounts, &canonical);
    let device = mount.and_then(|m| {
        let (major, minor) = device_numbers(m);
        device_info(major, minor)
    });
    let journal = mount.and_then(|m| {
        let (major, minor) = device_numbers(m);
        // The filesystem's own device name (a partition's, not the disk's): /proc/fs/ext4/NAME.
        let dev_name = block::name(major, minor);
        journal::read(&m.fstype, dev_name.as_deref(), &m.super_options)
    });
    Fingerprint {
        fsynclab_version: env!("CARGO_PKG_VERSION").to_string(),
        kernel: kernel_release(),
        cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        memory_bytes: Meminfo::read().and_then(|m| m.total_bytes).unwrap_or(0),
        target: canonical.display().to_string(),
        filesystem: mount.map(|m| FilesystemInfo {
            fstype: m.fstype.clone(),
            mount_point: m.mount_point.clone(),
            source: m.source.clone(),
            mount_options: m.mount_options.clone(),
            super_options: m.super_options.clone(),
        }),
        device,
        sysctls: read_sysctls(),
        journal,
        host: Some(this_host()),
        vm: VmInfo::of_this_guest(),
        ..Fingerprint::default()
    }
}

impl Fingerprint {
    /// The testbed in a few words: `ext4 hdd-7200 bfq` for a scratch run, `ext4 at /work`
    /// for a --dir run.
    pub fn testbed(&self) -> String {
        match &self.scratch {
            Some(_) => self
                .traits()
                .into_iter()
                .filter(|(k, _)| *k != "kernel")
                .map(|(_, v)| v)
                .collect::<Vec<_>>()
                .join(" "),
            None => match &self.filesystem {
                Some(f) => format!("{} at {}", f.fstype, f.mount_point),
                None => "?".into(),
            },
        }
    }

    /// What sets one testbed apart from another, by name: the filesystem (with its mount
    /// options), the device profile, the scheduler (a scratch run's), the kernel release.
    /// Absent ones are left out.
    pub fn traits(&self) -> Vec<(&'static str, String)> {
        let mut traits = Vec::new();
        match &self.scratch {
            Some(s) => {
                traits.push((
                    "filesystem",
                    match s.mount_options.as_str() {
                        "" => s.fstype.clone(),
                        opts => format!("{}:{opts}", s.fstype),
                    },
                ));
                if let Some(d) = &self.device_profile {
                    traits.push(("device", d.name.clone()));
                }
                if let Some(scheduler) = &s.scheduler {
                    traits.push(("scheduler", scheduler.clone()));
                }
            }
            None => {
                if let Some(f) = &self.filesystem {
                    traits.push(("filesystem", format!("{} at {}", f.fstype, f.mount_point)));
                }
            }
        }
        traits.push(("kernel", self.kernel.clone()));
        traits
    }

    /// One line for reports: `ext4 (rw,relatime) on vda [mq-deadline, write back, ssd]`.
    pub fn target_line(&self) -> String {
        let fs = match &self.filesystem {
            Some(f) => format!(
                "{} ({}; {}) at {}",
                f.fstype, f.mount_options, f.super_options, f.mount_point
            ),
            None => "unknown filesystem".into(),
        };
        let dev = match &self.device {
            Some(d) => format!(
                " on {} [scheduler {}, write cache {}, {}]",
                d.name,
                d.scheduler.as_deref().unwrap_or("?"),
                d.write_cache.as_deref().unwrap_or("?"),
                match d.rotational {
                    Some(true) => "rotational",
                    Some(false) => "non-rotational",
                    None => "rotational ?",
                }
            ),
            None => String::new(),
        };
        let scratch = match (&self.scratch, &self.device_profile) {
            (Some(s), p) => format!(
                "; scratch {} image {} on {}{}",
                s.fstype,
                crate::units::human_size(s.size_bytes),
                s.loop_device,
                p.as_ref().map(|p| format!(", device {}", p.name)).unwrap_or_default()
            ),
            (None, _) => String::new(),
        };
        format!("{fs}{dev}{scratch}")
    }

    /// The findings about the device: its daemon falling behind its model, and its cache
    /// flushes when they were counted: how many, and per foreground sync call (`sync_calls`
    /// of them).
    pub fn device_findings(&self, sync_calls: u64) -> Vec<DeviceFinding> {
        let Some(profile) = &self.device_profile else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let lag = profile.activity.as_ref().map(|a| a.drain_lag_ms_max);
        if let Some(lag_ms) = lag.filter(|l| *l > DAEMON_LAG_MS) {
            out.push(DeviceFinding::DaemonBehind { lag_ms });
        }
        if let Some(flushes) = profile.flushes {
            out.push(DeviceFinding::Flushes {
                flushes,
                per_sync_call: profile.flushes_per_sync.map(|per| (per, sync_calls)),
            });
        }
        out
    }

    /// One line for reports: kernel, CPUs, memory, dirty sysctls.
    pub fn machine_line(&self) -> String {
        let s = |k: &str| self.sysctls.get(k).map(u64::to_string).unwrap_or_else(|| "?".into());
        let vm = match &self.vm {
            Some(vm) => format!(
                " in a VM ({}, {}{}; {})",
                vm.accelerator,
                vm.boot,
                if vm.disk_in_guest {
                    ", its disk emulated inside: timed by the guest's CPU"
                } else {
                    ""
                },
                vm.version
            ),
            None => String::new(),
        };
        format!(
            "Linux {}{vm}, {} CPUs, {:.1} GiB; vm.dirty_ratio={} dirty_background_ratio={} dirty_expire_centisecs={}",
            self.kernel,
            self.cpus,
            self.memory_bytes as f64 / (1u64 << 30) as f64,
            s("dirty_ratio"),
            s("dirty_background_ratio"),
            s("dirty_expire_centisecs"),
        )
    }
}

#[cfg(test)]
mod tests;
