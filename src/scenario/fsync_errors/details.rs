//! What `fsync-errors` measured, typed, and its views: the behaviour table (one row per
//! filesystem), the published expectation beside it, and findings in words.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{BLOCK, NEW, OLD};
use crate::scenario::table::{Cell, Table};
use crate::scenario::{Measured, Views};
use crate::sys::Errno;
use crate::testbed::remount::FsState;

/// One call of the sequence as it returned.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Call {
    /// The errno when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<Errno>,
    pub(crate) latency_ns: u64,
    /// Requests the disk failed while the call ran (writes; flushes with `fault=flush`).
    pub(crate) disk_failed: u64,
    /// Cache flushes the disk completed while the call ran.
    #[serde(default)]
    pub(crate) flushes: u64,
}

impl Call {
    /// A call that could not be made (the descriptor could not be opened).
    pub(crate) fn failed(e: &std::io::Error) -> Call {
        Call {
            error: Some(Errno::of(e)),
            latency_ns: 0,
            disk_failed: 0,
            flushes: 0,
        }
    }

    /// `0` or the errno, as the table shows a return.
    fn shown(&self) -> String {
        self.error.map_or_else(|| "0".to_string(), |e| e.name().into_owned())
    }

    /// The return, and whether the call flushed the disk's cache: `0 (no flush)`.
    fn shown_with_flushes(&self) -> String {
        match (self.error, self.flushes) {
            (Some(_), _) => self.shown(),
            (None, 0) => "0 (no flush)".into(),
            (None, _) => "0 (flushed)".into(),
        }
    }

    fn reported(&self) -> bool {
        self.error.is_some()
    }
}

/// What a read of the block returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "content", content = "errno")]
pub(crate) enum Content {
    /// The bytes written over the block.
    New,
    /// The bytes the block held before.
    Old,
    Zeros,
    /// Something else (a mix).
    Other,
    /// The file ends before the block.
    Short,
    /// The file is not there.
    Missing,
    Unreadable(Errno),
}

impl Content {
    pub(crate) fn of(block: &[u8]) -> Content {
        let all = |b: u8| block.len() == BLOCK && block.iter().all(|x| *x == b);
        if all(NEW) {
            Content::New
        } else if all(OLD) {
            Content::Old
        } else if all(0) {
            Content::Zeros
        } else {
            Content::Other
        }
    }
}

impl fmt::Display for Content {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Content::New => write!(f, "new"),
            Content::Old => write!(f, "old"),
            Content::Zeros => write!(f, "zeros"),
            Content::Other => write!(f, "mixed"),
            Content::Short => write!(f, "short file"),
            Content::Missing => write!(f, "file missing"),
            Content::Unreadable(e) => write!(f, "read: {e}"),
        }
    }
}

/// The row of one filesystem: what the application was told at each step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Behaviour {
    /// `ext4:data=journal`, as `--set fs` names it.
    pub(crate) filesystem: String,
    /// The fault rules set on the disk (`fail=write:range=OFFSET+LENGTH`).
    pub(crate) fault: String,
    /// The buffered write of the new content.
    pub(crate) write: Call,
    pub(crate) first_fsync: Call,
    /// syncfs through another descriptor, made when the first fsync wrote nothing that
    /// failed (the kernel's writeback of the block, now), and always when the whole disk
    /// fails (the journal's commit, now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) writeback: Option<Call>,
    pub(crate) second_fsync: Call,
    /// The block read through the page cache after the second fsync.
    pub(crate) page: Content,
    /// fsync through a descriptor opened before the error, and one opened after it.
    pub(crate) fd_before: Call,
    pub(crate) fd_after: Call,
    /// Requests the disk failed in all.
    pub(crate) disk_failed: u64,
    /// What the filesystem let an application do once the disk was healthy again.
    pub(crate) state: FsState,
    /// The block read after unmounting and mounting again (with `fault=flush`, after the
    /// power cut and the filesystem's recovery), or why that failed.
    pub(crate) on_disk: Result<Content, String>,
    /// The power cut of `fault=flush`: what the drive held and lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cut: Option<crate::environment::PowerCut>,
    /// What the kernel logged about the device meanwhile (`/dev/kmsg`, as root).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) kernel: Vec<String>,
}

/// A row as measured, or why it could not be.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub(crate) enum Row {
    Measured(Box<Behaviour>),
    NotMeasured { filesystem: String, why: String },
}

/// What the run recorded: the disk profile under every filesystem, which writes failed
/// (`block` or `disk`), and the rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Details {
    pub(crate) device: String,
    pub(crate) fault: String,
    pub(crate) rows: Vec<Row>,
}

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

/// Words of the kernel's messages that say what became of a filesystem.
const STATE_WORDS: [&str; 5] = ["shut down", "read-only", "readonly", "aborting journal", "aborted"];

const COLUMNS: [&str; 9] = [
    "filesystem",
    "1st fsync",
    "writeback",
    "2nd fsync",
    "fd before",
    "fd after",
    "page after",
    "on disk after remount",
    "filesystem after",
];

impl Behaviour {
    /// The row's cells under `fault`. With `block`, only the block's writes fail, so a
    /// failed write during the second fsync is the page written again (kept dirty); with
    /// `flush`, whether each call after the failed flush flushed the cache again.
    fn cells(&self, fault: &str) -> Vec<String> {
        let page = if fault == "block" && self.second_fsync.disk_failed > 0 {
            format!("{} (kept dirty)", self.page)
        } else {
            self.page.to_string()
        };
        let shown = |c: &Call| {
            if fault == "flush" {
                c.shown_with_flushes()
            } else {
                c.shown()
            }
        };
        vec![
            self.filesystem.clone(),
            self.first_fsync.shown(),
            self.writeback
                .map_or_else(|| "-".to_string(), |w| format!("syncfs {}", shown(&w))),
            shown(&self.second_fsync),
            shown(&self.fd_before),
            shown(&self.fd_after),
            page,
            match &self.on_disk {
                Ok(c) => c.to_string(),
                Err(why) => why.clone(),
            },
            self.state.to_string(),
        ]
    }

    /// Where this row differs from the published one, cell by cell.
    fn differences(&self, p: &Published) -> Vec<String> {
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

    /// With `fault=flush`: what the power cut found, and which call after the failed flush
    /// flushed the cache again.
    fn after_the_cut(&self) -> Vec<String> {
        let fs = &self.filesystem;
        let Some(cut) = &self.cut else {
            return vec![format!("{fs}: the power was not cut (the device was gone)")];
        };
        let later = [
            ("syncfs", self.writeback.as_ref()),
            ("the 2nd fsync", Some(&self.second_fsync)),
            ("the fsync through the descriptor opened before", Some(&self.fd_before)),
            ("the fsync through the descriptor opened after", Some(&self.fd_after)),
        ];
        let flushed: Vec<&str> = later
            .iter()
            .filter(|(_, c)| c.is_some_and(|c| c.flushes > 0 && c.error.is_none()))
            .map(|(what, _)| *what)
            .collect();
        let new_survived = self.on_disk.as_ref().is_ok_and(|c| *c == Content::New);
        let mut out = Vec::new();
        if flushed.is_empty() {
            let said_ok: Vec<&str> = later
                .iter()
                .filter(|(_, c)| c.is_some_and(|c| c.error.is_none()))
                .map(|(what, _)| *what)
                .collect();
            if !said_ok.is_empty() {
                out.push(format!(
                    "{fs}: after the failed flush, {} returned 0 without flushing the cache again",
                    said_ok.join(", ")
                ));
            }
        } else {
            out.push(format!(
                "{fs}: after the failed flush, {} flushed the cache again",
                flushed.join(", ")
            ));
        }
        if cut.held_writes == 0 && !new_survived {
            out.push(format!(
                "{fs}: the drive held nothing at the cut, and the new data is not on it"
            ));
        } else if cut.held_writes == 0 {
            out.push(format!(
                "{fs}: the drive had drained its cache before the cut, so the cut tells nothing of the flushes; a disk that drains slowly shows it (--set device=ssd-sata,request=200ms)"
            ));
        } else if !new_survived {
            out.push(format!(
                "{fs}: the cut lost {} writes the drive still held, the new data among them",
                cut.lost_writes
            ));
        }
        out
    }

    /// The fsyncgate outcome: an fsync returned 0 after the error while the new data is not
    /// on the disk.
    fn lost_silently(&self) -> bool {
        let told_ok_after = !self.second_fsync.reported() || !self.fd_after.reported();
        told_ok_after && self.on_disk.as_ref().is_ok_and(|c| *c != Content::New)
    }
}

impl Views for Details {
    fn tables(&self) -> Vec<Table> {
        let mut columns: Vec<String> = COLUMNS.iter().map(|c| c.to_string()).collect();
        if self.fault == "flush" {
            columns[7] = "on disk after the power cut".into();
        }
        let measured = self
            .rows
            .iter()
            .map(|r| match r {
                Row::Measured(b) => b.cells(&self.fault).into_iter().map(Cell::Text).collect(),
                Row::NotMeasured { filesystem, why } => {
                    let mut cells = vec![
                        Cell::Text(filesystem.clone()),
                        Cell::Text(format!("not measured: {why}")),
                    ];
                    cells.extend((2..COLUMNS.len()).map(|_| Cell::Text(String::new())));
                    cells
                }
            })
            .collect();
        let expected = self
            .rows
            .iter()
            .filter_map(|r| {
                let fs = match r {
                    Row::Measured(b) => &b.filesystem,
                    Row::NotMeasured { filesystem, .. } => filesystem,
                };
                let p = published(fs)?;
                Some(
                    [
                        fs.as_str(),
                        p.first_fsync,
                        "-",
                        p.second_fsync,
                        p.fd_before,
                        p.fd_after,
                        p.page,
                        p.on_disk,
                        "writable",
                    ]
                    .map(|s| Cell::Text(s.to_string()))
                    .to_vec(),
                )
            })
            .collect::<Vec<_>>();
        let mut tables = vec![Table {
            title: format!(
                "after {} (disk {}): what each call returned, what the page and the disk hold",
                match self.fault.as_str() {
                    "disk" => "the disk stopped taking writes",
                    "flush" => "one failed cache flush, then a power cut",
                    _ => "a failed writeback of one data block",
                },
                self.device
            ),
            columns: columns.clone(),
            rows: measured,
        }];
        if !expected.is_empty() && self.fault == "block" {
            tables.push(Table {
                title: "published: Rebello et al., \"Can Applications Recover from fsync Failures?\", USENIX ATC 2020 (as CuttleFS encodes it)".into(),
                columns,
                rows: expected,
            });
        }
        tables
    }

    fn findings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for row in &self.rows {
            let b = match row {
                Row::Measured(b) => b,
                Row::NotMeasured { filesystem, why } => {
                    out.push(format!("{filesystem}: not measured: {why}"));
                    continue;
                }
            };
            if b.disk_failed == 0 {
                out.push(format!(
                    "{}: the disk failed no request ({}): the row shows a filesystem that never met the fault",
                    b.filesystem, b.fault
                ));
                continue;
            }
            if b.lost_silently() {
                out.push(format!(
                    "{}: an fsync after the error returned 0 while the disk kept the {} data: the error is reported once, and a retried fsync does not write the page again",
                    b.filesystem,
                    b.on_disk.as_ref().map_or_else(|_| "old".to_string(), ToString::to_string)
                ));
            }
            if b.page == Content::New && b.on_disk.as_ref().is_ok_and(|c| *c != Content::New) {
                out.push(format!(
                    "{}: until the filesystem is mounted again, reads return the new data the disk does not hold",
                    b.filesystem
                ));
            }
            if b.state != FsState::Writable {
                let said: Vec<&str> = b
                    .kernel
                    .iter()
                    .map(String::as_str)
                    .filter(|m| STATE_WORDS.iter().any(|w| m.to_lowercase().contains(w)))
                    .collect();
                let said = if said.is_empty() {
                    String::new()
                } else {
                    format!("; the kernel said: {}", said.join(" | "))
                };
                out.push(format!(
                    "{}: {} once the disk was healthy again{said}",
                    b.filesystem, b.state
                ));
            }
            if self.fault == "flush" {
                out.extend(b.after_the_cut());
            }
            if let (Some(p), true) = (published(&b.filesystem), self.fault == "block") {
                let diff = b.differences(p);
                if !diff.is_empty() {
                    out.push(format!("{}: differs from ATC'20: {}", b.filesystem, diff.join(", ")));
                }
            }
        }
        out
    }

    fn headline(&self, _: &Measured<'_>) -> String {
        let rows: Vec<String> = self
            .rows
            .iter()
            .map(|r| match r {
                Row::Measured(b) => format!("{} {}/{}", b.filesystem, b.first_fsync.shown(), b.second_fsync.shown()),
                Row::NotMeasured { filesystem, .. } => format!("{filesystem} not measured"),
            })
            .collect();
        format!("1st/2nd fsync after a failed writeback: {}", rows.join(", "))
    }

    fn seed_lines(&self, _: &Measured<'_>) -> Vec<String> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests;
