//! Machine-wide locks: what two fsynclab processes must not do at the same moment, whatever
//! their state directories (tracefs, for one, is one per machine).
//!
//! A lock is an exclusive flock(2) on `/run/lock/fsynclab-NAME.lock` (`/run/lock` is where
//! the FHS puts lock files; `/run` where it is missing). The kernel drops it when its holder
//! exits, SIGKILL included, so it never goes stale; the empty file stays, as lock files do.

use std::fs::{File, OpenOptions};
use std::path::PathBuf;

use anyhow::Result;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// A held lock, released when dropped.
#[derive(Debug)]
pub struct MachineLock {
    _file: Flock<File>,
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
        match Flock::lock(open(name)?, FlockArg::LockExclusiveNonblock) {
            Ok(held) => Ok(Some(MachineLock { _file: held })),
            Err((_, Errno::EWOULDBLOCK)) => Ok(None),
            Err((_, e)) => anyhow::bail!("cannot lock {}: {}", path(name).display(), std::io::Error::from(e)),
        }
    }

    /// Waits until lock `name` is free and takes it.
    pub fn take(name: &str) -> Result<MachineLock> {
        let path = path(name);
        let mut file = open(name)?;
        loop {
            match Flock::lock(file, FlockArg::LockExclusive) {
                Ok(held) => return Ok(MachineLock { _file: held }),
                Err((again, Errno::EINTR)) => file = again,
                Err((_, e)) => anyhow::bail!("cannot lock {}: {}", path.display(), std::io::Error::from(e)),
            }
        }
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
