//! Scratch testbeds whose state file is gone: a run killed with SIGKILL whose state
//! directory was removed afterwards (a test's private one, a `FSYNCLAB_STATE_DIR` deleted,
//! /run cleared) leaves a mount and a loop device that no state file records. They are
//! still fsynclab's by their shape ([`super::super::names`]): a mount point `mnt`, `dev` or
//! `ram` in, or a loop device attached to an image in, a directory
//! `fsynclab-scratch-<pid>-XXXXXXXX` whose process is gone. Their undo stack is rebuilt from
//! what the machine shows, in the order a run makes it, for `cleanup` to undo as it undoes a
//! recorded one.
//!
//! What the machine does not show is not restored: the scheduler, rotational flag and bdi
//! limits a run had set on its loop device (the device is detached, so they matter to
//! nobody until it is attached again, when a run sets its own).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::super::names;
use super::Step;
use crate::kernel::process;

/// A scratch directory of a dead process, and the steps that rebuild its undo stack.
pub(super) struct Orphan {
    pub(super) pid: u32,
    pub(super) steps: Vec<Step>,
}

/// What is mounted in, or attached from, a scratch directory.
#[derive(Default)]
struct Found {
    tmpfs: bool,
    fuse: bool,
    mount: bool,
    /// Loop devices and the images they serve.
    loops: Vec<(String, PathBuf)>,
}

/// The scratch directory a path lies in, with its pid, when the path is one of `parts`
/// below it (`mnt`, or `ram/fsynclab.img`).
fn scratch_dir_of(path: &Path, depth: usize) -> Option<(PathBuf, u32)> {
    let dir = path.ancestors().nth(depth)?;
    let pid = names::scratch_dir_pid(dir.file_name()?.to_str()?)?;
    Some((dir.to_path_buf(), pid))
}

/// `(device, backing file)` of every attached loop device (`/sys/block/loopN/loop/`).
fn attached_loops() -> Vec<(String, String)> {
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let file = crate::kernel::read_trimmed(e.path().join("loop/backing_file"))?;
            name.starts_with("loop").then(|| (format!("/dev/{name}"), file))
        })
        .collect()
}

/// The scratch directories of processes that are gone, which `recorded` (the directories
/// the state files name) does not cover, each with its rebuilt undo stack.
pub(super) fn orphans(recorded: &[PathBuf]) -> Vec<Orphan> {
    let mut found: BTreeMap<(PathBuf, u32), Found> = BTreeMap::new();
    for m in crate::kernel::mounts() {
        let point = Path::new(&m.mount_point);
        let Some(key) = scratch_dir_of(point, 1) else { continue };
        let entry = found.entry(key.clone()).or_default();
        match point.file_name().and_then(|n| n.to_str()) {
            Some(names::MOUNT_DIR) => entry.mount = true,
            Some(names::DEVICE_DIR) => entry.fuse = true,
            Some(names::RAM_DIR) => entry.tmpfs = true,
            _ => {}
        }
    }
    for (device, file) in attached_loops() {
        // The kernel says ` (deleted)` after a removed file's name.
        let image = PathBuf::from(file.strip_suffix(" (deleted)").unwrap_or(&file));
        let key = (1..=2)
            .find_map(|depth| scratch_dir_of(&image, depth).filter(|(_, pid)| names::is_scratch_image(&image, *pid)));
        if let Some(key) = key {
            found.entry(key).or_default().loops.push((device, image));
        }
    }
    found
        .into_iter()
        .filter(|((dir, pid), _)| process::start_time(*pid).is_none() && !recorded.iter().any(|r| r == dir))
        .map(|((dir, pid), f)| Orphan {
            pid,
            steps: rebuilt(dir, f),
        })
        .collect()
}

/// The undo stack of a scratch directory in the order a run builds it: the directory, its
/// tmpfs, the emulated device, the loop devices, the mounted filesystem.
fn rebuilt(dir: PathBuf, found: Found) -> Vec<Step> {
    let mut steps = vec![Step::Directory { path: dir.clone() }];
    if found.tmpfs {
        steps.push(Step::Tmpfs {
            mount_point: dir.join(names::RAM_DIR),
        });
    }
    if found.fuse {
        steps.push(Step::Fuse {
            mount_point: dir.join(names::DEVICE_DIR),
        });
    }
    for (device, image) in found.loops {
        steps.push(Step::Loop {
            device,
            image: Some(image),
        });
    }
    if found.mount {
        steps.push(Step::Mount {
            mount_point: dir.join(names::MOUNT_DIR),
        });
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_directory_is_found_from_its_mount_point_and_its_image() {
        let mnt = Path::new("/tmp/b/fsynclab-scratch-28738-1f6e3ee0/mnt");
        assert_eq!(
            scratch_dir_of(mnt, 1),
            Some((PathBuf::from("/tmp/b/fsynclab-scratch-28738-1f6e3ee0"), 28738))
        );
        let ram_image = Path::new("/tmp/b/fsynclab-scratch-7-0000abcd/ram/fsynclab.img");
        assert_eq!(scratch_dir_of(ram_image, 2).map(|(_, pid)| pid), Some(7));
        assert_eq!(scratch_dir_of(Path::new("/tmp/b/fsynclab-7-0000abcd/mnt"), 1), None);
        assert_eq!(scratch_dir_of(Path::new("/mnt"), 1), None);
    }

    #[test]
    fn the_stack_is_rebuilt_in_the_order_a_run_makes_it() {
        let dir = PathBuf::from("/tmp/b/fsynclab-scratch-7-0000abcd");
        let steps = rebuilt(
            dir.clone(),
            Found {
                tmpfs: false,
                fuse: true,
                mount: true,
                loops: vec![("/dev/loop1".into(), dir.join("dev/image"))],
            },
        );
        let kinds: Vec<&str> = steps
            .iter()
            .map(|s| match s {
                Step::Directory { .. } => "directory",
                Step::Fuse { .. } => "fuse",
                Step::Loop { .. } => "loop",
                Step::Mount { .. } => "mount",
                _ => "other",
            })
            .collect();
        assert_eq!(kinds, ["directory", "fuse", "loop", "mount"]);
        assert!(
            steps.iter().all(|s| s.refusal(7).is_none()),
            "every step has fsynclab's shape"
        );
    }
}
