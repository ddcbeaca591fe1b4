//! The emulated disk's daemon: a FUSE file system inside fsynclab exposing one file,
//! `image`, served through the disk model ([`super::model`]).
//!
//! The loop device is attached to `image` with direct I/O, so each block request reaches
//! the daemon as one FUSE_WRITE or FUSE_READ of up to 1 MiB (the kernel's FUSE page limit)
//! without a copy in the FUSE file's page cache, several in flight at once (asynchronous
//! direct I/O); a cache flush of the loop device (REQ_PREFLUSH) becomes `vfs_fsync` of the
//! image, which arrives as FUSE_FSYNC.
//!
//! Threads: the FUSE session's workers take requests and block until the model says they
//! complete; one drain thread moves the write cache to the media in virtual time. Time is
//! virtual where it matters for throughput: the actuator's schedule advances by the model's
//! costs, not by when a thread happened to wake up, so a late wake-up delays a reply but
//! never lowers the disk's rate. Threads sleep with a 1 ns timer slack (PR_SET_TIMERSLACK)
//! instead of the default 50 us.
//!
//! The media is the backing file; only drained data is written to it. The backing file lives
//! on a private tmpfs (see `scratch.rs`): on the host disk its page cache would count
//! against the same dirty limits as the scratch filesystem the experiment is throttling.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, Result};
use fuser::{
    BackgroundSession, Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    InitFlags, KernelConfig, LockOwner, MountOption, OpenFlags, ReplyAttr, ReplyData, ReplyEmpty, ReplyEntry,
    ReplyOpen, ReplyWrite, Request, WriteFlags,
};

use super::model::{Chunk, Disk, DrainOp, ModelStats, Nanos, WriteOutcome};
use super::profile::DiskProfile;
use crate::environment::DeviceActivity;

/// The name of the one file the file system holds.
pub const IMAGE_NAME: &str = "image";
const IMAGE: INodeNo = INodeNo(2);
/// Attributes never change behind the kernel's back: cache them for a long time.
const TTL: Duration = Duration::from_secs(3600);
/// Worker threads taking FUSE requests: enough to keep the requests the kernel sends in
/// parallel (up to `MAX_BACKGROUND`) moving while some wait for the model.
const WORKERS: usize = 8;
/// Asynchronous requests the kernel may have outstanding (direct I/O writes and reads).
const MAX_BACKGROUND: u16 = 64;
/// Largest FUSE_WRITE: the kernel's default `fuse.max_pages_limit` (256 pages) anyway.
const MAX_WRITE: u32 = 1 << 20;
/// How often the drain thread samples the cache occupancy.
const SAMPLE_EVERY: Nanos = 100_000_000;

/// What `--device help` and the docs say about the daemon's own ceiling (measured with the
/// commands in docs/disk-model.md).
pub const CEILING_NOTE: &str = "\
The daemon's ceiling, measured on a 2-vCPU VM shared with other work (docs/disk-model.md):
with no media cost to emulate (--device cache=64M) it serves 1 MiB direct writes at 3.4-3.6
GB/s and 4 KiB direct writes one at a time at 30-32K/s (a FUSE round trip of about 30 us).
So nvme's 1500 MB/s is reached (1430 MB/s measured with fio) but not its 50K writes/s at
queue depth 1 (24-27K/s). Through the page cache (`load stream`) the daemon's three copies
of every byte share the two CPUs with the writer's own copy: nvme sustained 1000-1320 MiB/s
where --device ram sustained 790-1900 MiB/s in the same rounds.";

/// The daemon's clock: nanoseconds since the device was mounted.
#[derive(Clone, Copy, Debug)]
struct Clock {
    origin: Instant,
}

impl Clock {
    fn now(&self) -> Nanos {
        self.origin.elapsed().as_nanos() as Nanos
    }

    /// Sleeps until `t` on this clock.
    fn sleep_until(&self, t: Nanos) {
        let now = self.now();
        if t > now {
            std::thread::sleep(Duration::from_nanos(t - now));
        }
    }
}

/// Asks for 1 ns timer slack on the calling thread (once per thread): sleeps of tens of
/// microseconds otherwise overshoot by the default 50 us.
fn precise_sleeps() {
    thread_local! {
        static DONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    DONE.with(|done| {
        if !done.get() {
            // SAFETY: PR_SET_TIMERSLACK takes a plain integer and affects only this thread.
            unsafe {
                libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
            }
            done.set(true);
        }
    });
}

/// What the daemon timed itself, beside the model's counters.
#[derive(Clone, Debug, Default)]
struct Timing {
    flush_count: u64,
    flush_ns_total: u64,
    flush_ns_max: u64,
    /// Bytes each flush found waiting for the media, summed, and the largest.
    flush_pending_bytes_total: u64,
    flush_pending_bytes_max: u64,
    /// Writes that found the cache full, and how long they waited for room.
    room_waits: u64,
    room_wait_ns_total: u64,
    /// Cache occupancy samples: (time on the daemon's clock, bytes).
    occupancy: Vec<(Nanos, u64)>,
    /// The longest a drain operation's data reached the media after the model's end for it.
    drain_lag_ns_max: u64,
}

/// Everything the daemon's threads share, under one lock.
struct State {
    disk: Disk,
    /// Drain operations started, oldest first (the model's own list, with their ends).
    ops: VecDeque<DrainOp>,
    timing: Timing,
    /// The first error writing the image; later requests fail with EIO.
    failed: Option<String>,
    next_sample: Nanos,
}

struct Shared {
    state: Mutex<State>,
    /// The drain thread waits here for work.
    work: Condvar,
    /// Requests wait here for the drain: room in the cache, a write-through write or a
    /// flush on the media.
    progress: Condvar,
    clock: Clock,
    image: File,
    size: u64,
    stop: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The drain thread: starts every drain operation the model can start by now, writes the
/// data of those that have ended to the image, and sleeps until the next event.
fn drain_loop(shared: &Shared) {
    precise_sleeps();
    let mut st = shared.lock();
    while !shared.stop.load(Ordering::Relaxed) {
        let now = shared.clock.now();
        while let Some(op) = st.disk.next_drain(now) {
            st.ops.push_back(op);
        }
        if now >= st.next_sample {
            let bytes = st.disk.cached_bytes();
            st.timing.occupancy.push((now, bytes));
            st.next_sample = now + SAMPLE_EVERY;
        }
        let ended = st.ops.iter().take_while(|op| op.end <= now).count();
        if ended > 0 {
            let done: Vec<DrainOp> = st.ops.drain(..ended).collect();
            drop(st);
            let mut error = None;
            for op in &done {
                if let Err(e) = shared.image.write_all_at(op.data.as_slice(), op.offset) {
                    error.get_or_insert_with(|| format!("cannot write the emulated disk's media: {e}"));
                }
            }
            st = shared.lock();
            let written = shared.clock.now();
            for op in &done {
                st.disk.complete(op.end);
                st.timing.drain_lag_ns_max = st.timing.drain_lag_ns_max.max(written - op.end);
            }
            if let Some(e) = error {
                eprintln!("fsynclab: {e}");
                st.failed.get_or_insert(e);
            }
            shared.progress.notify_all();
            continue;
        }
        let next = [
            st.ops.front().map(|o| o.end),
            st.disk.next_drain_start(),
            Some(st.next_sample),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(now + SAMPLE_EVERY);
        if next > now {
            st = shared
                .work
                .wait_timeout(st, Duration::from_nanos(next - now))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

struct ImageFs {
    shared: Arc<Shared>,
    uid: u32,
    gid: u32,
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
        let plan = {
            let mut st = shared.lock();
            if st.failed.is_some() {
                drop(st);
                reply.error(Errno::EIO);
                return;
            }
            st.disk.read(shared.clock.now(), offset, len)
        };
        shared.work.notify_one();
        shared.clock.sleep_until(plan.at);
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
        let mut st = shared.lock();
        let mut waited_since = None;
        let outcome = loop {
            if st.failed.is_some() {
                drop(st);
                reply.error(Errno::EIO);
                return;
            }
            let now = shared.clock.now();
            match st.disk.write(now, offset, chunk.clone()) {
                WriteOutcome::NoRoom => {
                    waited_since.get_or_insert(now);
                    st = shared.progress.wait(st).unwrap_or_else(|p| p.into_inner());
                }
                done => break done,
            }
        };
        if let Some(since) = waited_since {
            st.timing.room_waits += 1;
            st.timing.room_wait_ns_total += shared.clock.now().saturating_sub(since);
        }
        shared.work.notify_one();
        match outcome {
            WriteOutcome::Cached { at, .. } => {
                drop(st);
                shared.clock.sleep_until(at);
            }
            WriteOutcome::WriteThrough { seq } => {
                while st.disk.is_pending(seq) && st.failed.is_none() {
                    st = shared.progress.wait(st).unwrap_or_else(|p| p.into_inner());
                }
                let failed = st.failed.is_some();
                drop(st);
                if failed {
                    reply.error(Errno::EIO);
                    return;
                }
            }
            WriteOutcome::NoRoom => unreachable!("the loop above waits for room"),
        }
        reply.written(data.len() as u32);
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
        let mut st = shared.lock();
        let ticket = st.disk.flush(shared.clock.now());
        shared.work.notify_one();
        while !st.disk.flush_drained(&ticket) && st.failed.is_none() {
            st = shared.progress.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        if st.failed.is_some() {
            drop(st);
            reply.error(Errno::EIO);
            return;
        }
        let end = st.disk.finish_flush(shared.clock.now());
        let took = end.saturating_sub(ticket.arrived);
        let t = &mut st.timing;
        t.flush_count += 1;
        t.flush_ns_total += took;
        t.flush_ns_max = t.flush_ns_max.max(took);
        t.flush_pending_bytes_total += ticket.pending_bytes;
        t.flush_pending_bytes_max = t.flush_pending_bytes_max.max(ticket.pending_bytes);
        drop(st);
        shared.clock.sleep_until(end);
        reply.ok();
    }
}

/// A point in the device's life to measure a run from: counters and the time.
#[derive(Clone, Debug)]
pub struct DeviceMark {
    at: Nanos,
    model: ModelStats,
    timing: Timing,
}

/// A mounted emulated device; unmounting is the owner's job (the undo stack, through the
/// mount point), dropping this stops the drain thread and joins the session thread.
pub struct EmulatedDevice {
    session: Option<BackgroundSession>,
    drain: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl EmulatedDevice {
    /// Serves `backing` as `mount_point/image` with the figures of `profile`.
    pub fn mount(backing: &Path, mount_point: &Path, profile: &DiskProfile) -> Result<EmulatedDevice> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(backing)
            .with_context(|| format!("cannot open {}", backing.display()))?;
        let size = file.metadata()?.len();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                disk: Disk::new(profile.figures.clone()),
                ops: VecDeque::new(),
                timing: Timing::default(),
                failed: None,
                next_sample: 0,
            }),
            work: Condvar::new(),
            progress: Condvar::new(),
            clock: Clock { origin: Instant::now() },
            image: file,
            size,
            stop: AtomicBool::new(false),
        });
        let fs = ImageFs {
            shared: shared.clone(),
            // SAFETY: getuid/getgid have no preconditions.
            uid: unsafe { libc::getuid() },
            // SAFETY: as above.
            gid: unsafe { libc::getgid() },
        };
        let drain = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("fsynclab-drain".into())
                .spawn(move || drain_loop(&shared))
                .context("cannot start the emulated disk's drain thread")?
        };
        let mut config = Config::default();
        config.mount_options = vec![
            MountOption::FSName("fsynclab".into()),
            MountOption::Subtype("fsynclab-device".into()),
        ];
        config.n_threads = Some(WORKERS);
        config.clone_fd = true;
        let mut device = EmulatedDevice {
            session: None,
            drain: Some(drain),
            shared,
        };
        device.session = Some(
            fuser::spawn_mount(fs, mount_point, &config)
                .with_context(|| format!("cannot mount the emulated device at {}", mount_point.display()))?,
        );
        Ok(device)
    }

    /// Device cache flushes received so far.
    pub fn flushes(&self) -> u64 {
        self.shared.lock().disk.stats().flushes
    }

    /// The counters now, to measure a run from; the peak figures (largest occupancy,
    /// longest flush) start afresh.
    pub fn mark(&self) -> DeviceMark {
        let mark = self.snapshot();
        let mut st = self.shared.lock();
        st.disk.reset_peaks();
        st.timing.flush_ns_max = 0;
        st.timing.flush_pending_bytes_max = 0;
        st.timing.drain_lag_ns_max = 0;
        mark
    }

    fn snapshot(&self) -> DeviceMark {
        let now = self.shared.clock.now();
        let mut st = self.shared.lock();
        st.disk.settle_stats(now);
        DeviceMark {
            at: now,
            model: st.disk.stats().clone(),
            timing: Timing {
                occupancy: Vec::new(),
                ..st.timing.clone()
            },
        }
    }

    /// What the device did since `mark`, with the cache occupancy samples of that time
    /// (at most `MAX_SAMPLES`, the largest of each stretch when there were more).
    pub fn activity_since(&self, mark: &DeviceMark) -> DeviceActivity {
        let to = self.snapshot();
        let samples: Vec<(Nanos, u64)> = self
            .shared
            .lock()
            .timing
            .occupancy
            .iter()
            .filter(|(t, _)| *t >= mark.at && *t <= to.at)
            .copied()
            .collect();
        activity(mark, &to, &samples)
    }
}

/// Occupancy samples kept in a result.
const MAX_SAMPLES: usize = 600;

fn activity(from: &DeviceMark, to: &DeviceMark, samples: &[(Nanos, u64)]) -> DeviceActivity {
    let (a, b) = (&from.model, &to.model);
    let (ta, tb) = (&from.timing, &to.timing);
    let window_ns = to.at.saturating_sub(from.at).max(1);
    let ms = |ns: u64| ns as f64 / 1e6;
    let flushes = tb.flush_count - ta.flush_count;
    let per_bucket = samples.len().div_ceil(MAX_SAMPLES).max(1);
    let occupancy = samples
        .chunks(per_bucket)
        .map(|c| {
            let t = c[0].0;
            let max = c.iter().map(|s| s.1).max().unwrap_or(0);
            [((t - from.at) as f64 / 1e9 * 1e3).round() / 1e3, max as f64]
        })
        .collect();
    DeviceActivity {
        duration_s: window_ns as f64 / 1e9,
        reads: b.reads - a.reads,
        read_bytes: b.read_bytes - a.read_bytes,
        read_cache_hits: b.read_hits - a.read_hits,
        writes: b.writes - a.writes,
        write_bytes: b.write_bytes - a.write_bytes,
        write_through: b.write_through - a.write_through,
        writes_waited_for_room: tb.room_waits - ta.room_waits,
        room_wait_ms: ms(tb.room_wait_ns_total - ta.room_wait_ns_total),
        overwritten_in_cache_bytes: b.overwritten_bytes - a.overwritten_bytes,
        flushes,
        flush_ms_mean: (flushes > 0).then(|| ms(tb.flush_ns_total - ta.flush_ns_total) / flushes as f64),
        flush_ms_total: ms(tb.flush_ns_total - ta.flush_ns_total),
        flush_ms_max: (flushes > 0).then(|| ms(tb.flush_ns_max)),
        flush_pending_bytes_total: tb.flush_pending_bytes_total - ta.flush_pending_bytes_total,
        flush_pending_bytes_max: (flushes > 0).then_some(tb.flush_pending_bytes_max),
        media_ops: b.media_ops - a.media_ops,
        media_bytes: b.media_bytes - a.media_bytes,
        seeks: b.seeks - a.seeks,
        short_skips: b.skips - a.skips,
        rewinds: b.rewinds - a.rewinds,
        sequential: b.sequential - a.sequential,
        positioning_ms: ms(b.positioning_ns - a.positioning_ns),
        transfer_ms: ms(b.transfer_ns - a.transfer_ns),
        media_busy_fraction: ((b.positioning_ns + b.transfer_ns) - (a.positioning_ns + a.transfer_ns)) as f64
            / window_ns as f64,
        cache_max_bytes: b.cache_max_bytes,
        cache_mean_bytes: ((b.cache_byte_ns - a.cache_byte_ns) / window_ns as u128) as u64,
        cache_occupancy: occupancy,
        drain_lag_ms_max: ms(tb.drain_lag_ns_max),
    }
}

impl Drop for EmulatedDevice {
    /// The undo stack has unmounted the file system by now, which ends the session thread:
    /// join it, and stop the drain thread. If something still holds the device (an unmount
    /// that had to be lazy), the session would serve it forever; then leave it, and the
    /// kernel ends the connection when the process exits and closes /dev/fuse.
    fn drop(&mut self) {
        if let Some(session) = self.session.take() {
            let deadline = Instant::now() + Duration::from_secs(5);
            while !session.guard.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if session.guard.is_finished() {
                let _ = session.join();
            } else {
                eprintln!("fsynclab: the emulated device is still in use; it ends with this process");
                std::mem::forget(session);
                return;
            }
        }
        self.shared.stop.store(true, Ordering::Relaxed);
        self.shared.work.notify_all();
        if let Some(drain) = self.drain.take() {
            let _ = drain.join();
        }
    }
}
