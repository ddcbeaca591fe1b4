//! Group commit, the coordination of seed 002 rebuilt in user space: workers register a
//! transaction whose write has completed, one of them (the leader) waits a little so others
//! can join, then syncs once for everyone registered when its sync starts; the others wait.
//! Wong's kernel patches did this inside jbd2 with `fsync_delay_us`; databases do it with a
//! shared log.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::stop::Stop;
use crate::sys::Errno;
use crate::units::parse_duration;

/// How long a leader waits for other transactions before it syncs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Delay {
    Fixed(Duration),
    /// The running average of the leader's own sync calls (the seed's "use avg sync time").
    AvgFlush,
}

const DELAY_EXPECTED: &str = "0, microseconds like 500 (or 500us, 2ms), or avg-flush";

/// `0`, `500` (microseconds, the seed's unit), `500us`, `2ms`, or `avg-flush`.
pub(crate) fn parse_delay(text: &str) -> Result<Delay, String> {
    let t = text.trim();
    if t == "avg-flush" {
        return Ok(Delay::AvgFlush);
    }
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
        return t
            .parse::<u64>()
            .map(|us| Delay::Fixed(Duration::from_micros(us)))
            .map_err(|_| DELAY_EXPECTED.to_string());
    }
    match parse_duration(t) {
        Ok(d) if !t.is_empty() => Ok(Delay::Fixed(d)),
        _ => Err(DELAY_EXPECTED.to_string()),
    }
}

/// The check `--set delay=...` runs.
pub(crate) fn check_delay(text: &str) -> Result<(), String> {
    parse_delay(text).map(|_| ())
}

/// A leader/follower group commit: workers register a transaction whose write has completed,
/// one of them (the leader) syncs for everyone registered when its sync starts, the others
/// wait. A transaction is acknowledged only by a sync that started after its write completed:
/// the leader reads the highest registered ticket, under the lock, before it issues the sync,
/// and registration happens only after a write returns.
#[derive(Default)]
pub(crate) struct GroupCommit {
    state: Mutex<GroupState>,
    done: Condvar,
    /// Sum and count of the leaders' sync latencies, for `delay=avg-flush`.
    flush_sum_ns: AtomicU64,
    flush_count: AtomicU64,
}

#[derive(Default)]
struct GroupState {
    /// The last ticket handed out.
    registered: u64,
    /// Every ticket up to this one is covered by a finished sync.
    durable: u64,
    /// A leader is waiting or syncing.
    leader: bool,
    /// Ticket ranges whose sync failed, with the error.
    failures: Vec<(u64, u64, Errno)>,
}

impl GroupCommit {
    /// A group whose average flush starts at `seed_ns` (the calibration's measurement).
    pub(crate) fn new(seed_ns: u64) -> GroupCommit {
        let g = GroupCommit::default();
        if seed_ns > 0 {
            g.flush_sum_ns.store(seed_ns, Ordering::Relaxed);
            g.flush_count.store(1, Ordering::Relaxed);
        }
        g
    }

    fn lock(&self) -> MutexGuard<'_, GroupState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn avg_flush(&self) -> Duration {
        let n = self.flush_count.load(Ordering::Relaxed);
        match n {
            0 => Duration::ZERO,
            n => Duration::from_nanos(self.flush_sum_ns.load(Ordering::Relaxed) / n),
        }
    }

    /// Called once the transaction's write has completed; returns when a sync covers it.
    /// `sync` issues (and records) the sync call and returns its result and latency.
    pub(crate) fn commit(
        &self,
        delay: Delay,
        stop: &Stop,
        mut sync: impl FnMut() -> (io::Result<()>, u64),
    ) -> io::Result<()> {
        let mut st = self.lock();
        st.registered += 1;
        let ticket = st.registered;
        loop {
            if st.durable >= ticket {
                return match st.failures.iter().find(|(lo, hi, _)| (*lo..=*hi).contains(&ticket)) {
                    Some((_, _, e)) => Err(e.to_io_error()),
                    None => Ok(()),
                };
            }
            if st.leader {
                st = self.done.wait(st).unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            // Leader: let others join, then sync for everyone registered at that moment.
            st.leader = true;
            drop(st);
            let wait = match delay {
                Delay::Fixed(d) => d,
                Delay::AvgFlush => self.avg_flush(),
            };
            if !wait.is_zero() {
                // Stopping cuts the wait short, never the sync: followers depend on it.
                stop.sleep(wait);
            }
            let covered = self.lock().registered;
            let (result, latency_ns) = sync();
            self.flush_sum_ns.fetch_add(latency_ns, Ordering::Relaxed);
            self.flush_count.fetch_add(1, Ordering::Relaxed);
            st = self.lock();
            if let Err(e) = &result {
                let from = st.durable + 1;
                st.failures.push((from, covered, Errno::of(e)));
            }
            st.durable = covered;
            st.leader = false;
            self.done.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn delay_accepts_microseconds_durations_and_avg_flush() {
        assert_eq!(parse_delay("0"), Ok(Delay::Fixed(Duration::ZERO)));
        assert_eq!(parse_delay("500"), Ok(Delay::Fixed(Duration::from_micros(500))));
        assert_eq!(parse_delay("2ms"), Ok(Delay::Fixed(Duration::from_millis(2))));
        assert_eq!(parse_delay("avg-flush"), Ok(Delay::AvgFlush));
        assert_eq!(parse_delay("soon"), Err(DELAY_EXPECTED.to_string()));
        assert_eq!(parse_delay(""), Err(DELAY_EXPECTED.to_string()));
    }

    /// The group-commit rule: a transaction is acknowledged only by a sync that started after
    /// its write completed. Writes bump `written`; each sync snapshots it when it starts;
    /// every acknowledged transaction must be at or below the snapshot of the sync that
    /// acknowledged it.
    #[test]
    fn group_commit_acknowledges_only_after_a_later_sync() {
        let group = Arc::new(GroupCommit::new(0));
        let written = Arc::new(AtomicU64::new(0));
        let synced_upto = Arc::new(AtomicU64::new(0));
        let syncs = Arc::new(AtomicU64::new(0));
        let stop = Stop::new();
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (group, written, synced_upto, syncs, stop) = (
                    group.clone(),
                    written.clone(),
                    synced_upto.clone(),
                    syncs.clone(),
                    stop.clone(),
                );
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let mine = written.fetch_add(1, Ordering::SeqCst) + 1;
                        group
                            .commit(Delay::Fixed(Duration::ZERO), &stop, || {
                                let seen = written.load(Ordering::SeqCst);
                                std::thread::sleep(Duration::from_micros(200));
                                synced_upto.fetch_max(seen, Ordering::SeqCst);
                                syncs.fetch_add(1, Ordering::SeqCst);
                                (Ok(()), 200_000)
                            })
                            .unwrap();
                        assert!(synced_upto.load(Ordering::SeqCst) >= mine);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let n = syncs.load(Ordering::SeqCst);
        assert!((1..=1600).contains(&n), "{n} syncs for 1600 commits");
    }

    #[test]
    fn a_failed_sync_fails_the_transactions_it_covered() {
        let group = GroupCommit::new(0);
        let stop = Stop::new();
        let r = group.commit(Delay::Fixed(Duration::ZERO), &stop, || {
            (Err(io::Error::from_raw_os_error(libc::EIO)), 1)
        });
        assert_eq!(Errno::of(&r.unwrap_err()), Errno(libc::EIO));
        let r = group.commit(Delay::Fixed(Duration::ZERO), &stop, || (Ok(()), 1));
        assert!(r.is_ok());
    }
}
