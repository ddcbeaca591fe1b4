//! The behaviour fsync-errors is set beside: what the application is told and sees, as
//! Rebello et al. published it (USENIX ATC 2020), and where a measured row differs from it.

use super::Behaviour;

/// What the application is told and sees, as published for Linux 5.x by Rebello et al.,
/// "Can Applications Recover from fsync Failures?", USENIX ATC 2020 (single block update,
/// the fault on a data block), as the authors' CuttleFS encodes each filesystem
/// (github.com/WiscADSL/cuttlefs: cuttlefs/fsyncs.py, tests/fstests.py).
pub(crate) struct Published {
    pub(crate) fstype: &'static str,
    /// The data= mount option it applies to (ext4), or any.
    pub(crate) data_mode: Option<&'static str>,
    pub(crate) first_fsync: &'static str,
    pub(crate) second_fsync: &'static str,
    pub(crate) fd_before: &'static str,
    pub(crate) fd_after: &'static str,
    pub(crate) page: &'static str,
    pub(crate) on_disk: &'static str,
}

pub(crate) const PUBLISHED: [Published; 4] = [
    Published {
        fstype: "ext4",
        data_mode: Some("ordered"),
        first_fsync: "EIO",
        second_fsync: "0",
        fd_before: "EIO",
        fd_after: "0",
        page: "new",
        on_disk: "old",
    },
    Published {
        fstype: "ext4",
        data_mode: Some("journal"),
        first_fsync: "0",
        second_fsync: "EIO",
        fd_before: "EIO",
        fd_after: "0",
        page: "new",
        on_disk: "old",
    },
    Published {
        fstype: "xfs",
        data_mode: None,
        first_fsync: "EIO",
        second_fsync: "0",
        fd_before: "EIO",
        fd_after: "0",
        page: "new",
        on_disk: "old",
    },
    Published {
        fstype: "btrfs",
        data_mode: None,
        first_fsync: "EIO",
        second_fsync: "0",
        fd_before: "EIO",
        fd_after: "0",
        page: "old",
        on_disk: "old",
    },
];

/// The published row for `filesystem` (`ext4` alone is data=ordered, ext4's default).
pub(crate) fn published(filesystem: &str) -> Option<&'static Published> {
    let (fstype, options) = filesystem.split_once(':').unwrap_or((filesystem, ""));
    let data = options
        .split(',')
        .find_map(|o| o.strip_prefix("data="))
        .unwrap_or("ordered");
    PUBLISHED
        .iter()
        .find(|p| p.fstype == fstype && p.data_mode.is_none_or(|d| d == data))
}

impl Behaviour {
    /// Where this row differs from the published one, cell by cell.
    pub(super) fn differences(&self, p: &Published) -> Vec<String> {
        let mut out = Vec::new();
        let mut check = |what: &str, measured: String, published: &str| {
            if measured != published {
                out.push(format!("{what} {measured} (published: {published})"));
            }
        };
        check("1st fsync", self.first_fsync.shown(), p.first_fsync);
        check("2nd fsync", self.second_fsync.shown(), p.second_fsync);
        check("fd before", self.fd_before.shown(), p.fd_before);
        check("fd after", self.fd_after.shown(), p.fd_after);
        check("page", self.page.to_string(), p.page);
        check(
            "on disk",
            self.on_disk.as_ref().map_or_else(Clone::clone, ToString::to_string),
            p.on_disk,
        );
        out
    }
}
