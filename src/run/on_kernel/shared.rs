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
    /// writable with the guest, if any. `--output` naming a standard stream is written by
    /// the guest into its own, whatever this process's stream is (a pipe, a terminal, a
    /// file): /dev/stdout, /dev/stderr and /dev/null are the guest's and reach the same
    /// places. Any other device, FIFO or socket, and anything in the host's /dev, /proc or
    /// /sys, is refused: those are never shared with a guest (sharing /dev broke the guest,
    /// "9p: broken or compromised client", and a guest's write of its output replaced the
    /// host's /dev/stdout link with a regular file).
    pub(super) fn checked(self, cwd: &Path, store: Option<&Path>) -> Result<Option<PathBuf>, Usage> {
        use std::os::unix::fs::FileTypeExt as _;
        match self {
            Writes::File(path) => {
                crate::named_file::check(path, store)?;
                if GUESTS_OWN.iter().any(|t| Path::new(t) == path) {
                    return Ok(None);
                }
                let full = cwd.join(path);
                let special = |m: std::fs::Metadata| {
                    let t = m.file_type();
                    t.is_char_device() || t.is_block_device() || t.is_fifo() || t.is_socket()
                };
                let parent = existing_parent(&full);
                let in_system = |p: &Path| ["/dev", "/proc", "/sys"].iter().any(|s| p.starts_with(s));
                let refused = std::fs::metadata(&full).is_ok_and(special)
                    || std::fs::canonicalize(&full).is_ok_and(|f| in_system(&f))
                    || parent.as_deref().is_some_and(in_system);
                match refused {
                    false => Ok(parent),
                    true => Err(Usage(format!(
                        "--output {}: under --kernel the guest writes it, and it cannot reach the host's devices, FIFOs or /dev, /proc, /sys: name a file, /dev/stdout or /dev/null",
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

/// The names of `--output` that are the guest's own standard streams (or its /dev/null).
const GUESTS_OWN: [&str; 7] = [
    "/dev/stdout",
    "/dev/stderr",
    "/dev/null",
    "/dev/fd/1",
    "/dev/fd/2",
    "/proc/self/fd/1",
    "/proc/self/fd/2",
];

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 64, again: with this process's stdout a regular file (`> result.json`),
    /// `--output /dev/stdout` shared the host's /dev with the guest, whose write then broke
    /// its 9p share (exit 255) or replaced the host's /dev/stdout link with a regular file.
    #[test]
    fn the_guests_standard_streams_are_its_own_whatever_this_process_writes_to() {
        let cwd = Path::new("/");
        for name in GUESTS_OWN {
            let got = Writes::File(Path::new(name)).checked(cwd, None);
            assert!(matches!(got, Ok(None)), "{name}: {got:?}");
        }
    }

    #[test]
    fn an_output_in_dev_proc_or_sys_is_refused_not_shared() {
        for name in [
            "/dev/fsynclab-no-such-output",
            "/proc/fsynclab-no-such-output",
            "/dev/fd/3",
        ] {
            let got = Writes::File(Path::new(name)).checked(Path::new("/"), None);
            assert!(got.is_err(), "{name}: {got:?}");
        }
        // The same through a link whose own directory is a plain one.
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("out");
        std::os::unix::fs::symlink("/dev/fsynclab-no-such-output", &link).unwrap();
        assert!(Writes::File(&link).checked(Path::new("/"), None).is_err());
    }

    #[test]
    fn an_output_in_a_plain_directory_shares_that_directory() {
        let dir = tempfile::tempdir().unwrap();
        let got = Writes::File(&dir.path().join("run.json")).checked(Path::new("/"), None);
        assert_eq!(got.ok().flatten(), Some(std::fs::canonicalize(dir.path()).unwrap()));
    }
}
