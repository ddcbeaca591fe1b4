//! What `fsync-errors` measured, typed: each call of the sequence as it returned, what a read
//! of the block found, one filesystem's row, and the run's details. Its views are in
//! [`views`] (the behaviour table, findings in words), the published expectation it is set
//! beside in [`published`].

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{BLOCK, NEW, OLD};
use crate::sys::Errno;
use crate::testbed::remount::FsState;

mod published;
mod views;

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

#[cfg(test)]
mod tests;
