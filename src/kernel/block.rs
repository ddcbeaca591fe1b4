//! A block device in sysfs, per Documentation/ABI/stable/sysfs-block: its directory from its
//! device numbers (`/sys/dev/block/MAJ:MIN`, a link into `/sys/devices/...`), and the parse of
//! the queue attributes fsynclab reads. `queue/write_cache` (`write back` or `write
//! through`) and `loop/backing_file` are kept as the kernel words them.

use std::path::{Path, PathBuf};

/// The sysfs directory of block device `major:minor` (a partition's own).
pub(crate) fn dev_dir(major: u32, minor: u32) -> Option<PathBuf> {
    std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()
}

/// The kernel name of block device `major:minor` (`vda1`, `loop0`): what /proc/fs/ext4 and
/// jbd2's thread are named after.
pub(crate) fn name(major: u32, minor: u32) -> Option<String> {
    Some(dev_dir(major, minor)?.file_name()?.to_string_lossy().into_owned())
}

/// The sysfs directory of the whole disk for device `major:minor` (a partition's parent).
pub(crate) fn disk_dir(major: u32, minor: u32) -> Option<PathBuf> {
    let dir = dev_dir(major, minor)?;
    if dir.join("partition").exists() {
        dir.parent().map(Path::to_path_buf)
    } else {
        Some(dir)
    }
}

/// `queue/scheduler`: every scheduler the device offers, the active one in brackets
/// (`mq-deadline kyber [bfq] none`). Returns the active one, if any, and all of them.
pub(crate) fn parse_scheduler(text: &str) -> (Option<String>, Vec<String>) {
    let mut active = None;
    let all = text
        .split_whitespace()
        .map(|w| {
            if let Some(inner) = w.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
                active = Some(inner.to_string());
                inner.to_string()
            } else {
                w.to_string()
            }
        })
        .collect();
    (active, all)
}

/// `queue/rotational`: `1` for a rotating disk, `0` otherwise.
pub(crate) fn parse_rotational(text: &str) -> bool {
    text.trim() == "1"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_marks_the_active_one() {
        let (active, all) = parse_scheduler("mq-deadline kyber [bfq] none\n");
        assert_eq!(active.as_deref(), Some("bfq"));
        assert_eq!(all, ["mq-deadline", "kyber", "bfq", "none"]);
        assert_eq!(parse_scheduler("none").0, None);
    }

    #[test]
    fn rotational_is_one() {
        assert!(parse_rotational("1\n"));
        assert!(!parse_rotational("0\n"));
    }
}
