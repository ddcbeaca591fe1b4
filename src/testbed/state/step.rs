//! One step a run takes, with what is needed to undo it: how it is undone and the undo
//! checked, how it reads in a message, and — for `cleanup`, which trusts no state file —
//! whether its paths have the shape of fsynclab's own.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::super::{bdi, loopdev, mount, names, sysctl, tracefs};

/// One thing done (or about to be), with what is needed to undo it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// A directory we create (removed with everything in it): a scratch directory or a
    /// run's work directory.
    Directory { path: PathBuf },
    /// A tmpfs we mount for the `ram` device profile.
    Tmpfs { mount_point: PathBuf },
    /// The FUSE file system serving the image (the emulated device).
    Fuse { mount_point: PathBuf },
    /// A loop device attached to the image. Undone by the image: every loop device still
    /// attached to it is detached, one reused since for another file is left alone. The
    /// device is empty while `losetup` is choosing it.
    Loop {
        #[serde(default)]
        device: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        image: Option<PathBuf>,
    },
    /// The scratch filesystem, mounted.
    Mount { mount_point: PathBuf },
    /// The I/O scheduler of a loop device, and the one it had before.
    Scheduler {
        device: String,
        previous: String,
        /// The image the device serves for us: a device serving another file since belongs
        /// to someone else and is left alone.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        image: Option<PathBuf>,
    },
    /// Whether a loop device is marked rotational, and what it was before.
    Rotational {
        device: String,
        previous: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        image: Option<PathBuf>,
    },
    /// A file of a loop device's bdi (`/sys/block/loopN/bdi/`: `strict_limit`,
    /// `max_ratio_fine`, `min_ratio_fine`) and the value it had before `--bdi` changed it.
    Bdi {
        device: String,
        file: String,
        previous: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        image: Option<PathBuf>,
    },
    /// A `vm.` sysctl and the value it had before.
    Sysctl { name: String, previous: u64 },
    /// A tracefs instance (`instances/NAME`) for `--explain`, recorded before it is made so
    /// that no moment leaves one unrecorded; undoing a step whose instance was never made
    /// does nothing.
    TraceInstance { name: String },
    /// tracefs, mounted by fsynclab because it was not; unmounted only if no instance of
    /// anyone remains in it.
    Tracefs { mount_point: PathBuf },
}

impl Step {
    /// The step's kind, as the fault-injection points name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Step::Directory { .. } => "directory",
            Step::Tmpfs { .. } => "tmpfs",
            Step::Fuse { .. } => "fuse",
            Step::Loop { .. } => "loop",
            Step::Mount { .. } => "mount",
            Step::Scheduler { .. } => "scheduler",
            Step::Rotational { .. } => "rotational",
            Step::Bdi { .. } => "bdi",
            Step::Sysctl { .. } => "sysctl",
            Step::TraceInstance { .. } => "trace_instance",
            Step::Tracefs { .. } => "tracefs",
        }
    }

    /// Whether later steps live inside this one (a mount on a loop device on an image in a
    /// directory): while it cannot be undone, neither can the containers done before it.
    pub(super) fn is_container(&self) -> bool {
        !matches!(
            self,
            Step::Scheduler { .. } | Step::Rotational { .. } | Step::Bdi { .. } | Step::Sysctl { .. }
        )
    }

    /// Undoes this step and checks that it is undone; an error says what is left and why.
    pub fn undo(&self) -> Result<()> {
        match self {
            Step::Directory { path } => {
                let path = mount::nothing_mounted_under(path)?;
                match std::fs::remove_dir_all(path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        anyhow::bail!("cannot remove {}: {e}", path.display())
                    }
                    _ if path.symlink_metadata().is_ok() => anyhow::bail!("{} is still there", path.display()),
                    _ => Ok(()),
                }
            }
            Step::Tmpfs { mount_point } | Step::Fuse { mount_point } | Step::Mount { mount_point } => {
                mount::unmount(mount_point)
            }
            Step::Loop { image: Some(image), .. } => loopdev::detach(image),
            Step::Loop { image: None, device } => {
                anyhow::bail!("{device}: no image recorded, so it cannot be told apart from someone else's")
            }
            // A device serving another file since belongs to someone else: left alone.
            Step::Scheduler { device, image, .. }
            | Step::Rotational { device, image, .. }
            | Step::Bdi { device, image, .. }
                if !still_ours(device, image.as_deref()) =>
            {
                Ok(())
            }
            Step::Scheduler { device, previous, .. } => loopdev::set_scheduler(device, previous),
            Step::Rotational { device, previous, .. } => match loopdev::set_rotational(device, *previous) {
                // A detached loop device may refuse; the next attach sets it afresh.
                Err(_) if loopdev::backing_file(device).is_none() => Ok(()),
                r => r,
            },
            // A bdi outlives the image it served (the loop device stays), so it is put back
            // whether or not the device is still attached.
            Step::Bdi {
                device, file, previous, ..
            } => bdi::write(device, file, *previous),
            Step::Sysctl { name, previous } => sysctl::write(name, *previous),
            Step::TraceInstance { name } => tracefs::remove_instance(name),
            Step::Tracefs { mount_point } => tracefs::unmount_if_unused(mount_point),
        }
    }

    /// Why `fsynclab cleanup` must not undo this step of process `pid`, if it must not: a
    /// path without fsynclab's shape, a device that is not a loop device, a sysctl that no
    /// run sets.
    pub(super) fn refusal(&self, pid: u32) -> Option<String> {
        let not_ours = |what: &Path, shape: &str| {
            Some(format!(
                "{} does not have the shape of {shape} made by pid {pid}",
                what.display()
            ))
        };
        match self {
            Step::Directory { path } => {
                if !names::is_scratch_dir(path, pid) && !names::is_work_dir(path, pid) {
                    return not_ours(
                        path,
                        &format!("a directory (fsynclab-scratch-{pid}-XXXXXXXX or fsynclab-{pid}-XXXXXXXX)"),
                    );
                }
                match path.symlink_metadata() {
                    Ok(m) if !m.is_dir() => Some(format!("{} is not a directory", path.display())),
                    _ => None,
                }
            }
            Step::Tmpfs { mount_point } | Step::Fuse { mount_point } | Step::Mount { mount_point } => {
                let name = match self {
                    Step::Tmpfs { .. } => names::RAM_DIR,
                    Step::Fuse { .. } => names::DEVICE_DIR,
                    _ => names::MOUNT_DIR,
                };
                (!names::is_in_scratch_dir(mount_point, pid, &[name]))
                    .then(|| not_ours(mount_point, &format!("the `{name}` mount point of a scratch directory")))
                    .flatten()
            }
            Step::Loop { image, .. } => match image {
                Some(image) if names::is_scratch_image(image, pid) => None,
                Some(image) => not_ours(image, "a scratch image"),
                None => Some("a loop device without its image".into()),
            },
            Step::Bdi { file, .. } if !bdi::RESTORED.contains(&file.as_str()) => {
                Some(format!("bdi {file} is not a file fsynclab restores"))
            }
            Step::Scheduler { device, image, .. }
            | Step::Rotational { device, image, .. }
            | Step::Bdi { device, image, .. } => {
                if !is_loop_device(device) {
                    Some(format!("{device} is not a loop device"))
                } else {
                    image
                        .as_ref()
                        .filter(|i| !names::is_scratch_image(i, pid))
                        .and_then(|i| not_ours(i, "a scratch image"))
                }
            }
            Step::Sysctl { name, .. } => {
                (!sysctl::SETTABLE.contains(&name.as_str())).then(|| format!("vm.{name} is not a sysctl fsynclab sets"))
            }
            Step::TraceInstance { name } => (!tracefs::is_instance_of(name, pid))
                .then(|| format!("trace instance {name} does not have the shape of one made by pid {pid}")),
            Step::Tracefs { mount_point } => (mount_point != Path::new(tracefs::DEFAULT_MOUNT))
                .then(|| not_ours(mount_point, "the tracefs mount point fsynclab uses"))
                .flatten(),
        }
    }

    /// One line for messages: `mount /tmp/x/mnt`.
    pub fn describe(&self) -> String {
        match self {
            Step::Directory { path } => format!("directory {}", path.display()),
            Step::Tmpfs { mount_point } => format!("tmpfs at {}", mount_point.display()),
            Step::Fuse { mount_point } => format!("emulated device (FUSE) at {}", mount_point.display()),
            Step::Loop { device, image } if device.is_empty() => format!(
                "loop device on {}",
                image.as_deref().unwrap_or(Path::new("?")).display()
            ),
            Step::Loop { device, .. } => format!("loop device {device}"),
            Step::Mount { mount_point } => format!("mount {}", mount_point.display()),
            Step::Scheduler { device, previous, .. } => format!("scheduler of {device} (back to {previous})"),
            Step::Rotational { device, previous, .. } => format!("rotational flag of {device} (back to {previous})"),
            Step::Bdi {
                device, file, previous, ..
            } => format!("bdi {file} of {device} (back to {previous})"),
            Step::Sysctl { name, previous } => format!("vm.{name} (back to {previous})"),
            Step::TraceInstance { name } => format!("trace instance {name}"),
            Step::Tracefs { mount_point } => format!("tracefs at {}", mount_point.display()),
        }
    }
}

/// `/dev/loopN`.
fn is_loop_device(device: &str) -> bool {
    device
        .strip_prefix("/dev/loop")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether loop `device` still serves `image` for us, or serves nothing (so that putting
/// its setting back restores the machine): one attached to another file belongs to
/// someone else now.
fn still_ours(device: &str, image: Option<&Path>) -> bool {
    match (loopdev::backing_file(device), image) {
        (None, _) | (Some(_), None) => true,
        (Some(file), Some(image)) => {
            let image = image.to_string_lossy();
            file == image || file == format!("{image} (deleted)")
        }
    }
}
