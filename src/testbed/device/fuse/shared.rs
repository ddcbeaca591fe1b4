//! What the daemon's threads share: the disk model and the daemon's own timings under one
//! lock, two condition variables (work for the drain thread, progress for waiting
//! requests), the image file, and the daemon's clock.
//!
//! Two switches end the emulation early, each without waiting for anything: a power cut
//! ([`Shared::cut`]: the cache is lost, every later request fails at once, nothing more
//! reaches the media) and stopping time ([`Shared::stop_emulating_time`]: pending and later
//! requests are served at once, so that a run stopped by a signal tears down quickly).

use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use fuser::Errno;

use super::super::model::{Disk, DiskFigures, DrainOp, Keep, Nanos};
use super::super::power_cut::{CutPlan, CutTrigger};
use crate::environment::PowerCut;

/// The daemon's clock: nanoseconds since the device was mounted.
#[derive(Clone, Copy, Debug)]
pub(super) struct Clock {
    origin: Instant,
}

impl Clock {
    pub(super) fn now(&self) -> Nanos {
        self.origin.elapsed().as_nanos() as Nanos
    }
}

/// The longest a sleeping request goes without looking whether the power was cut or time
/// stopped; and how often the drain thread asks whether a signal has stopped the run.
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// Asks for 1 ns timer slack on the calling thread (once per thread): sleeps of tens of
/// microseconds otherwise overshoot by the default 50 us.
pub(super) fn precise_sleeps() {
    thread_local! {
        static DONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    DONE.with(|done| {
        if !done.get() {
            // Affects only this thread; a kernel that refuses leaves the default slack.
            let _ = nix::sys::prctl::set_timerslack(1);
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
    /// Writes acknowledged (flushes completed are `flush_count`).
    pub(super) writes_acked: u64,
    /// Requests answered with EIO because the power had been cut.
    pub(super) refused_after_cut: u64,
}

/// A power cut waiting for its trigger.
#[derive(Clone, Debug)]
pub(super) struct Armed {
    pub(super) plan: CutPlan,
    /// For a time trigger: when, on the daemon's clock.
    pub(super) at: Option<Nanos>,
    /// The acknowledged writes and completed flushes when it was armed.
    pub(super) writes_from: u64,
    pub(super) flushes_from: u64,
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
    /// The power cut, once it has happened: later requests fail with EIO.
    pub(super) cut: Option<PowerCut>,
    pub(super) armed: Option<Armed>,
    /// Drain operations the drain thread has taken from `ops` and is writing (or has
    /// written) to the media, not yet marked complete in the model.
    pub(super) writing: usize,
    /// When the drain thread next asks whether a signal has stopped the run.
    pub(super) next_signal_look: Nanos,
}

/// Which request completed, for a cut armed to come after N of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Acked {
    Write,
    Flush,
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
    /// Held while writing to the image: a cut waits for the drain's writes in progress
    /// (they ended before it), and afterwards nothing more is written.
    pub(super) media: Mutex<()>,
    pub(super) size: u64,
    pub(super) stop: AtomicBool,
    /// The power is cut (or writing the image failed): requests fail at once.
    pub(super) dead: AtomicBool,
    /// Time no longer emulated: requests are served at once.
    pub(super) instant: AtomicBool,
    /// The drive as its profile made it, for a drive afresh after a cut ([`Shared::power_on`]).
    initial: DiskFigures,
}

impl Shared {
    /// The shared state of a device serving `image` (`size` bytes) through `disk`; its clock
    /// starts now.
    pub(super) fn new(disk: Disk, image: File, size: u64) -> Shared {
        Shared {
            initial: disk.figures().clone(),
            state: Mutex::new(State {
                disk,
                ops: VecDeque::new(),
                timing: Timing::default(),
                failed: None,
                next_sample: 0,
                cut: None,
                armed: None,
                writing: 0,
                next_signal_look: 0,
            }),
            work: Condvar::new(),
            progress: Condvar::new(),
            clock: Clock { origin: Instant::now() },
            image,
            media: Mutex::new(()),
            size,
            stop: AtomicBool::new(false),
            dead: AtomicBool::new(false),
            instant: AtomicBool::new(false),
        }
    }

    /// Sleeps until `t` on the daemon's clock, unless time stops or the power is cut first
    /// (looked at every [`LOOK_EVERY`]).
    pub(super) fn sleep_until(&self, t: Nanos) {
        loop {
            if self.instant.load(Ordering::Relaxed) || self.dead.load(Ordering::Relaxed) {
                return;
            }
            let now = self.clock.now();
            if t <= now {
                return;
            }
            std::thread::sleep(Duration::from_nanos(t - now).min(LOOK_EVERY));
        }
    }

    /// Serves pending and later requests at once: the drain writes what the drive holds
    /// without waiting for the model's times, and no request sleeps. The model still
    /// decides the order (a flush still waits for the writes before it to reach the media).
    pub(super) fn stop_emulating_time(&self) {
        if !self.instant.swap(true, Ordering::SeqCst) {
            let _st = self.lock();
            self.work.notify_all();
            self.progress.notify_all();
        }
    }

    /// Whether time is no longer emulated.
    pub(super) fn is_instant(&self) -> bool {
        self.instant.load(Ordering::Relaxed)
    }

    /// Once a signal has asked the run to stop, stops emulating time (the drain thread looks
    /// every [`LOOK_EVERY`]): what the run does next is tear down, which must not wait for a
    /// slow disk. Returns when it next looks.
    pub(super) fn look_for_signals(&self, st: &mut State, now: Nanos) -> Nanos {
        if now >= st.next_signal_look {
            st.next_signal_look = now + LOOK_EVERY.as_nanos() as Nanos;
            if !self.is_instant() && crate::signals::received().is_some() {
                self.instant.store(true, Ordering::SeqCst);
                self.progress.notify_all();
            }
        }
        st.next_signal_look
    }

    /// Arms `plan`, replacing any cut armed before; a cut `now` happens at once.
    pub(super) fn arm(&self, st: &mut MutexGuard<'_, State>, plan: CutPlan) {
        let now = self.clock.now();
        let at = plan.delay().map(|d| now.saturating_add(d.as_nanos() as Nanos));
        st.armed = Some(Armed {
            plan,
            at,
            writes_from: st.timing.writes_acked,
            flushes_from: st.timing.flush_count,
        });
        if plan.trigger == CutTrigger::Now {
            self.cut(st, plan.keep, plan.seed, "now".into());
        }
        self.work.notify_all();
    }

    /// Counts a request acknowledged (the caller replies once this returns, the lock
    /// released) and cuts the power if it was the one an armed cut waits for: the request
    /// was acknowledged, everything after it fails.
    pub(super) fn acknowledged(&self, st: &mut MutexGuard<'_, State>, what: Acked) {
        match what {
            Acked::Write => st.timing.writes_acked += 1,
            Acked::Flush => st.timing.flush_count += 1,
        }
        let Some(armed) = st.armed.clone() else { return };
        let due = match armed.plan.trigger {
            CutTrigger::Writes(n) => what == Acked::Write && st.timing.writes_acked - armed.writes_from >= n,
            CutTrigger::Flushes(n) => what == Acked::Flush && st.timing.flush_count - armed.flushes_from >= n,
            _ => false,
        };
        if due {
            self.cut(st, armed.plan.keep, armed.plan.seed, armed.plan.trigger_text());
        }
    }

    /// Cuts the power now: waits for the drain's writes in progress (they ended before the
    /// cut), puts on the media the drain operations that ended by now, lets the model decide
    /// what of the rest survives and writes that, then fails every request from here on. A
    /// second cut changes nothing and returns the first's record.
    pub(super) fn cut(&self, st: &mut MutexGuard<'_, State>, keep: Keep, seed: u64, trigger: String) -> PowerCut {
        if let Some(done) = &st.cut {
            return done.clone();
        }
        let media = self.media.lock().unwrap_or_else(|p| p.into_inner());
        let now = self.clock.now();
        // The drain thread's batch is on the media (it wrote it holding `media`).
        for _ in 0..std::mem::take(&mut st.writing) {
            st.disk.complete(now);
        }
        let mut error = None;
        let mut write = |offset: u64, data: &[u8]| {
            if let Err(e) = self.image.write_all_at(data, offset) {
                error.get_or_insert_with(|| format!("cannot write the emulated disk's media: {e}"));
            }
        };
        let ended = st.ops.iter().take_while(|op| op.end <= now).count();
        let ended: Vec<DrainOp> = st.ops.drain(..ended).collect();
        for op in ended {
            write(op.offset, op.data.as_slice());
            st.disk.complete(op.end);
        }
        // The rest of the started operations were still moving: held, as the cache is.
        st.ops.clear();
        let battery = st.disk.figures().cache_durable && st.disk.figures().cache_bytes > 0;
        let out = st.disk.cut(now, keep, seed);
        for (offset, data) in &out.survivors {
            write(*offset, data.as_slice());
        }
        drop(media);
        if let Some(e) = error {
            note!("fsynclab: {e}");
            st.failed.get_or_insert(e);
        }
        let c = out.counts;
        let record = PowerCut {
            at_s: now as f64 / 1e9,
            trigger,
            keep: if battery { "battery".into() } else { keep.name().into() },
            seed,
            writes_before: st.timing.writes_acked,
            flushes_before: st.timing.flush_count,
            held_writes: c.held_writes,
            held_bytes: c.held_bytes,
            kept_writes: c.kept_writes,
            kept_bytes: c.kept_bytes,
            lost_writes: c.lost_writes,
            lost_bytes: c.lost_bytes,
            torn_writes: c.torn_writes,
            torn_bytes_kept: c.torn_bytes_kept,
            torn_bytes_lost: c.torn_bytes_lost,
            unacknowledged_writes: c.unacknowledged_writes,
        };
        st.cut = Some(record.clone());
        st.armed = None;
        self.dead.store(true, Ordering::SeqCst);
        self.progress.notify_all();
        self.work.notify_all();
        record
    }

    /// Turns the power on again after a cut, for a disk served to a guest, whose FUSE file
    /// QEMU keeps open (on the host a cut's disk is replaced instead: a plain loop device for
    /// the recovery, a new emulated device for the next cycle). The drive starts empty, as a
    /// drive does after a power cycle, over the media as the cut left them, and serves
    /// requests again. With `fresh` (a new filesystem was just made on the media) it is the
    /// profile's drive afresh: its faults counted from now, its counters from zero, time
    /// emulated. Without, it serves the recovery: no faults, time not emulated (the replay is
    /// timed as on the host's plain loop device). Nothing to do unless the power was cut.
    pub(super) fn power_on(&self, fresh: bool) -> bool {
        let mut st = self.lock();
        if st.cut.is_none() {
            return false;
        }
        let _media = self.media.lock().unwrap_or_else(|p| p.into_inner());
        let now = self.clock.now();
        let mut figures = self.initial.clone();
        if !fresh {
            figures.faults.clear();
        }
        st.disk = Disk::new(figures);
        st.ops.clear();
        st.writing = 0;
        st.failed = None;
        st.armed = None;
        st.cut = None;
        if fresh {
            // `after=` rules count from now, not from the device's start.
            let faults = self.initial.faults.clone();
            st.disk.set_faults(&faults, now);
            st.timing = Timing::default();
            st.next_sample = now;
            self.instant.store(false, Ordering::SeqCst);
        } else {
            self.instant.store(true, Ordering::SeqCst);
        }
        self.dead.store(false, Ordering::SeqCst);
        self.progress.notify_all();
        self.work.notify_all();
        true
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits once for the drain's progress.
    pub(super) fn wait<'a>(&self, st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.progress.wait(st).unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for the drain's progress while `busy` holds. EIO once the power is cut or
    /// writing the image has failed (the lock is then released before the caller replies).
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

    /// The state, unless the power is cut or writing the image has failed: then EIO for
    /// every request (counted after a cut), the lock released before the caller replies.
    pub(super) fn unless_failed(mut st: MutexGuard<'_, State>) -> Result<MutexGuard<'_, State>, Errno> {
        if st.cut.is_some() {
            st.timing.refused_after_cut += 1;
            return Err(Errno::EIO);
        }
        match st.failed {
            Some(_) => Err(Errno::EIO),
            None => Ok(st),
        }
    }
}
