//! What a command run in a guest reads and writes on the host besides its results, checked
//! before the guest boots and shared with it: `--output`'s file or `--results`' directory
//! (the host refuses what the guest could not write at once, where a guest refused it only
//! after its boot), and the files exec's command names where the guest hides the host's
//! directories behind its own.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::error::Usage;
use crate::testbed::vm;

/// What a command run in a guest writes on the host besides its results.
#[derive(Clone, Copy)]
pub(crate) enum Writes<'a> {
    /// `--output FILE` of run, load, probe and exec.
    File(&'a Path),
    /// `--results DIR` of suite.
    Directory(&'a Path),
}

impl Writes<'_> {
    /// Refuses, before the guest boots, what the guest could not write (the host refuses
    /// it at once, a guest only after its boot), and returns the host directory to share
    /// writable with the guest, if any. `--output` naming a device or a FIFO is written by
    /// the guest into its own: /dev/stdout, /dev/stderr and /dev/null are the guest's and
    /// reach the same places; any other is refused, since the guest cannot reach the host's
    /// devices (sharing /dev broke the guest: "9p: broken or compromised client").
    pub(super) fn checked(self, cwd: &Path, store: Option<&Path>) -> Result<Option<PathBuf>, Usage> {
        use std::os::unix::fs::FileTypeExt as _;
        match self {
            Writes::File(path) => {
                crate::named_file::check(path, store)?;
                let is_special =
                    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_char_device() || m.file_type().is_fifo());
                if !is_special {
                    return Ok(existing_parent(&cwd.join(path)));
                }
                let theirs = [
                    "/dev/stdout",
                    "/dev/stderr",
                    "/dev/null",
                    "/dev/fd/1",
                    "/dev/fd/2",
                    "/proc/self/fd/1",
                    "/proc/self/fd/2",
                ];
                match theirs.iter().any(|t| Path::new(t) == path) {
                    true => Ok(None),
                    false => Err(Usage(format!(
                        "--output {}: under --kernel the guest writes it, and it cannot reach the host's devices or FIFOs: name a file, /dev/stdout or /dev/null",
                        path.display()
                    ))),
                }
            }
            Writes::Directory(dir) => {
                let dir = cwd.join(dir);
                let Some(parent) = existing_parent(&dir) else {
                    return Ok(None);
                };
                let place = if dir.is_dir() { dir.clone() } else { parent.clone() };
                if !crate::sys::writable(&place) {
                    return Err(Usage(format!(
                        "--results {}: cannot write into {} ({}); choose another directory",
                        dir.display(),
                        place.display(),
                        crate::sys::why_not_writable(&place)
                    )));
                }
                Ok(Some(parent))
            }
        }
    }
}

/// The directory `path` is in, resolved, when it exists.
fn existing_parent(path: &Path) -> Option<PathBuf> {
    path.parent().and_then(|d| std::fs::canonicalize(d).ok())
}

/// The directories of the files `command` names (the program, a script it is given) that
/// the guest would hide behind its own (under /var/tmp, say), to share them read-only: a
/// `exec -- /var/tmp/x.py` got python's "No such file" from inside.
pub(super) fn read_dirs(command: &[OsString], cwd: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for arg in command {
        let path = cwd.join(arg);
        let Ok(path) = std::fs::canonicalize(&path) else {
            continue;
        };
        if !path.is_file() || !vm::hidden_in_guest(&path) {
            continue;
        }
        if let Some(dir) = path.parent().filter(|d| !dirs.iter().any(|x| x == d)) {
            dirs.push(dir.to_path_buf());
        }
    }
    dirs
}
