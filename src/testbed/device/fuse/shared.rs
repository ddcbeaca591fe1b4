//! What the daemon's threads share: the disk model and the daemon's own timings under one
//! lock, two condition variables (work for the drain thread, progress for waiting
//! requests), the image file, and the daemon's clock.

use std::collections::VecDeque;
use std::fs::File;
use std::sync::atomic::AtomicBool;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use fuser::Errno;

use super::super::model::{Disk, DrainOp, Nanos};

/// The daemon's clock: nanoseconds since the device was mounted.
#[derive(Clone, Copy, Debug)]
pub(super) struct Clock {
    origin: Instant,
}

impl Clock {
    pub(super) fn now(&self) -> Nanos {
        self.origin.elapsed().as_nanos() as Nanos
    }

    /// Sleeps until `t` on this clock.
    pub(super) fn sleep_until(&self, t: Nanos) {
        let now = self.now();
        if t > now {
            std::thread::sleep(Duration::from_nanos(t - now));
        }
    }
}

/// Asks for 1 ns timer slack on the calling thread (once per thread): sleeps of tens of
/// microseconds otherwise overshoot by the default 50 us.
pub(super) fn precise_sleeps() {
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
pub(super) struct Timing {
    pub(super) flush_count: u64,
    pub(super) flush_ns_total: u64,
    pub(super) flush_ns_max: u64,
    /// Bytes each flush found waiting for the media, summed, and the largest.
    pub(super) flush_pending_bytes_total: u64,
    pub(super) flush_pending_bytes_max: u64,
    /// Writes that found the cache full, and how long they waited for room.
    pub(super) room_waits: u64,
    pub(super) room_wait_ns_total: u64,
    /// Cache occupancy samples: (time on the daemon's clock, bytes).
    pub(super) occupancy: Vec<(Nanos, u64)>,
    /// The longest a drain operation's data reached the media after the model's end for it.
    pub(super) drain_lag_ns_max: u64,
}

/// Everything the daemon's threads share, under one lock.
pub(super) struct State {
    pub(super) disk: Disk,
    /// Drain operations started, oldest first (the model's own list, with their ends).
    pub(super) ops: VecDeque<DrainOp>,
    pub(super) timing: Timing,
    /// The first error writing the image; later requests fail with EIO.
    pub(super) failed: Option<String>,
    pub(super) next_sample: Nanos,
}

pub(super) struct Shared {
    pub(super) state: Mutex<State>,
    /// The drain thread waits here for work.
    pub(super) work: Condvar,
    /// Requests wait here for the drain: room in the cache, a write-through write or a
    /// flush on the media.
    pub(super) progress: Condvar,
    pub(super) clock: Clock,
    pub(super) image: File,
    pub(super) size: u64,
    pub(super) stop: AtomicBool,
}

impl Shared {
    /// The shared state of a device serving `image` (`size` bytes) through `disk`; its clock
    /// starts now.
    pub(super) fn new(disk: Disk, image: File, size: u64) -> Shared {
        Shared {
            state: Mutex::new(State {
                disk,
                ops: VecDeque::new(),
                timing: Timing::default(),
                failed: None,
                next_sample: 0,
            }),
            work: Condvar::new(),
            progress: Condvar::new(),
            clock: Clock { origin: Instant::now() },
            image,
            size,
            stop: AtomicBool::new(false),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits once for the drain's progress.
    pub(super) fn wait<'a>(&self, st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.progress.wait(st).unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for the drain's progress while `busy` holds. EIO once writing the image has
    /// failed (the lock is then released before the caller replies).
    pub(super) fn wait_while<'a>(
        &self,
        mut st: MutexGuard<'a, State>,
        busy: impl Fn(&State) -> bool,
    ) -> Result<MutexGuard<'a, State>, Errno> {
        loop {
            st = Self::unless_failed(st)?;
            if !busy(&st) {
                return Ok(st);
            }
            st = self.wait(st);
        }
    }

    /// The state, unless writing the image has failed: then EIO for every request, the lock
    /// released before the caller replies.
    pub(super) fn unless_failed(st: MutexGuard<'_, State>) -> Result<MutexGuard<'_, State>, Errno> {
        match st.failed {
            Some(_) => Err(Errno::EIO),
            None => Ok(st),
        }
    }
}
