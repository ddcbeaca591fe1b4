//! `/proc/self/mountinfo`: what is mounted where, and which filesystem a path is on.
//! Parsed per Documentation/filesystems/proc.rst, section 3.5 ("/proc/<pid>/mountinfo").

use std::path::Path;
use std::str::FromStr;

/// One line of mountinfo.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountInfo {
    pub mount_id: u32,
    pub major: u32,
    pub minor: u32,
    pub root: String,
    pub mount_point: String,
    pub mount_options: String,
    pub fstype: String,
    pub source: String,
    pub super_options: String,
}

impl FromStr for MountInfo {
    type Err = String;

    /// `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue`:
    /// mount id, parent id, major:minor, root, mount point, mount options, optional fields
    /// up to `-`, fstype, source, super options. The parent id and optional fields are ignored.
    fn from_str(line: &str) -> Result<Self, Self::Err> {
        let bad = || format!("malformed mountinfo line: {line}");
        let (left, right) = line.split_once(" - ").ok_or_else(bad)?;
        let l: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        if l.len() < 6 || r.len() < 3 {
            return Err(bad());
        }
        let (major, minor) = l[2].split_once(':').ok_or_else(bad)?;
        Ok(MountInfo {
            mount_id: l[0].parse().map_err(|_| bad())?,
            major: major.parse().map_err(|_| bad())?,
            minor: minor.parse().map_err(|_| bad())?,
            root: unescape(l[3]),
            mount_point: unescape(l[4]),
            mount_options: l[5].to_string(),
            fstype: r[0].to_string(),
            source: unescape(r[1]),
            super_options: r[2].to_string(),
        })
    }
}

/// Undoes the octal escapes (`\040` for a space) the kernel uses in mountinfo paths.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 4 <= bytes.len() {
            let digits = std::str::from_utf8(&bytes[i + 1..i + 4]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(digits, 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses all of mountinfo, skipping lines it cannot read.
pub fn parse_mountinfo(text: &str) -> Vec<MountInfo> {
    text.lines().filter_map(|l| l.parse().ok()).collect()
}

/// This process's mounts now (none when /proc is not mounted), in mountinfo's order: of
/// several mounts on one point, the last is on top.
pub fn mounts() -> Vec<MountInfo> {
    parse_mountinfo(&std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default())
}

/// The mount that holds `path` (canonical): the longest mount point that is a prefix of it;
/// of several mounts on the same point, the last (the one on top).
pub fn mount_of<'a>(mounts: &'a [MountInfo], path: &Path) -> Option<&'a MountInfo> {
    mounts
        .iter()
        .filter(|m| path.starts_with(&m.mount_point))
        .fold(None, |best: Option<&MountInfo>, m| match best {
            Some(b) if b.mount_point.len() > m.mount_point.len() => Some(b),
            _ => Some(m),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = include_str!("../../tests/fixtures/mountinfo.txt");

    #[test]
    fn parses_mountinfo_fixture() {
        let mounts = parse_mountinfo(MOUNTINFO);
        assert_eq!(mounts.len(), 6);
        let root = &mounts[0];
        assert_eq!(root.fstype, "ext4");
        assert_eq!(root.source, "/dev/vda");
        assert_eq!((root.major, root.minor), (254, 0));
        assert_eq!(root.mount_options, "rw,relatime");
        assert_eq!(root.super_options, "rw");
        let spaced = mounts.iter().find(|m| m.fstype == "xfs").unwrap();
        assert_eq!(spaced.mount_point, "/mnt/with space");
    }

    #[test]
    fn longest_prefix_and_topmost_mount_wins() {
        let mounts = parse_mountinfo(MOUNTINFO);
        assert_eq!(mount_of(&mounts, Path::new("/home/u/x")).unwrap().fstype, "ext4");
        assert_eq!(mount_of(&mounts, Path::new("/tmp/fsynclab-1")).unwrap().fstype, "tmpfs");
        assert_eq!(mount_of(&mounts, Path::new("/mnt/with space/a")).unwrap().fstype, "xfs");
        // Two mounts on /srv: the later one is on top.
        assert_eq!(mount_of(&mounts, Path::new("/srv/db")).unwrap().fstype, "btrfs");
        // A sibling whose name merely starts the same is not inside.
        assert_eq!(mount_of(&mounts, Path::new("/tmpx")).unwrap().fstype, "ext4");
    }
}
