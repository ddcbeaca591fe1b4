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
    /// Takes lock `name` if it is free; None while another process holds it.
    pub fn try_take(name: &str) -> Result<Option<MachineLock>> {
        let file = open(name)?;
        // SAFETY: flock on a descriptor we own; no memory is passed.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(Some(MachineLock { _file: file }));
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
            Ok(None)
        } else {
            anyhow::bail!("cannot lock {}: {err}", path(name).display())
        }
    }

    /// Waits until lock `name` is free and takes it.
    pub fn take(name: &str) -> Result<MachineLock> {
        let path = path(name);
        let file = open(name)?;
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

/// The file of lock `name`, opened (and made if missing). flock needs no write access: a
/// user who cannot write root's lock file reads it.
fn open(name: &str) -> Result<File> {
    let path = path(name);
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .or_else(|_| File::open(&path))
        .map_err(|e| anyhow::anyhow!("cannot open the lock file {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the sysctl lock relies on (issue 19, review: it lived in the state directory, so
    /// runs with different state directories changed the sysctls under each other).
    #[test]
    fn one_holder_at_a_time_and_released_on_drop() {
        let name = format!("test-{}", std::process::id());
        let first = MachineLock::try_take(&name).unwrap().expect("free at first");
        // flock locks belong to the open file: a second open in this process conflicts too.
        assert!(MachineLock::try_take(&name).unwrap().is_none(), "held");
        drop(first);
        assert!(MachineLock::try_take(&name).unwrap().is_some(), "released");
        let _ = std::fs::remove_file(path(&name));
    }
}
