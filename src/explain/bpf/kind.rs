//! The kinds of call the BPF program follows, in its numbering (KIND_FSYNC... in
//! watch_records.h): the sync system calls, one system call each, and the writes, by how the
//! file was opened or the write's own flags.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum SyncKind {
    Fsync,
    Fdatasync,
    SyncFileRange,
    Msync,
    Syncfs,
    Sync,
    /// A write to a file opened without O_SYNC, O_DSYNC or O_DIRECT (followed only in a
    /// run's measuring threads).
    Write,
    /// A write to a file opened with O_DIRECT (and neither O_SYNC nor O_DSYNC).
    WriteDirect,
    /// A write to a file opened with O_DSYNC.
    WriteOdsync,
    /// A write to a file opened with O_SYNC.
    WriteOsync,
    /// `pwritev2(2)` with RWF_DSYNC or RWF_SYNC.
    WriteRwfDsync,
    /// A call on a filesystem's names or files other than a read, a write or a sync
    /// ([`OTHER_CALLS`]: open, close, rename, truncate...), followed only in a run's
    /// measuring threads, where the run times it (fs_mark's creates and closes). Not in
    /// [`SyncKind::ALL`]: the program numbers it after its journal commits (KIND_OTHER).
    Other = 12,
}

/// [`SyncKind::Other`]'s system calls, in the program's order (config.other_nr), each with
/// whether its first argument is a file descriptor (whose file is then the call's).
pub(crate) const OTHER_CALLS: [(i64, bool); 16] = [
    (libc::SYS_open, false),
    (libc::SYS_openat, false),
    (libc::SYS_openat2, false),
    (libc::SYS_creat, false),
    (libc::SYS_close, true),
    (libc::SYS_rename, false),
    (libc::SYS_renameat, false),
    (libc::SYS_renameat2, false),
    (libc::SYS_truncate, false),
    (libc::SYS_ftruncate, true),
    (libc::SYS_unlink, false),
    (libc::SYS_unlinkat, false),
    (libc::SYS_mkdir, false),
    (libc::SYS_mkdirat, false),
    (libc::SYS_fallocate, true),
    (libc::SYS_link, false),
];

/// The write system calls the program follows, in its order (config.write_nr; pwritev2,
/// whose flags it reads, last).
pub(crate) const WRITE_CALLS: [i64; 5] = [
    libc::SYS_write,
    libc::SYS_pwrite64,
    libc::SYS_writev,
    libc::SYS_pwritev,
    libc::SYS_pwritev2,
];

impl SyncKind {
    /// Every kind, in the program's numbering.
    pub(crate) const ALL: [SyncKind; 11] = [
        SyncKind::Fsync,
        SyncKind::Fdatasync,
        SyncKind::SyncFileRange,
        SyncKind::Msync,
        SyncKind::Syncfs,
        SyncKind::Sync,
        SyncKind::Write,
        SyncKind::WriteDirect,
        SyncKind::WriteOdsync,
        SyncKind::WriteOsync,
        SyncKind::WriteRwfDsync,
    ];

    /// The sync system calls, whose numbers the program is given in this order (config.nr):
    /// the first of [`SyncKind::ALL`].
    pub(crate) const SYSCALLS: &'static [SyncKind] = SyncKind::ALL.split_at(6).0;

    pub(crate) fn from_number(n: u32) -> Option<SyncKind> {
        if n == SyncKind::Other as u32 {
            return Some(SyncKind::Other);
        }
        SyncKind::ALL.get(usize::try_from(n).ok()?).copied()
    }

    /// The name a run gives the operation (`OpKind`'s): for the sync calls the system
    /// call's, as in `sys_enter_NAME`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            SyncKind::Fsync => "fsync",
            SyncKind::Fdatasync => "fdatasync",
            SyncKind::SyncFileRange => "sync_file_range",
            SyncKind::Msync => "msync",
            SyncKind::Syncfs => "syncfs",
            SyncKind::Sync => "sync",
            SyncKind::Write => "write",
            SyncKind::WriteDirect => "write_direct",
            SyncKind::WriteOdsync => "write_odsync",
            SyncKind::WriteOsync => "write_osync",
            SyncKind::WriteRwfDsync => "write_rwf_dsync",
            SyncKind::Other => "other call",
        }
    }

    /// A sync system call's number on this architecture (None for the writes, which are
    /// several calls each: [`WRITE_CALLS`]).
    pub(crate) fn syscall_number(self) -> Option<i64> {
        Some(match self {
            SyncKind::Fsync => libc::SYS_fsync,
            SyncKind::Fdatasync => libc::SYS_fdatasync,
            SyncKind::SyncFileRange => libc::SYS_sync_file_range,
            SyncKind::Msync => libc::SYS_msync,
            SyncKind::Syncfs => libc::SYS_syncfs,
            SyncKind::Sync => libc::SYS_sync,
            _ => return None,
        })
    }

    /// Whether it is a write (its return value the bytes written).
    pub(crate) fn is_write(self) -> bool {
        (SyncKind::Write..=SyncKind::WriteRwfDsync).contains(&self)
    }

    /// Whether its first argument is a file descriptor.
    pub(crate) fn takes_fd(self) -> bool {
        !matches!(self, SyncKind::Msync | SyncKind::Sync | SyncKind::Other)
    }
}

impl fmt::Display for SyncKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::OpKind;

    #[test]
    fn every_kind_is_named_as_a_run_names_its_operation() {
        for (n, kind) in SyncKind::ALL.into_iter().enumerate() {
            assert_eq!(SyncKind::from_number(n as u32), Some(kind));
            // The discriminant is the number: thread_thresholds' keys are made of it.
            assert_eq!(kind as usize, n);
            assert_eq!(OpKind::from_name(kind.name()).map(|op| op.name()), Some(kind.name()));
        }
        // KIND_COMMIT: a journal commit's own record, no call; KIND_OTHER after it.
        assert_eq!(SyncKind::from_number(11), None);
        assert_eq!(SyncKind::from_number(12), Some(SyncKind::Other));
        assert!(!SyncKind::Other.is_write() && !SyncKind::ALL.contains(&SyncKind::Other));
        assert_eq!(SyncKind::from_number(13), None);
        assert!(SyncKind::SYSCALLS
            .iter()
            .all(|k| k.syscall_number().is_some() && !k.is_write()));
        assert!(SyncKind::ALL[6..]
            .iter()
            .all(|k| k.syscall_number().is_none() && k.is_write()));
    }
}
