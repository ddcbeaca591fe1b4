//! The shapes of every path fsynclab creates, in one place: runs use them to make paths, and
//! `fsynclab cleanup` refuses to touch anything else, whatever a state file says (a state
//! file is data, and data can be wrong: edited, corrupted, or written by another version).
//!
//! - scratch directory: `fsynclab-scratch-<pid>-<8 hex digits>`, holding `fsynclab.img`
//!   (or `ram/fsynclab.img` on a private tmpfs at `ram`), the emulated device's FUSE mount
//!   `dev` serving `dev/image`, and the scratch filesystem's mount point `mnt`;
//! - work directory of a run: `fsynclab-<pid>-<8 hex digits>`.
//!
//! The pid in a name must be the pid of the run that made it.

use std::path::{Component, Path};
use std::time::{SystemTime, UNIX_EPOCH};

/// The image file in a scratch directory (or in its `ram` tmpfs).
pub const IMAGE_FILE: &str = "fsynclab.img";
/// The private tmpfs of `--device ram`, inside a scratch directory.
pub const RAM_DIR: &str = "ram";
/// The emulated device's FUSE mount, inside a scratch directory.
pub const DEVICE_DIR: &str = "dev";
/// The scratch filesystem's mount point, inside a scratch directory.
pub const MOUNT_DIR: &str = "mnt";

/// 8 hex digits that tell apart two directories of one process.
fn stamp() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{nanos:08x}")
}

/// A new scratch directory name for this process.
pub fn scratch_dir_name() -> String {
    format!("fsynclab-scratch-{}-{}", std::process::id(), stamp())
}

/// A new work directory name for this process.
pub fn work_dir_name() -> String {
    format!("fsynclab-{}-{}", std::process::id(), stamp())
}

/// The pid in `name` if it is `<prefix><pid>-<8 hex digits>`.
fn pid_in(name: &str, prefix: &str) -> Option<u32> {
    let rest = name.strip_prefix(prefix)?;
    let (pid, hex) = rest.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || hex.len() != 8 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    pid.parse().ok()
}

/// The pid of the run whose scratch directory is named `name`.
pub fn scratch_dir_pid(name: &str) -> Option<u32> {
    pid_in(name, "fsynclab-scratch-")
}

/// The pid of the run whose work directory is named `name`.
pub fn work_dir_pid(name: &str) -> Option<u32> {
    pid_in(name, "fsynclab-")
}

/// Whether `path` is absolute and plain: no `.`, `..` or empty components, so that what it
/// names is what it says.
fn plain_absolute(path: &Path) -> bool {
    path.is_absolute()
        && path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
}

fn file_name(path: &Path) -> Option<&str> {
    path.file_name()?.to_str()
}

/// Whether `path` is a scratch directory of process `pid`.
pub fn is_scratch_dir(path: &Path, pid: u32) -> bool {
    plain_absolute(path) && file_name(path).and_then(scratch_dir_pid) == Some(pid)
}

/// Whether `path` is a work directory of process `pid`.
pub fn is_work_dir(path: &Path, pid: u32) -> bool {
    plain_absolute(path) && file_name(path).and_then(work_dir_pid) == Some(pid)
}

/// Whether `path` is `<scratch directory of pid>/<parts...>`.
pub fn is_in_scratch_dir(path: &Path, pid: u32, parts: &[&str]) -> bool {
    let mut dir = path;
    for part in parts.iter().rev() {
        if file_name(dir) != Some(part) {
            return false;
        }
        let Some(parent) = dir.parent() else { return false };
        dir = parent;
    }
    is_scratch_dir(dir, pid)
}

/// Whether `path` is an image a loop device of `pid`'s scratch run is attached to:
/// `fsynclab.img`, `ram/fsynclab.img` or `dev/image` in its scratch directory.
pub fn is_scratch_image(path: &Path, pid: u32) -> bool {
    is_in_scratch_dir(path, pid, &[IMAGE_FILE])
        || is_in_scratch_dir(path, pid, &[RAM_DIR, IMAGE_FILE])
        || is_in_scratch_dir(path, pid, &[DEVICE_DIR, super::device::fuse::IMAGE_NAME])
}

/// Whether `dir` is the scratch filesystem's mount point of this very process (a work
/// directory made there goes away with the scratch directory and needs no record).
pub fn is_own_scratch_mount(dir: &Path) -> bool {
    std::fs::canonicalize(dir).is_ok_and(|d| is_in_scratch_dir(&d, std::process::id(), &[MOUNT_DIR]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_with_the_pid() {
        let me = std::process::id();
        assert_eq!(scratch_dir_pid(&scratch_dir_name()), Some(me));
        assert_eq!(work_dir_pid(&work_dir_name()), Some(me));
        // A scratch directory is not a work directory, and the other way round.
        assert_eq!(work_dir_pid(&scratch_dir_name()), None);
        assert_eq!(scratch_dir_pid(&work_dir_name()), None);
    }

    #[test]
    fn only_our_shapes_pass() {
        let dir = Path::new("/srv/b/fsynclab-scratch-42-0badf00d");
        assert!(is_scratch_dir(dir, 42));
        assert!(!is_scratch_dir(dir, 43), "another pid");
        for bad in [
            "/etc",
            "/",
            "relative/fsynclab-scratch-42-0badf00d",
            "/srv/b/fsynclab-scratch-42-0badf00d/../../etc",
            "/srv/b/fsynclab-scratch-42-0badf00",
            "/srv/b/fsynclab-scratch-42-0badf00g",
            "/srv/b/fsynclab-scratch--0badf00d",
            "/srv/b/fsynclab-scratch-42-0badf00d-x",
        ] {
            assert!(!is_scratch_dir(Path::new(bad), 42), "{bad}");
        }
        assert!(is_in_scratch_dir(&dir.join("mnt"), 42, &[MOUNT_DIR]));
        assert!(!is_in_scratch_dir(&dir.join("etc"), 42, &[MOUNT_DIR]));
        assert!(!is_in_scratch_dir(Path::new("/mnt"), 42, &[MOUNT_DIR]));
        assert!(is_scratch_image(&dir.join("fsynclab.img"), 42));
        assert!(is_scratch_image(&dir.join("ram/fsynclab.img"), 42));
        assert!(is_scratch_image(&dir.join("dev/image"), 42));
        assert!(!is_scratch_image(&dir.join("dev/other"), 42));
        assert!(!is_scratch_image(Path::new("/var/lib/disk.img"), 42));
        assert!(is_work_dir(Path::new("/data/fsynclab-42-00000001"), 42));
        assert!(!is_work_dir(Path::new("/data/fsynclab-42-00000001"), 7));
        assert!(!is_work_dir(Path::new("/home/user"), 42));
    }
}
