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

impl Published {
    /// A row of the table: the filesystem, its data= mode, then the six cells in the paper's
    /// order (1st fsync, 2nd fsync, fd before, fd after, page, on disk).
    const fn row(fstype: &'static str, data_mode: Option<&'static str>, cells: [&'static str; 6]) -> Published {
        let [first_fsync, second_fsync, fd_before, fd_after, page, on_disk] = cells;
        Published {
            fstype,
            data_mode,
            first_fsync,
            second_fsync,
            fd_before,
            fd_after,
            page,
            on_disk,
        }
    }
}

/// The published table, a row a line as the paper prints it.
#[rustfmt::skip]
pub(crate) const PUBLISHED: [Published; 4] = [
    //             filesystem data=             1st fsync 2nd fsync fd before fd after page   on disk
    Published::row("ext4",    Some("ordered"), ["EIO",    "0",      "EIO",    "0",     "new", "old"]),
    Published::row("ext4",    Some("journal"), ["0",      "EIO",    "EIO",    "0",     "new", "old"]),
    Published::row("xfs",     None,            ["EIO",    "0",      "EIO",    "0",     "new", "old"]),
    Published::row("btrfs",   None,            ["EIO",    "0",      "EIO",    "0",     "old", "old"]),
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
