//! The kinds of timed calls: one enum, one predicate ([`OpKind::is_sync`]), as fio keeps its
//! data directions in `io_ddir.h` with a single `ddir_sync()` test. Results name each kind
//! as they always have (`write`, `fsync`, `write_osync`, ...).

use std::fmt;

use serde::{Deserialize, Serialize};

/// One kind of timed call. The variants are declared in the alphabetical order of their
/// names, so that tables sorted by kind read as they did when kinds were strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    /// `close(2)` of a file fs_mark wrote.
    Close,
    /// A whole fsync-tps transaction: write start to acknowledgement.
    Commit,
    /// `open(2)` with O_CREAT of a new fs_mark file.
    Create,
    Fdatasync,
    /// fsync-tps' single-thread syncs before the sweep, which measure the flush time.
    FlushCalibration,
    Fsync,
    /// `fsync(2)` of a directory, making the names in it durable (a created or renamed file).
    FsyncDir,
    /// `fsync(2)` of a file with nothing dirty (the probe's floor).
    FsyncUnchanged,
    /// An iozone rewrite pass: every write of the file and its fsync.
    IozoneRewrite,
    /// An iozone write pass of a new file: every write and its fsync.
    IozoneWrite,
    /// `msync(2)` with MS_SYNC (a traced command's).
    Msync,
    /// `rename(2)` of a file over another.
    Rename,
    /// `sync(2)`: every filesystem (a traced command's).
    Sync,
    SyncFileRange,
    Syncfs,
    /// Emptying an fsync-tps file that reached its size in append mode.
    Truncate,
    /// A buffered `pwrite(2)`.
    Write,
    /// A `pwrite(2)` to a file opened with O_DIRECT.
    WriteDirect,
    /// A `pwrite(2)` to a file opened with O_DSYNC.
    WriteOdsync,
    /// A `pwrite(2)` to a file opened with O_SYNC.
    WriteOsync,
    /// A `pwritev2(2)` with RWF_DSYNC.
    WriteRwfDsync,
}

impl OpKind {
    /// Every kind, in order.
    pub const ALL: [OpKind; 21] = [
        OpKind::Close,
        OpKind::Commit,
        OpKind::Create,
        OpKind::Fdatasync,
        OpKind::FlushCalibration,
        OpKind::Fsync,
        OpKind::FsyncDir,
        OpKind::FsyncUnchanged,
        OpKind::IozoneRewrite,
        OpKind::IozoneWrite,
        OpKind::Msync,
        OpKind::Rename,
        OpKind::Sync,
        OpKind::SyncFileRange,
        OpKind::Syncfs,
        OpKind::Truncate,
        OpKind::Write,
        OpKind::WriteDirect,
        OpKind::WriteOdsync,
        OpKind::WriteOsync,
        OpKind::WriteRwfDsync,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            OpKind::Close => "close",
            OpKind::Commit => "commit",
            OpKind::Create => "create",
            OpKind::Fdatasync => "fdatasync",
            OpKind::FlushCalibration => "flush_calibration",
            OpKind::Fsync => "fsync",
            OpKind::FsyncDir => "fsync_dir",
            OpKind::FsyncUnchanged => "fsync_unchanged",
            OpKind::IozoneRewrite => "iozone_rewrite",
            OpKind::IozoneWrite => "iozone_write",
            OpKind::Msync => "msync",
            OpKind::Rename => "rename",
            OpKind::Sync => "sync",
            OpKind::SyncFileRange => "sync_file_range",
            OpKind::Syncfs => "syncfs",
            OpKind::Truncate => "truncate",
            OpKind::Write => "write",
            OpKind::WriteDirect => "write_direct",
            OpKind::WriteOdsync => "write_odsync",
            OpKind::WriteOsync => "write_osync",
            OpKind::WriteRwfDsync => "write_rwf_dsync",
        }
    }

    /// The kind a result names `name`, as [`OpKind::name`] spells it.
    pub fn from_name(name: &str) -> Option<OpKind> {
        OpKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the call itself makes data durable: a sync call, or a write that carries its
    /// own sync (O_SYNC, O_DSYNC, RWF_DSYNC). A plain or O_DIRECT write is not (O_DIRECT
    /// leaves the data in the device's volatile cache), and neither are the composite
    /// measurements (`commit`, the iozone passes), which contain sync calls of their own.
    pub const fn is_sync(self) -> bool {
        matches!(
            self,
            OpKind::Fdatasync
                | OpKind::FlushCalibration
                | OpKind::Fsync
                | OpKind::FsyncDir
                | OpKind::FsyncUnchanged
                | OpKind::Msync
                | OpKind::Sync
                | OpKind::SyncFileRange
                | OpKind::Syncfs
                | OpKind::WriteOdsync
                | OpKind::WriteOsync
                | OpKind::WriteRwfDsync
        )
    }

    /// Whether the call writes data (any flavour of `pwrite`).
    pub const fn is_write(self) -> bool {
        matches!(
            self,
            OpKind::Write | OpKind::WriteDirect | OpKind::WriteOdsync | OpKind::WriteOsync | OpKind::WriteRwfDsync
        )
    }

    /// The position of the kind in [`OpKind::ALL`], for tables indexed by kind.
    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_is_in_declaration_and_name_order() {
        for (i, op) in OpKind::ALL.iter().enumerate() {
            assert_eq!(op.index(), i);
        }
        let names: Vec<&str> = OpKind::ALL.iter().map(|o| o.name()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted, "declare the variants in the order of their names");
    }

    #[test]
    fn names_are_the_serialized_form() {
        for op in OpKind::ALL {
            let json = serde_json::to_string(&op).unwrap();
            assert_eq!(json, format!("\"{}\"", op.name()));
            assert_eq!(serde_json::from_str::<OpKind>(&json).unwrap(), op);
            assert_eq!(OpKind::from_name(op.name()), Some(op));
        }
        assert_eq!(OpKind::from_name("fsink"), None);
    }

    /// The rule that three modules used to decide three ways (issue 7): a write that carries
    /// its own sync is a sync call; a plain write and the composite measurements are not.
    #[test]
    /// Issue 7.
    fn one_rule_for_sync_calls() {
        assert!(OpKind::WriteOsync.is_sync());
        assert!(OpKind::Fsync.is_sync() && OpKind::Syncfs.is_sync());
        assert!(!OpKind::Write.is_sync() && !OpKind::WriteDirect.is_sync());
        assert!(!OpKind::Commit.is_sync() && !OpKind::IozoneWrite.is_sync());
    }
}
