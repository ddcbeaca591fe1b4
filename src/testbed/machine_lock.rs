//! Machine-wide locks: what two fsynclab processes must not do at the same moment, whatever
//! their state directories (tracefs, for one, is one per machine).
//!
//! A lock is an exclusive flock(2) on `/run/lock/fsynclab-NAME.lock` (`/run/lock` is where
//! the FHS puts lock files; `/run` where it is missing). The kernel drops it when its holder
//! exits, SIGKILL included, so it never goes stale; the empty file stays, as lock files do.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd as _;
use std::path::PathBuf;

use anyhow::Result;

/// A held lock, released when dropped.
#[derive(Debug)]
pub struct MachineLock {
    _file: File,
}

/// The file of lock `name`.
pub fn path(name: &str) -> PathBuf {
    let dir = if std::path::Path::new("/run/lock").is_dir() {
        "/run/lock"
    } else {
        "/run"
    };
    PathBuf::from(dir).join(format!("fsynclab-{name}.lock"))
}

impl MachineLock {
    /// Waits until lock `name` is free and takes it.
    pub fn take(name: &str) -> Result<MachineLock> {
        let path = path(name);
        // flock needs no write access: a user who cannot write root's lock file reads it.
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .or_else(|_| File::open(&path))
            .map_err(|e| anyhow::anyhow!("cannot open the lock file {}: {e}", path.display()))?;
        // SAFETY: flock on a descriptor we own; no memory is passed.
        while unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                anyhow::bail!("cannot lock {}: {err}", path.display());
            }
        }
        Ok(MachineLock { _file: file })
    }
}
