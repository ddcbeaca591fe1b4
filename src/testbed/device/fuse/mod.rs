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
//!
//! The parts: `image_fs.rs` answers the FUSE requests, `drain.rs` is the drain thread,
//! `shared.rs` what they share (the model under one lock, the clock), `activity.rs` turns
//! two marks into what a result records, `control.rs` is the handle the testbed's users
//! hold on a running device (power cuts, faults, stopping time). This file mounts and
//! unmounts the device.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use fuser::{BackgroundSession, Config, MountOption};

use super::model::{Disk, ModelStats, Nanos};
use super::profile::DiskProfile;
use crate::environment::{DeviceActivity, PowerCut};

mod activity;
mod control;
mod drain;
mod image_fs;
mod shared;

pub use control::{DeviceControl, Remote, Reply, Request};

use image_fs::ImageFs;
use shared::{Shared, Timing};

/// The name of the one file the file system holds.
pub(crate) const IMAGE_NAME: &str = "image";
/// Worker threads taking FUSE requests: enough to keep the requests the kernel sends in
/// parallel (up to `MAX_BACKGROUND`) moving while some wait for the model.
const WORKERS: usize = 8;

/// A point in the device's life to measure a run from: counters and the time.
#[derive(Clone, Debug)]
pub(crate) struct DeviceMark {
    at: Nanos,
    model: ModelStats,
    timing: Timing,
    /// The power cut, if it had happened by then.
    cut: Option<PowerCut>,
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
    pub(crate) fn mount(backing: &Path, mount_point: &Path, profile: &DiskProfile) -> Result<EmulatedDevice> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(backing)
            .with_context(|| format!("cannot open {}", backing.display()))?;
        let size = file.metadata()?.len();
        let shared = Arc::new(Shared::new(Disk::new(profile.figures.clone()), file, size));
        let fs = ImageFs {
            shared: shared.clone(),
            uid: nix::unistd::getuid().as_raw(),
            gid: nix::unistd::getgid().as_raw(),
        };
        let drain = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("fsynclab-drain".into())
                .spawn(move || drain::drain_loop(&shared))
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
    pub(crate) fn flushes(&self) -> u64 {
        self.shared.lock().disk.stats().flushes
    }

    /// The counters now, to measure a run from; the peak figures (largest occupancy,
    /// longest flush) start afresh.
    pub(crate) fn mark(&self) -> DeviceMark {
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
            cut: st.cut.clone(),
        }
    }

    /// A handle to cut the power, inject faults or stop emulating time, from any thread; it
    /// does not keep the device alive.
    pub fn control(&self) -> DeviceControl {
        DeviceControl::new(&self.shared)
    }

    /// What the device did since `mark`, with the cache occupancy samples of that time
    /// (at most `MAX_SAMPLES`, the largest of each stretch when there were more).
    pub(crate) fn activity_since(&self, mark: &DeviceMark) -> DeviceActivity {
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
        activity::activity(mark, &to, &samples)
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
                note!("fsynclab: the emulated device is still in use; it ends with this process");
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
