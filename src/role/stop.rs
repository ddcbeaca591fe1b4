//! One stop signal shared by the foreground and background: set when the prober finishes,
//! or by SIGINT/SIGTERM. Every loop checks it between system calls, and every pause is
//! an interruptible sleep, so a run ends promptly and can clean up after itself.

use std::io;
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
        Stop {
            signal: Arc::new(AtomicUsize::new(0)),
            local: Arc::new(AtomicBool::new(false)),
        }
    }

    /// A stop that SIGINT and SIGTERM set. A second Ctrl-C while the first is being handled
    /// exits at once (status 130), as users of long-running tools expect.
    pub(crate) fn on_signals() -> io::Result<Stop> {
        let stop = Stop::new();
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let armed = Arc::new(AtomicBool::new(false));
            signal_hook::flag::register_conditional_shutdown(sig, 130, armed.clone())?;
            signal_hook::flag::register(sig, armed)?;
            signal_hook::flag::register_usize(sig, stop.signal.clone(), sig as usize)?;
        }
        Ok(stop)
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
