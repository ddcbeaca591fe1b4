//! The emulated disk: a FUSE file system inside fsynclab exposing one file, `image`, whose
//! reads and writes pass through to a real backing file.
//!
//! The loop device attached to `image` (with buffered I/O) turns each cache flush it gets
//! (REQ_PREFLUSH, from a journal commit or an fsync of the scratch filesystem) into
//! `vfs_fsync` of the image, which FUSE delivers here as FUSE_FSYNC: that handler waits the
//! profile's flush time and counts. Writes wait on a virtual disk clock that advances by
//! `len / rate`, so the device never writes faster than the profile's bandwidth. The data
//! itself is not synced to the host: the backing file is scratch, and a host flush would add
//! the host disk's cost to the profile's.
//!
//! The session runs on its own thread ([`fuser::spawn_mount`]); requests are served one at a
//! time, like a disk with one queue.

use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, Result};
use fuser::{
    BackgroundSession, Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    LockOwner, MountOption, OpenFlags, ReplyAttr, ReplyData, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request,
    WriteFlags,
};

use super::FlushProfile;

/// The name of the one file the file system holds.
pub const IMAGE_NAME: &str = "image";
const IMAGE: INodeNo = INodeNo(2);
/// Attributes never change behind the kernel's back: cache them for a long time.
const TTL: Duration = Duration::from_secs(3600);

/// What the emulated device has done, shared with the run.
#[derive(Debug, Default)]
pub struct Counters {
    /// fsyncs of the image: the device cache flushes.
    pub flushes: AtomicU64,
    pub writes: AtomicU64,
    pub bytes_written: AtomicU64,
}

struct ImageFs {
    backing: File,
    size: u64,
    profile: FlushProfile,
    counters: Arc<Counters>,
    /// When the virtual disk is done with the writes it has been given.
    busy_until: Mutex<Instant>,
    uid: u32,
    gid: u32,
}

impl ImageFs {
    fn attr(&self, ino: INodeNo) -> FileAttr {
        let now = SystemTime::now();
        let (kind, perm, size, nlink) = if ino == IMAGE {
            (FileType::RegularFile, 0o600, self.size, 1)
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

    /// Waits until the virtual disk has had time to write `len` more bytes at the
    /// profile's rate.
    fn pace(&self, len: usize) {
        let Some(rate) = self.profile.write_bytes_per_s else {
            return;
        };
        let cost = Duration::from_secs_f64(len as f64 / rate as f64);
        let done = {
            let mut busy = self.busy_until.lock().unwrap_or_else(|p| p.into_inner());
            *busy = (*busy).max(Instant::now()) + cost;
            *busy
        };
        let now = Instant::now();
        if done > now {
            std::thread::sleep(done - now);
        }
    }
}

impl Filesystem for ImageFs {
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
        reply.opened(FileHandle(0), FopenFlags::empty());
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
        let len = (size as u64).min(self.size.saturating_sub(offset)) as usize;
        let mut buf = vec![0u8; len];
        match self.backing.read_exact_at(&mut buf, offset) {
            Ok(()) => reply.data(&buf),
            Err(e) => reply.error(Errno::from(e)),
        }
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
        if offset.saturating_add(data.len() as u64) > self.size {
            reply.error(Errno::from_i32(libc::ENOSPC));
            return;
        }
        self.pace(data.len());
        match self.backing.write_all_at(data, offset) {
            Ok(()) => {
                self.counters.writes.fetch_add(1, Ordering::Relaxed);
                self.counters
                    .bytes_written
                    .fetch_add(data.len() as u64, Ordering::Relaxed);
                reply.written(data.len() as u32);
            }
            Err(e) => reply.error(Errno::from(e)),
        }
    }

    /// `close(2)` of the image: not a cache flush, nothing to wait for.
    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        reply.ok();
    }

    /// The device cache flush.
    fn fsync(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        std::thread::sleep(self.profile.flush);
        reply.ok();
    }
}

/// A mounted emulated device; unmounting is the owner's job (the undo stack, through the
/// mount point), dropping this joins the session thread.
pub struct EmulatedDevice {
    session: Option<BackgroundSession>,
    pub counters: Arc<Counters>,
}

impl EmulatedDevice {
    /// Serves `backing` as `mount_point/image` with the figures of `profile`.
    pub fn mount(backing: &Path, mount_point: &Path, profile: &FlushProfile) -> Result<EmulatedDevice> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(backing)
            .with_context(|| format!("cannot open {}", backing.display()))?;
        let size = file.metadata()?.len();
        let counters = Arc::new(Counters::default());
        let fs = ImageFs {
            backing: file,
            size,
            profile: profile.clone(),
            counters: counters.clone(),
            busy_until: Mutex::new(Instant::now()),
            // SAFETY: getuid/getgid have no preconditions.
            uid: unsafe { libc::getuid() },
            // SAFETY: as above.
            gid: unsafe { libc::getgid() },
        };
        let mut config = Config::default();
        config.mount_options = vec![
            MountOption::FSName("fsynclab".into()),
            MountOption::Subtype("fsynclab-device".into()),
        ];
        config.n_threads = Some(1);
        let session = fuser::spawn_mount(fs, mount_point, &config)
            .with_context(|| format!("cannot mount the emulated device at {}", mount_point.display()))?;
        Ok(EmulatedDevice {
            session: Some(session),
            counters,
        })
    }

    pub fn flushes(&self) -> u64 {
        self.counters.flushes.load(Ordering::Relaxed)
    }
}

impl Drop for EmulatedDevice {
    /// The undo stack has unmounted the file system by now, which ends the session thread:
    /// join it. If something still holds the device (an unmount that had to be lazy), the
    /// thread would serve it forever; then leave it, and the kernel ends the connection when
    /// the process exits and closes /dev/fuse.
    fn drop(&mut self) {
        let Some(session) = self.session.take() else { return };
        let deadline = Instant::now() + Duration::from_secs(5);
        while !session.guard.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if session.guard.is_finished() {
            let _ = session.join();
        } else {
            eprintln!("fsynclab: the emulated device is still in use; it ends with this process");
            std::mem::forget(session);
        }
    }
}
