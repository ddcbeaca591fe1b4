//! One stop shared by the foreground and background of a run: set when the prober
//! finishes, or by a signal ([`crate::signals::watch`] makes the stop every signal sets).
//! Every loop checks it between system calls, and every pause is an interruptible sleep,
//! so a run ends promptly and can clean up after itself.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub(crate) struct Stop {
    /// The number of the signal that asked us to stop, or 0.
    signal: Arc<AtomicUsize>,
    /// Set when the run (or this part of it) is over.
    local: Arc<AtomicBool>,
}

impl Default for Stop {
    fn default() -> Self {
        Self::new()
    }
}

impl Stop {
    /// A stop that no signal sets (for tests and library use).
    pub(crate) fn new() -> Stop {
        Stop::on(Arc::new(AtomicUsize::new(0)))
    }

    /// A stop that is set when `signal` (a signal number, 0 for none) is.
    pub(crate) fn on(signal: Arc<AtomicUsize>) -> Stop {
        Stop {
            signal,
            local: Arc::new(AtomicBool::new(false)),
        }
    }

    /// A stop for one part of the run: it is set by its own `set`, or by a signal.
    pub(crate) fn child(&self) -> Stop {
        Stop {
            signal: self.signal.clone(),
            local: Arc::new(AtomicBool::new(false)),
        }
    }

    pub(crate) fn set(&self) {
        self.local.store(true, Ordering::SeqCst);
    }

    #[inline]
    pub(crate) fn is_set(&self) -> bool {
        self.local.load(Ordering::Relaxed) || self.signal.load(Ordering::Relaxed) != 0
    }

    /// The signal that interrupted the run, if one did.
    pub(crate) fn signal(&self) -> Option<i32> {
        match self.signal.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s as i32),
        }
    }

    /// Sleeps `d` unless stopped first; returns false when stopped.
    pub(crate) fn sleep(&self, d: Duration) -> bool {
        let end = Instant::now() + d;
        loop {
            if self.is_set() {
                return false;
            }
            let now = Instant::now();
            if now >= end {
                return true;
            }
            std::thread::sleep((end - now).min(Duration::from_millis(20)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_sees_parent_signal_but_not_siblings() {
        let root = Stop::new();
        let a = root.child();
        let b = root.child();
        a.set();
        assert!(a.is_set());
        assert!(!b.is_set());
        root.signal.store(2, Ordering::SeqCst);
        assert!(b.is_set());
        assert_eq!(b.signal(), Some(2));
    }

    #[test]
    fn sleep_returns_early_when_stopped() {
        let s = Stop::new();
        let t = s.clone();
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            t.set();
        });
        let start = Instant::now();
        assert!(!s.sleep(Duration::from_secs(10)));
        assert!(start.elapsed() < Duration::from_secs(2));
        h.join().unwrap();
    }
}
