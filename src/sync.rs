//! The ways to make a write durable, each a variant of [`SyncMethod`].
//!
//! A method decides three things: extra `open(2)` flags (O_SYNC, O_DSYNC, O_DIRECT), how the
//! write itself is issued (plain `pwrite`, or `pwritev2` with RWF_DSYNC), and which call, if
//! any, follows the write. Each call is timed as its own operation kind, as fio keeps
//! `DDIR_SYNC` apart from writes: the write of `osync` is `write_osync`, not `write`, because
//! its latency includes the flush.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::measure::OpKind;
use crate::params::{Choice, Param};
use crate::sys;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum SyncMethod {
    /// `write` then `fsync(2)`: data and all metadata.
    Fsync,
    /// `write` then `fdatasync(2)`: data and the metadata needed to read it back.
    Fdatasync,
    /// `write` then `sync_file_range(2)` WAIT_BEFORE|WRITE|WAIT_AFTER: data only, no journal
    /// commit, no device cache flush (not durable on a volatile write cache).
    SyncFileRange,
    /// The file opened with O_SYNC: every write is synchronous, like write + fsync.
    Osync,
    /// The file opened with O_DSYNC: every write is synchronous, like write + fdatasync.
    Odsync,
    /// `pwritev2(2)` with RWF_DSYNC: a per-write O_DSYNC.
    RwfDsync,
    /// The file opened with O_DIRECT (bypassing the page cache), then `fdatasync(2)`.
    Direct,
    /// No sync at all: the buffered write alone.
    None,
}

impl Choice for SyncMethod {
    const ALL: &'static [SyncMethod] = &[
        SyncMethod::Fsync,
        SyncMethod::Fdatasync,
        SyncMethod::SyncFileRange,
        SyncMethod::Osync,
        SyncMethod::Odsync,
        SyncMethod::RwfDsync,
        SyncMethod::Direct,
        SyncMethod::None,
    ];

    const NAMES: &'static [&'static str] = &[
        "fsync",
        "fdatasync",
        "sync_file_range",
        "osync",
        "odsync",
        "rwf_dsync",
        "direct",
        "none",
    ];
}

/// Results name a method as `--set` does (`fdatasync`, `odsync`).
impl serde::Serialize for SyncMethod {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for SyncMethod {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SyncMethod, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        SyncMethod::from_name(&name).ok_or_else(|| serde::de::Error::custom(format!("unknown sync method {name}")))
    }
}

impl Param<SyncMethod> {
    /// The `sync` parameter (named `name`, a `scenario_params!` row `sync: SyncMethod =
    /// sync("fsync")`), whose help is the same in every scenario: written here, so the row
    /// has no doc comment, and `help` must be empty.
    pub(crate) const fn sync(name: &'static str, default: &'static str, help: &'static str) -> Self {
        assert!(
            help.is_empty(),
            "the sync parameter's help is written once, in sync.rs: give its row no doc comment"
        );
        Param::choice(
            name,
            default,
            "how each write is made durable: fsync, fdatasync, sync_file_range, osync (O_SYNC), odsync (O_DSYNC), rwf_dsync (pwritev2 RWF_DSYNC), direct (O_DIRECT + fdatasync), none",
        )
    }
}

impl SyncMethod {
    /// The `sync` parameter every scenario takes.
    pub(crate) const fn param(default: &'static str) -> Param<SyncMethod> {
        Param::sync("sync", default, "")
    }

    /// The operation kind under which the write is recorded.
    pub(crate) fn write_op(self) -> OpKind {
        match self {
            SyncMethod::Osync => OpKind::WriteOsync,
            SyncMethod::Odsync => OpKind::WriteOdsync,
            SyncMethod::RwfDsync => OpKind::WriteRwfDsync,
            SyncMethod::Direct => OpKind::WriteDirect,
            _ => OpKind::Write,
        }
    }

    /// The operation kind of the call that follows the write, if there is one.
    pub(crate) fn sync_op(self) -> Option<OpKind> {
        match self {
            SyncMethod::Fsync => Some(OpKind::Fsync),
            SyncMethod::Fdatasync | SyncMethod::Direct => Some(OpKind::Fdatasync),
            SyncMethod::SyncFileRange => Some(OpKind::SyncFileRange),
            _ => None,
        }
    }

    /// Whether writes must use block-aligned buffers, offsets and sizes (O_DIRECT).
    pub(crate) fn needs_alignment(self) -> bool {
        self == SyncMethod::Direct
    }

    /// Opens (creating if needed, never truncating) `path` for writing with this method's flags.
    pub(crate) fn open(self, path: &Path) -> io::Result<File> {
        let flags = match self {
            SyncMethod::Osync => libc::O_SYNC,
            SyncMethod::Odsync => libc::O_DSYNC,
            SyncMethod::Direct => libc::O_DIRECT,
            _ => 0,
        };
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(flags)
            .mode(0o644)
            .open(path)
    }

    /// Opens `path` like [`SyncMethod::open`], and says in one line (a usage error) when the
    /// filesystem of `dir` refuses O_DIRECT, naming the parameter `param` that chose it.
    pub(crate) fn open_in(self, path: &Path, dir: &Path, param: &str) -> anyhow::Result<File> {
        self.open(path).map_err(|e| {
            if self.needs_alignment() && e.raw_os_error() == Some(libc::EINVAL) {
                anyhow::anyhow!(crate::error::Usage(format!(
                    "{param}: the filesystem of {} does not support O_DIRECT; choose another --dir or sync method",
                    dir.display()
                )))
            } else {
                anyhow::Error::new(e).context(format!("cannot open {}", path.display()))
            }
        })
    }

    /// Issues the write the way this method does.
    pub(crate) fn write(self, file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
        sys::pwrite_all(file, buf, offset, self == SyncMethod::RwfDsync)
    }

    /// Issues the call that follows the write over `offset..offset+len`, if the method has one.
    pub(crate) fn sync(self, file: &File, offset: u64, len: u64) -> Option<io::Result<()>> {
        match self {
            SyncMethod::Fsync => Some(sys::fsync(file)),
            SyncMethod::Fdatasync | SyncMethod::Direct => Some(sys::fdatasync(file)),
            SyncMethod::SyncFileRange => Some(sys::sync_file_range(file, offset, len)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in SyncMethod::ALL {
            assert_eq!(SyncMethod::from_name(m.name()), Some(*m));
        }
        assert_eq!(SyncMethod::from_name("O_SYNC"), None);
    }

    #[test]
    fn every_method_records_a_durable_step_except_none() {
        for m in SyncMethod::ALL {
            let durable = m.sync_op().is_some() || m.write_op().is_sync();
            assert_eq!(durable, *m != SyncMethod::None, "{m:?}");
        }
    }
}
