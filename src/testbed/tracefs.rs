//! tracefs, the kernel's tracing file system (Documentation/trace/ftrace.rst): finding or
//! mounting it, a private instance per run, and removing the instance again.
//!
//! fsynclab traces in an instance of its own, `instances/fsynclab-<pid>` (ftrace.rst,
//! "Instances"): its events, filters, triggers, clock and buffer belong to it alone, so a
//! user's tracing in the top-level buffer or in other instances is left untouched. The
//! instance is recorded on the undo stack (`Step::TraceInstance`, by [`super::trace_setup`])
//! *before* it is made,
//! so that a run killed at any moment leaves a record `fsynclab cleanup` can act on, and it
//! is removed on every way out. tracefs is mounted only when it is not already, and
//! unmounted afterwards only if fsynclab mounted it and no instance of anyone else remains.
//!
//! Runs and `fsynclab cleanup` calls share tracefs whatever their state directories, and an
//! instance outlives an unmount of tracefs (it lives in the kernel, not in the mount). So
//! each of these steps is taken under one machine-wide lock ([`MachineLock`]
//! `tracefs`): finding or mounting tracefs and making the instance; removing an instance;
//! counting the instances and unmounting. Without it (issue 19), one process could count
//! no instance, another make its instance, and the first unmount tracefs under it (the
//! second then failed to trace); two processes could each find no tracefs and mount it
//! twice; two cleanups could remove the same instance (the kernel answers the second with
//! ENODEV); and a removal that found tracefs unmounted under it took the missing directory
//! for a removed instance.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context as _, Result};

use super::machine_lock::MachineLock;
use crate::kernel::{mounts, MountInfo};

/// The name of the machine-wide lock held around every change to tracefs.
pub(super) const LOCK: &str = "tracefs";

/// Where tracefs is mounted when nothing else says so.
pub(crate) const DEFAULT_MOUNT: &str = "/sys/kernel/tracing";

/// The source name of a tracefs fsynclab mounts (`mount -t tracefs fsynclab ...`; the
/// usual `nodev` otherwise): any fsynclab run can then tell that mount from a user's, and
/// the last run to leave it unmounts it even when another run mounted it.
const MOUNT_SOURCE: &std::ffi::CStr = c"fsynclab";

/// Whether the tracefs at `root` is one fsynclab mounted.
fn mounted_by_fsynclab(root: &Path) -> bool {
    mounts()
        .iter()
        .any(|m| m.fstype == "tracefs" && Path::new(&m.mount_point) == root && m.source == "fsynclab")
}

/// The prefix of every instance fsynclab makes.
pub(crate) const INSTANCE_PREFIX: &str = "fsynclab-";

/// Where tracefs is mounted in `mounts`: a `tracefs` mount (the one at
/// /sys/kernel/tracing first), else `tracing/` inside a debugfs mount (older systems).
pub(crate) fn find_mount_in(mounts: &[MountInfo]) -> Option<PathBuf> {
    let tracefs: Vec<&MountInfo> = mounts.iter().filter(|m| m.fstype == "tracefs").collect();
    if let Some(m) = tracefs
        .iter()
        .find(|m| m.mount_point == DEFAULT_MOUNT)
        .or(tracefs.first())
    {
        return Some(PathBuf::from(&m.mount_point));
    }
    mounts
        .iter()
        .filter(|m| m.fstype == "debugfs")
        .map(|m| Path::new(&m.mount_point).join("tracing"))
        .find(|p| p.join("instances").is_dir())
}

/// Whether this kernel has tracefs: mounted somewhere, or its usual mount point there.
pub(crate) fn in_kernel() -> bool {
    find_mount().is_some() || Path::new(DEFAULT_MOUNT).is_dir()
}

/// Where tracefs is mounted now, if anywhere.
pub(crate) fn find_mount() -> Option<PathBuf> {
    find_mount_in(&mounts())
}

fn c_path(path: &Path) -> Result<std::ffi::CString> {
    std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).context("path has a NUL byte")
}

pub(super) fn mount_at(mount_point: &Path) -> Result<()> {
    let target = c_path(mount_point)?;
    let mounted = nix::mount::mount(
        Some(MOUNT_SOURCE),
        target.as_c_str(),
        Some(c"tracefs"),
        nix::mount::MsFlags::empty(),
        None::<&std::ffi::CStr>,
    );
    if let Err(e) = mounted {
        let err = std::io::Error::from(e);
        bail!(
            "cannot mount tracefs at {}: {err} (needs root and a kernel with CONFIG_TRACING)",
            mount_point.display()
        );
    }
    Ok(())
}

/// Unmounts the tracefs fsynclab mounted at `mount_point`, unless someone else now has an
/// instance in it or holds a file open: never lazily, since another tracer may be using it.
pub(crate) fn unmount_if_unused(mount_point: &Path) -> Result<()> {
    let _lock = MachineLock::take(LOCK)?;
    unmount_if_unused_locked(mount_point)
}

/// [`unmount_if_unused`] with the [`LOCK`] held.
fn unmount_if_unused_locked(mount_point: &Path) -> Result<()> {
    let mounted = mounts()
        .iter()
        .any(|m| m.fstype == "tracefs" && Path::new(&m.mount_point) == mount_point);
    if !mounted {
        return Ok(());
    }
    // Instances that cannot be counted may be there: then it stays mounted.
    let Ok(instances) = std::fs::read_dir(mount_point.join("instances")) else {
        return Ok(());
    };
    if instances.filter_map(|e| e.ok()).count() > 0 {
        return Ok(());
    }
    let target = c_path(mount_point)?;
    if let Err(e) = nix::mount::umount2(target.as_c_str(), nix::mount::MntFlags::empty()) {
        let err = std::io::Error::from(e);
        // Busy: another process is reading it; leaving tracefs mounted harms nothing.
        if err.raw_os_error() != Some(libc::EBUSY) {
            bail!("cannot unmount tracefs at {}: {err}", mount_point.display());
        }
    }
    Ok(())
}

/// The name of this process's next instance: `fsynclab-<pid>`, then `fsynclab-<pid>-<n>`.
pub(crate) fn next_instance_name() -> String {
    static INSTANCES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = INSTANCES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let pid = std::process::id();
    if n == 0 {
        format!("{INSTANCE_PREFIX}{pid}")
    } else {
        format!("{INSTANCE_PREFIX}{pid}-{n}")
    }
}

/// Whether `name` has the shape of an instance process `pid` made ([`next_instance_name`]):
/// `fsynclab cleanup` removes no other.
pub(crate) fn is_instance_of(name: &str, pid: u32) -> bool {
    let Some(rest) = name.strip_prefix(INSTANCE_PREFIX) else {
        return false;
    };
    let (p, n) = rest.split_once('-').unwrap_or((rest, "0"));
    p == pid.to_string() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
}

/// A tracing instance: a directory under `instances/` with its own buffer and events.
#[derive(Debug)]
pub(crate) struct Instance {
    dir: PathBuf,
}

impl Instance {
    /// Makes instance `name` under the tracefs at `root`.
    pub(super) fn create(root: &Path, name: &str) -> Result<Instance> {
        let dir = root.join("instances").join(name);
        std::fs::create_dir(&dir).with_context(|| format!("cannot create the trace instance {}", dir.display()))?;
        Ok(Instance { dir })
    }

    /// A file of the instance (`trace_clock`, `events/sched/sched_switch/filter`).
    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    pub(crate) fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    /// Writes `value` to a control file; a refusal is reported with the kernel's reason
    /// from the instance's `error_log` when it gave one.
    pub(crate) fn write(&self, rel: &str, value: &str) -> Result<()> {
        let path = self.path(rel);
        let result = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .and_then(|mut f| f.write_all(value.as_bytes()));
        result.map_err(|e| {
            let reason = self
                .last_error()
                .map(|r| format!("; the kernel says: {r}"))
                .unwrap_or_default();
            anyhow::anyhow!("cannot write '{value}' to {}: {e}{reason}", path.display())
        })
    }

    /// Reads a control or statistics file.
    pub(crate) fn read(&self, rel: &str) -> Result<String> {
        let path = self.path(rel);
        std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))
    }

    /// The last line of the instance's `error_log`, where the kernel explains a refused
    /// filter or trigger.
    fn last_error(&self) -> Option<String> {
        let log = std::fs::read_to_string(self.path("error_log")).ok()?;
        let line = log.lines().rev().find(|l| !l.trim().is_empty())?;
        Some(line.trim().to_string())
    }
}

/// Removes the instance `name` of the tracefs mounted now; if tracefs has been unmounted
/// meanwhile, mounts it for the removal (the instance lives on in the kernel either way)
/// and unmounts it again. A missing instance is not an error (ENODEV: the kernel has no
/// instance of that name, though its directory was still listed). rmdir is refused while a
/// file of the instance is open, so a reader that is just closing gets a moment.
pub(crate) fn remove_instance(name: &str) -> Result<()> {
    let _lock = MachineLock::take(LOCK)?;
    let (root, mounted_here) = match find_mount() {
        Some(root) => (root, false),
        None => {
            mount_at(Path::new(DEFAULT_MOUNT))?;
            (PathBuf::from(DEFAULT_MOUNT), true)
        }
    };
    let dir = root.join("instances").join(name);
    let mut result = Ok(());
    for attempt in 0..20 {
        match std::fs::remove_dir(&dir) {
            Ok(()) => {
                result = Ok(());
                break;
            }
            // Gone, unless tracefs itself is (unmounted by someone else than fsynclab).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !root.join("instances").is_dir() => {
                result = Err(anyhow::anyhow!(
                    "cannot remove the trace instance {name}: tracefs at {} was unmounted meanwhile; run `fsynclab cleanup`",
                    root.display()
                ));
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENODEV) => {
                result = Ok(());
                break;
            }
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && attempt < 19 => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => {
                result = Err(anyhow::anyhow!(
                    "cannot remove the trace instance {}: {e} (a process still has one of its files open?)",
                    dir.display()
                ));
                break;
            }
        }
    }
    // The run that mounted tracefs may have ended while this one still traced: whoever
    // removes the last instance from an fsynclab mount unmounts it.
    if mounted_here || mounted_by_fsynclab(&root) {
        unmount_if_unused_locked(&root)?;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mounts(text: &str) -> Vec<MountInfo> {
        crate::kernel::mountinfo::parse_mountinfo(text)
    }

    #[test]
    fn prefers_the_usual_tracefs_mount() {
        let m = mounts(
            "40 23 0:13 / /mnt/t rw,relatime - tracefs nodev rw\n\
             42 23 0:13 / /sys/kernel/tracing rw,relatime - tracefs nodev rw\n",
        );
        assert_eq!(find_mount_in(&m), Some(PathBuf::from(DEFAULT_MOUNT)));
        let m = mounts("40 23 0:13 / /mnt/t rw,relatime - tracefs nodev rw\n");
        assert_eq!(find_mount_in(&m), Some(PathBuf::from("/mnt/t")));
    }

    #[test]
    fn no_tracefs_no_mount() {
        let m = mounts("27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n");
        assert_eq!(find_mount_in(&m), None);
    }

    #[test]
    fn instance_names_are_per_process_and_unique() {
        let a = next_instance_name();
        let b = next_instance_name();
        let pid = std::process::id().to_string();
        assert!(a.starts_with(INSTANCE_PREFIX) && a.contains(&pid), "{a}");
        assert_ne!(a, b);
        assert!(b.starts_with(&format!("{INSTANCE_PREFIX}{pid}")), "{b}");
        let me = std::process::id();
        assert!(is_instance_of(&a, me) && is_instance_of(&b, me));
        assert!(!is_instance_of(&a, me + 1));
        assert!(!is_instance_of("fsynclab-12x", 12) && !is_instance_of("user-trace", me));
    }
}
