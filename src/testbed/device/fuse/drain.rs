//! The drain thread: moves the write cache to the media in virtual time. It starts every
//! drain operation the model can start by now, writes the data of those whose modelled end
//! has passed to the image, wakes the requests waiting for progress, and sleeps until the
//! next event (an operation's end, the next start, the next occupancy sample, an armed power
//! cut's moment, the next look for a signal).
//!
//! Once time is no longer emulated ([`Shared::stop_emulating_time`]) it starts and ends
//! every operation at once; once the power is cut it writes nothing more.

use std::os::unix::fs::FileExt;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::super::model::{DrainOp, Nanos};
use super::shared::{precise_sleeps, Shared};

/// How often the drain thread samples the cache occupancy.
const SAMPLE_EVERY: Nanos = 100_000_000;

/// The drain thread's body, until the device stops.
pub(super) fn drain_loop(shared: &Shared) {
    precise_sleeps();
    let mut st = shared.lock();
    while !shared.stop.load(Ordering::Relaxed) {
        let now = shared.clock.now();
        let look = shared.look_for_signals(&mut st, now);
        if st.cut.is_some() {
            // Nothing more reaches the media; wait for the end.
            st = shared
                .work
                .wait_timeout(st, Duration::from_secs(1))
                .unwrap_or_else(|p| p.into_inner())
                .0;
            continue;
        }
        if let Some(armed) = st.armed.clone() {
            if armed.at.is_some_and(|at| at <= now) {
                shared.cut(&mut st, armed.plan.keep, armed.plan.seed, armed.plan.trigger_text());
                continue;
            }
        }
        // Without emulated time every operation starts and ends at once.
        let horizon = if shared.is_instant() { Nanos::MAX } else { now };
        while let Some(op) = st.disk.next_drain(horizon) {
            st.ops.push_back(op);
        }
        if now >= st.next_sample {
            let bytes = st.disk.cached_bytes();
            st.timing.occupancy.push((now, bytes));
            st.next_sample = now + SAMPLE_EVERY;
        }
        let ended = st.ops.iter().take_while(|op| op.end <= horizon).count();
        if ended > 0 {
            let done: Vec<DrainOp> = st.ops.drain(..ended).collect();
            // Written holding `media`, which a cut takes before it decides anything: these
            // ended before any cut, and reach the media whole.
            let media = shared.media.lock().unwrap_or_else(|p| p.into_inner());
            st.writing = done.len();
            drop(st);
            let mut error = None;
            for op in &done {
                if let Err(e) = shared.image.write_all_at(op.data.as_slice(), op.offset) {
                    error.get_or_insert_with(|| format!("cannot write the emulated disk's media: {e}"));
                }
            }
            drop(media);
            st = shared.lock();
            let written = shared.clock.now();
            // A cut meanwhile has marked them complete already.
            if std::mem::take(&mut st.writing) > 0 {
                for op in &done {
                    st.disk.complete(op.end);
                    if !shared.is_instant() {
                        st.timing.drain_lag_ns_max = st.timing.drain_lag_ns_max.max(written.saturating_sub(op.end));
                    }
                }
            }
            if let Some(e) = error {
                note!("fsynclab: {e}");
                st.failed.get_or_insert(e);
            }
            shared.progress.notify_all();
            continue;
        }
        let next = [
            st.ops.front().map(|o| o.end),
            st.disk.next_drain_start(),
            Some(st.next_sample),
            st.armed.as_ref().and_then(|a| a.at),
            Some(look),
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
