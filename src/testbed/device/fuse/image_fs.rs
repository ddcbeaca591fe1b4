//! The FUSE file system: one file, `image`, whose reads, writes and fsyncs go through the
//! disk model and block until it says they complete. A write waits for room in the cache
//! (or, written through, for the media); FUSE_FSYNC is the device's cache flush.
//!
//! A request an injected fault fails (`fail=...`) is answered with EIO at once, and so is
//! every request once the power is cut, including those waiting or sleeping at that moment:
//! none is acknowledged after the cut.

use std::ffi::OsStr;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags, KernelConfig,
    LockOwner, OpenFlags, ReplyAttr, ReplyData, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request, WriteFlags,
};

use super::super::model::{Chunk, FaultKind, WriteOutcome};
use super::shared::{precise_sleeps, Acked, Shared};
use super::IMAGE_NAME;

const IMAGE: INodeNo = INodeNo(2);
/// Attributes never change behind the kernel's back: cache them for a long time.
const TTL: Duration = Duration::from_secs(3600);
/// Asynchronous requests the kernel may have outstanding (direct I/O writes and reads).
const MAX_BACKGROUND: u16 = 64;
/// Largest FUSE_WRITE: the kernel's default `fuse.max_pages_limit` (256 pages) anyway.
const MAX_WRITE: u32 = 1 << 20;

pub(super) struct ImageFs {
    pub(super) shared: Arc<Shared>,
    pub(super) uid: u32,
    pub(super) gid: u32,
}

impl ImageFs {
    fn attr(&self, ino: INodeNo) -> FileAttr {
        let now = SystemTime::now();
        let size = self.shared.size;
        let (kind, perm, size, nlink) = if ino == IMAGE {
            (FileType::RegularFile, 0o600, size, 1)
        } else {
            (FileType::Directory, 0o700, 0, 2)
        };
        FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: now,
            mtime: now,
            ctime: now,
            crtime: now,
            kind,
            perm,
            nlink,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }
}

impl Filesystem for ImageFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Asynchronous direct I/O lets the loop device keep several requests in flight.
        if config.capabilities().contains(InitFlags::FUSE_ASYNC_DIO) {
            let _ = config.add_capabilities(InitFlags::FUSE_ASYNC_DIO);
        }
        let _ = config.set_max_write(MAX_WRITE);
        let _ = config.set_max_background(MAX_BACKGROUND);
        let _ = config.set_congestion_threshold(MAX_BACKGROUND * 3 / 4);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if parent == INodeNo::ROOT && name == IMAGE_NAME {
            reply.entry(&TTL, &self.attr(IMAGE), Generation(0));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        if ino == IMAGE || ino == INodeNo::ROOT {
            reply.attr(&TTL, &self.attr(ino));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn open(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        reply.opened(FileHandle(0), FopenFlags::FOPEN_PARALLEL_DIRECT_WRITES);
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        precise_sleeps();
        let shared = &self.shared;
        let len = (size as u64).min(shared.size.saturating_sub(offset));
        let plan = match Shared::unless_failed(shared.lock()) {
            Ok(mut st) => {
                let now = shared.clock.now();
                if st.disk.fails(FaultKind::Read, now, offset, len) {
                    return reply.error(Errno::EIO);
                }
                st.disk.read(now, offset, len)
            }
            Err(e) => return reply.error(e),
        };
        shared.work.notify_one();
        shared.sleep_until(plan.at);
        if let Err(e) = Shared::unless_failed(shared.lock()) {
            return reply.error(e);
        }
        let mut buf = vec![0u8; len as usize];
        if plan
            .overlay
            .first()
            .is_none_or(|(o, c)| *o != offset || (c.len() as u64) < len)
        {
            if let Err(e) = shared.image.read_exact_at(&mut buf, offset) {
                reply.error(Errno::from(e));
                return;
            }
        }
        for (at, piece) in &plan.overlay {
            let from = (at - offset) as usize;
            buf[from..from + piece.len()].copy_from_slice(piece.as_slice());
        }
        reply.data(&buf);
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        precise_sleeps();
        let shared = &self.shared;
        if offset.saturating_add(data.len() as u64) > shared.size {
            reply.error(Errno::from_i32(libc::ENOSPC));
            return;
        }
        if data.is_empty() {
            reply.written(0);
            return;
        }
        let chunk = Chunk::new(Arc::from(data));
        let mut st = match Shared::unless_failed(shared.lock()) {
            Ok(st) => st,
            Err(e) => return reply.error(e),
        };
        if st
            .disk
            .fails(FaultKind::Write, shared.clock.now(), offset, data.len() as u64)
        {
            return reply.error(Errno::EIO);
        }
        let mut waited_since = None;
        let outcome = loop {
            st = match Shared::unless_failed(st) {
                Ok(st) => st,
                Err(e) => return reply.error(e),
            };
            let now = shared.clock.now();
            match st.disk.write(now, offset, chunk.clone()) {
                WriteOutcome::NoRoom => {
                    waited_since.get_or_insert(now);
                    st = shared.wait(st);
                }
                done => break done,
            }
        };
        if let Some(since) = waited_since {
            st.timing.room_waits += 1;
            st.timing.room_wait_ns_total += shared.clock.now().saturating_sub(since);
        }
        shared.work.notify_one();
        let st = match outcome {
            WriteOutcome::Cached { at, .. } => {
                drop(st);
                shared.sleep_until(at);
                Shared::unless_failed(shared.lock())
            }
            WriteOutcome::WriteThrough { seq } => shared.wait_while(st, |st| st.disk.is_pending(seq)),
            WriteOutcome::NoRoom => unreachable!("the loop above waits for room"),
        };
        match st {
            Ok(mut st) => {
                shared.acknowledged(&mut st, Acked::Write);
                drop(st);
                reply.written(data.len() as u32);
            }
            Err(e) => reply.error(e),
        }
    }

    /// `close(2)` of the image: not a cache flush, nothing to wait for.
    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        reply.ok();
    }

    /// The device cache flush: done once every write that entered the drive before it is
    /// on the media.
    fn fsync(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        precise_sleeps();
        let shared = &self.shared;
        let mut st = match Shared::unless_failed(shared.lock()) {
            Ok(st) => st,
            Err(e) => return reply.error(e),
        };
        if st.disk.fails(FaultKind::Flush, shared.clock.now(), 0, 0) {
            return reply.error(Errno::EIO);
        }
        let ticket = st.disk.flush(shared.clock.now());
        shared.work.notify_one();
        let mut st = match shared.wait_while(st, |st| !st.disk.flush_drained(&ticket)) {
            Ok(st) => st,
            Err(e) => return reply.error(e),
        };
        let end = st.disk.finish_flush(shared.clock.now());
        let took = end.saturating_sub(ticket.arrived);
        let t = &mut st.timing;
        t.flush_ns_total += took;
        t.flush_ns_max = t.flush_ns_max.max(took);
        t.flush_pending_bytes_total += ticket.pending_bytes;
        t.flush_pending_bytes_max = t.flush_pending_bytes_max.max(ticket.pending_bytes);
        drop(st);
        shared.sleep_until(end);
        match Shared::unless_failed(shared.lock()) {
            Ok(mut st) => {
                shared.acknowledged(&mut st, Acked::Flush);
                drop(st);
                reply.ok();
            }
            Err(e) => reply.error(e),
        }
    }
}
