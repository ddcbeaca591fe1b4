//! Which host made a run, so that the same configuration on two hosts is two cells of a
//! farm's table: the name the farm knows the host by, its hostname, a machine id that
//! survives reboots and renames, the CPU model, and the scheduler's job the run was made in.
//! The kernel and the memory are in the fingerprint already, the device under test's model
//! and firmware in its [`super::DeviceInfo`].
//!
//! The name, first that applies: `FSYNCLAB_HOST` (a Kubernetes pod sets it to its node's
//! name, which its own hostname is not); Slurm's `SLURMD_NODENAME` (two `slurmd -N` on one
//! machine are two nodes); the hostname.

use serde::{Deserialize, Serialize};

use crate::kernel::cpuinfo::CpuInfo;
use crate::kernel::read_trimmed;

/// The environment variable that names this host for the farm.
pub const HOST_ENV: &str = "FSYNCLAB_HOST";

/// The environment variable that names the scheduler's job a run is made in, when it is not
/// a Slurm job (which fsynclab reads from Slurm's own variables).
pub const JOB_ENV: &str = "FSYNCLAB_JOB";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    /// The name the farm knows the host by (see [the module](self)).
    pub name: String,
    /// The kernel's hostname (`/proc/sys/kernel/hostname`).
    pub hostname: String,
    /// `/etc/machine-id` (or D-Bus's copy of it): the same across reboots and renames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// The scheduler's job that made the run: `slurm:1234_5` (an array's task), `slurm:1234`,
    /// or what `FSYNCLAB_JOB` says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
}

/// This host, now.
pub fn this_host() -> HostInfo {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    host_from(&var, crate::kernel::sysctl::hostname().unwrap_or_default())
}

/// The host as the environment `var` and the kernel's `hostname` describe it.
fn host_from(var: &dyn Fn(&str) -> Option<String>, hostname: String) -> HostInfo {
    let name = var(HOST_ENV)
        .or_else(|| var("SLURMD_NODENAME"))
        .unwrap_or_else(|| hostname.clone());
    HostInfo {
        name,
        hostname,
        machine_id: ["/etc/machine-id", "/var/lib/dbus/machine-id"]
            .into_iter()
            .find_map(|p| read_trimmed(p).filter(|id| !id.is_empty())),
        cpu_model: CpuInfo::read().and_then(|c| c.model),
        job: job_from(var),
    }
}

/// The scheduler's job of this process, as [`HostInfo::job`] names it.
pub fn job_from(var: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    match (
        var("SLURM_ARRAY_JOB_ID"),
        var("SLURM_ARRAY_TASK_ID"),
        var("SLURM_JOB_ID"),
    ) {
        (Some(array), Some(task), _) => Some(format!("slurm:{array}_{task}")),
        (_, _, Some(job)) => Some(format!("slurm:{job}")),
        _ => var(JOB_ENV),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_farm_name_is_the_variable_then_the_slurm_node_then_the_hostname() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        let h = host_from(&env(&[]), "box".into());
        assert_eq!((h.name.as_str(), h.job), ("box", None));
        let h = host_from(
            &env(&[
                ("SLURMD_NODENAME", "n2"),
                ("SLURM_ARRAY_JOB_ID", "17"),
                ("SLURM_ARRAY_TASK_ID", "3"),
                ("SLURM_JOB_ID", "20"),
            ]),
            "box".into(),
        );
        assert_eq!((h.name.as_str(), h.hostname.as_str()), ("n2", "box"));
        assert_eq!(h.job.as_deref(), Some("slurm:17_3"));
        let h = host_from(
            &env(&[
                (HOST_ENV, "node-7"),
                ("SLURMD_NODENAME", "n2"),
                (JOB_ENV, "k8s:fsynclab-m3-2-abcde"),
            ]),
            "pod".into(),
        );
        assert_eq!(
            (h.name.as_str(), h.job.as_deref()),
            ("node-7", Some("k8s:fsynclab-m3-2-abcde"))
        );
    }
}
