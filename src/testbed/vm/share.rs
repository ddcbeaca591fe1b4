//! What the guest sees of the host, whatever its paths hold.
//!
//! virtme-ng takes the directories it shares (`--rwdir`, `--rodir`) as words of a shell line
//! and puts their guest paths on the kernel's command line, and QEMU takes its files
//! (`-drive file=`, `-chardev path=`) in comma-separated option lists: a space or a comma in
//! the working directory, `--backing` or `--output`'s directory broke every guest run
//! (virtme-ng's usage text, "invalid --rwdir parameter"). So a path that is not [plain]
//! reaches them as a symbolic link with a plain name in the run's private directory
//! ([`Shares::plain`]), and a directory whose own path is not plain is shared under a plain
//! guest path, then bound at its own path by the guest's script before the command runs
//! ([`Shares::binds`]).
//!
//! The binary's directory is shared read-only under a plain guest path whatever it is
//! ([`Shares::binary`]): the guest's /var/tmp, /run and /var/cache are its own memory, so a
//! fsynclab built or unpacked under /var/tmp was not found inside (exit 127).

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

/// The directories a guest has of its own, in its memory, where the host's are not seen
/// (virtme-ng 1.42's, read from a guest's /proc/mounts; /tmp is the host's under an overlay).
const GUEST_OWN: [&str; 7] = [
    "/var/tmp",
    "/var/log",
    "/var/cache",
    "/var/lib/private",
    "/var/lib/apt",
    "/dev/shm",
    "/run",
];

/// Whether the guest sees a directory of its own where the host has `path`.
pub fn hidden_in_guest(path: &Path) -> bool {
    GUEST_OWN.iter().any(|own| path.starts_with(own))
}

/// Where the guest finds the directory of the fsynclab binary it runs.
const BINARY_DIR_IN_GUEST: &str = "/run/fsynclab-bin";

/// The directories a guest sees besides the host's root, and the links that give odd paths
/// plain names.
pub(super) struct Shares<'a> {
    /// The run's private directory, where the links are made (removed with it).
    links: &'a Path,
    made: usize,
    /// virtme-ng's options sharing them.
    args: Vec<OsString>,
    /// (guest path, own path) of each directory the guest's script binds at its own path.
    binds: Vec<(PathBuf, PathBuf)>,
}

/// Whether `path` can go as it is into virtme-ng's shell line, onto the kernel's command
/// line and into QEMU's option lists: letters, digits and `/._-+@:~` only (no space, comma,
/// `=`, quote or byte beyond ASCII), and short enough to be a UNIX socket's address.
pub fn plain(path: &Path) -> bool {
    let bytes = path.as_os_str().as_bytes();
    bytes.len() < 100
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+@:~".contains(b))
}

impl<'a> Shares<'a> {
    pub(super) fn new(links: &'a Path) -> Shares<'a> {
        Shares {
            links,
            made: 0,
            args: Vec::new(),
            binds: Vec::new(),
        }
    }

    /// `path`, or where it is not [plain], a link to it with a plain name.
    pub(super) fn plain(&mut self, path: &Path) -> std::io::Result<PathBuf> {
        if plain(path) {
            return Ok(path.to_path_buf());
        }
        if !plain(self.links) {
            return Err(std::io::Error::other(format!(
                "the temporary directory {} has characters virtme-ng and QEMU cannot take in a path; set TMPDIR to a plain one",
                self.links.display()
            )));
        }
        self.made += 1;
        let link = self.links.join(format!("path-{}", self.made));
        std::os::unix::fs::symlink(path, &link)?;
        Ok(link)
    }

    /// Shares the host directory `dir` with the guest at its own path, writable or not.
    pub(super) fn directory(&mut self, dir: &Path, writable: bool) -> std::io::Result<PathBuf> {
        if plain(dir) {
            self.share(dir, dir, writable);
            return Ok(dir.to_path_buf());
        }
        let guest = PathBuf::from(format!("/run/fsynclab-share-{}", self.binds.len()));
        let host = self.plain(dir)?;
        self.share(&guest, &host, writable);
        self.binds.push((guest.clone(), dir.to_path_buf()));
        Ok(guest)
    }

    /// Shares the directory of `binary` read-only; returns the path the guest runs it by.
    pub(super) fn binary(&mut self, binary: &Path) -> std::io::Result<PathBuf> {
        let (Some(dir), Some(name)) = (binary.parent(), binary.file_name()) else {
            return Err(std::io::Error::other(format!("{} names no file", binary.display())));
        };
        let host = self.plain(dir)?;
        let guest = Path::new(BINARY_DIR_IN_GUEST);
        self.share(guest, &host, false);
        Ok(guest.join(name))
    }

    fn share(&mut self, guest: &Path, host: &Path, writable: bool) {
        let mut arg = OsString::from(if writable { "--rwdir=" } else { "--rodir=" });
        if guest != host {
            arg.push(guest);
            arg.push("=");
        }
        arg.push(host);
        self.args.push(arg);
    }

    /// virtme-ng's options sharing the directories.
    pub(super) fn args(&self) -> &[OsString] {
        &self.args
    }

    /// The directories the guest's script binds at their own paths: (guest path, own path).
    pub(super) fn binds(&self) -> &[(PathBuf, PathBuf)] {
        &self.binds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_with_a_space_a_comma_or_an_equals_sign_is_not_plain() {
        assert!(plain(Path::new("/var/tmp/fsynclab-1/results")));
        assert!(plain(Path::new("/home/me/src/fsynclab+v2/target/debug")));
        for odd in ["/work/my runs", "/work/a,b", "/work/k=v", "/work/it's", "/work/café"] {
            assert!(!plain(Path::new(odd)), "{odd}");
        }
        assert!(!plain(&PathBuf::from(format!("/{}", "d".repeat(120)))));
    }

    #[test]
    fn an_odd_directory_is_shared_under_a_plain_name_and_bound_at_its_own() {
        let links = tempfile::tempdir().unwrap();
        let odd = tempfile::Builder::new().prefix("my runs,1").tempdir().unwrap();
        let mut shares = Shares::new(links.path());
        let plain_dir = Path::new("/work/runs");
        assert_eq!(shares.directory(plain_dir, true).unwrap(), plain_dir);
        let guest = shares.directory(odd.path(), true).unwrap();
        assert_eq!(guest, Path::new("/run/fsynclab-share-0"));
        let link = links.path().join("path-1");
        assert_eq!(std::fs::read_link(&link).unwrap(), odd.path());
        let args: Vec<String> = shares.args().iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(
            args,
            [
                "--rwdir=/work/runs".to_string(),
                format!("--rwdir=/run/fsynclab-share-0={}", link.display())
            ]
        );
        assert_eq!(shares.binds(), [(guest, odd.path().to_path_buf())]);
    }

    #[test]
    fn the_binary_is_run_from_its_directory_shared_read_only() {
        let links = tempfile::tempdir().unwrap();
        let mut shares = Shares::new(links.path());
        let run = shares
            .binary(Path::new("/var/tmp/clone/target/debug/fsynclab"))
            .unwrap();
        assert_eq!(run, Path::new("/run/fsynclab-bin/fsynclab"));
        assert_eq!(
            shares.args()[0].to_string_lossy(),
            "--rodir=/run/fsynclab-bin=/var/tmp/clone/target/debug"
        );
        assert!(shares.binds().is_empty());
    }
}
