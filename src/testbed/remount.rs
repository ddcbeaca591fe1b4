//! A scratch filesystem taken off its mount point and put back on the same loop device, as
//! an application finds it after a restart (`fsync-errors` reads what reached the disk after
//! a failed writeback this way), and the state a filesystem is in after errors: writable,
//! remounted read-only, or shut down, with what the kernel logged about its device.
//!
//! The undo stack is left as it is: the mount step stays recorded throughout, and undoing a
//! mount that is not there does nothing, so a kill between the unmount and the mount leaves
//! nothing `fsynclab cleanup` cannot undo. (The power-cut cycle's `recover` and `check` take
//! the filesystem off its disk instead; these are the small steps for a disk that stays.)

use std::fmt;
use std::path::Path;

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

use super::{mount, Prepared};
use crate::environment::Fingerprint;
use crate::kernel::kmsg::{self, KernelLog};
use crate::sys::Errno;

/// What a filesystem lets an application do after errors, as a metadata change (a new
/// directory, then removed) finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "state", content = "errno")]
pub enum FsState {
    /// The change went through.
    Writable,
    /// Mounted read-only (the kernel remounted it after an error), or the change failed
    /// with EROFS.
    ReadOnly,
    /// The change failed with another error: the filesystem refuses changes (a shut down
    /// XFS answers EIO, and so does a Btrfs forced read-only by an aborted transaction).
    Refusing(Errno),
}

impl fmt::Display for FsState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FsState::Writable => write!(f, "writable"),
            FsState::ReadOnly => write!(f, "read-only"),
            FsState::Refusing(e) => write!(f, "refuses changes ({e})"),
        }
    }
}

/// The probe directory [`Prepared::filesystem_state`] makes and removes.
const PROBE_DIR: &str = ".fsynclab-state-probe";

impl Prepared {
    /// The scratch filesystem's type, mount options and loop device.
    fn scratch_mount(&self) -> Result<(&str, &str, &str)> {
        let s = self
            .scratch
            .as_ref()
            .filter(|_| !self.live().unplugged)
            .context("there is no scratch filesystem on a disk to mount")?;
        Ok((&s.fstype, &s.mount_options, &s.loop_device))
    }

    /// Unmounts the scratch filesystem, keeping its loop device and disk. Whatever holds it
    /// (an open file) must be closed first: a busy mount is an error naming who holds it.
    pub fn unmount_scratch(&self) -> Result<()> {
        self.scratch_mount()?;
        mount::unmount(&self.dir)
    }

    /// Mounts the scratch filesystem again where it was, with the options it was made with
    /// (the filesystem replays its journal or log as it mounts).
    pub fn mount_scratch(&self) -> Result<()> {
        let (fstype, options, device) = self.scratch_mount()?;
        if mount::is_mount_point(&self.dir) {
            anyhow::bail!("{} is mounted already", self.dir.display());
        }
        mount::mount(fstype, device, &self.dir, options)
    }

    /// The state of the filesystem the testbed's directory is on: read-only when mounted so,
    /// else as a new directory (made and removed at once) finds it.
    pub fn filesystem_state(&self) -> FsState {
        state_of(&self.dir)
    }

    /// The kernel's log from now on, to hear what it says about the scratch device during
    /// a run (None without a scratch filesystem on a disk).
    pub(crate) fn kernel_log(&self) -> Option<KernelLog> {
        self.loop_device().map(|_| KernelLog::from_now())
    }

    /// Records in `env` what the kernel said about the scratch device since `log` was
    /// opened, and, when `failed` (calls or the disk failed during the run), the state the
    /// filesystem is left in if it is no longer writable.
    pub(crate) fn note_after_run(&self, env: &mut Fingerprint, log: Option<KernelLog>, failed: bool) {
        let (Some(device), Some(info)) = (self.loop_device(), env.scratch.as_mut()) else {
            return;
        };
        if let Some(mut log) = log {
            info.kernel_messages = kmsg::naming(log.read_new(), device, KERNEL_MESSAGES);
        }
        if failed {
            let state = self.filesystem_state();
            info.state_after_run = (state != FsState::Writable).then(|| state.to_string());
        }
    }
}

/// The most kernel messages a result keeps.
const KERNEL_MESSAGES: usize = 20;

/// The state of the filesystem mounted at or holding `dir`.
pub fn state_of(dir: &Path) -> FsState {
    let mounts = crate::kernel::mounts();
    let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let read_only =
        crate::kernel::mount_of(&mounts, &canonical).is_some_and(|m| m.mount_options.split(',').any(|o| o == "ro"));
    if read_only {
        return FsState::ReadOnly;
    }
    let probe = dir.join(PROBE_DIR);
    match std::fs::create_dir(&probe) {
        Ok(()) => {
            let _ = std::fs::remove_dir(&probe);
            FsState::Writable
        }
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => FsState::Writable,
        Err(e) if e.raw_os_error() == Some(libc::EROFS) => FsState::ReadOnly,
        Err(e) => FsState::Refusing(Errno::of(&e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writable_directory_is_writable_and_the_probe_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(state_of(dir.path()), FsState::Writable);
        assert!(!dir.path().join(PROBE_DIR).exists());
    }

    #[test]
    fn states_read_as_a_table_cell_and_back() {
        assert_eq!(FsState::Refusing(Errno(libc::EIO)).to_string(), "refuses changes (EIO)");
        for s in [
            FsState::Writable,
            FsState::ReadOnly,
            FsState::Refusing(Errno(libc::EIO)),
        ] {
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(serde_json::from_str::<FsState>(&json).unwrap(), s, "{json}");
        }
    }
}
