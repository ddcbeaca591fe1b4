//! The virtual machine a `--kernel` run was made in: the kernel it booted (release and
//! version string, read inside), how its CPU ran (`kvm` or `tcg`), its CPUs and memory,
//! and the disk the host served it (or that the guest emulated itself). The host hands its part to the guest in an environment
//! variable ([`VM_ENV`]); the guest's fingerprint adds what only it can read.

use serde::{Deserialize, Serialize};

/// The environment variable that tells fsynclab it runs inside a guest started by
/// `--kernel`, with what the host knows of the machine: `accel=tcg,cpus=2,memory=BYTES,...`.
pub const VM_ENV: &str = "FSYNCLAB_GUEST";

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmInfo {
    /// The guest kernel's release (`uname -r` inside).
    pub release: String,
    /// Its version string (`/proc/version` inside).
    pub version: String,
    /// `kvm` or `tcg` (QEMU's translator: every instruction emulated, several times slower).
    pub accelerator: String,
    pub cpus: usize,
    pub memory_bytes: u64,
    /// How it was booted (`virtme-ng`).
    pub boot: String,
    /// What the host served as the scratch disk (`hdd-7200`, `host`, `ram`), empty without
    /// one.
    pub disk: String,
    /// Whether that disk was emulated inside the guest rather than served by the host: a run
    /// that makes disks of its own (fsync-errors' failing disks; before the control port,
    /// a power cut's too) needs them within reach, and their timing then depends on the
    /// guest's CPU.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disk_in_guest: bool,
}

impl VmInfo {
    /// The host's part, as the environment variable carries it.
    pub fn to_env(&self) -> String {
        format!(
            "accel={},cpus={},memory={},boot={},disk={},disk_in={}",
            self.accelerator,
            self.cpus,
            self.memory_bytes,
            self.boot,
            self.disk,
            if self.disk_in_guest { "guest" } else { "host" }
        )
    }

    fn parse(text: &str) -> VmInfo {
        let mut vm = VmInfo::default();
        for (k, v) in text.split(',').filter_map(|kv| kv.split_once('=')) {
            match k {
                "accel" => vm.accelerator = v.to_string(),
                "cpus" => vm.cpus = v.parse().unwrap_or(0),
                "memory" => vm.memory_bytes = v.parse().unwrap_or(0),
                "boot" => vm.boot = v.to_string(),
                "disk" => vm.disk = v.to_string(),
                "disk_in" => vm.disk_in_guest = v == "guest",
                _ => {}
            }
        }
        vm
    }

    /// Inside a guest `--kernel` started: the host's part and the kernel as read here;
    /// `None` elsewhere.
    pub fn of_this_guest() -> Option<VmInfo> {
        let mut vm = VmInfo::parse(&std::env::var(VM_ENV).ok()?);
        vm.release = crate::kernel::sysctl::osrelease().unwrap_or_default();
        vm.version = std::fs::read_to_string("/proc/version")
            .map(|v| v.trim().to_string())
            .unwrap_or_default();
        Some(vm)
    }

    /// Whether this fsynclab runs inside a guest `--kernel` started.
    pub fn in_guest() -> bool {
        std::env::var_os(VM_ENV).is_some()
    }

    /// Whether this fsynclab runs inside a guest that emulates its scratch disk itself
    /// ([`VmInfo::disk_in_guest`]).
    pub fn disk_in_this_guest() -> bool {
        std::env::var(VM_ENV).is_ok_and(|v| VmInfo::parse(&v).disk_in_guest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hosts_part_survives_its_environment_variable() {
        let vm = VmInfo {
            accelerator: "tcg".into(),
            cpus: 2,
            memory_bytes: 2 << 30,
            boot: "virtme-ng".into(),
            disk: "hdd-7200".into(),
            ..VmInfo::default()
        };
        assert_eq!(VmInfo::parse(&vm.to_env()), vm);
        let emulated_inside = VmInfo {
            disk_in_guest: true,
            ..vm
        };
        assert_eq!(VmInfo::parse(&emulated_inside.to_env()), emulated_inside);
    }
}
