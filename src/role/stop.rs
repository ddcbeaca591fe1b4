//! One stop signal shared by the foreground and background: set when the prober finishes,
//! or by a signal. Every loop checks it between system calls, and every pause is an
//! interruptible sleep, so a run ends promptly and can clean up after itself.
//!
//! Every signal whose default action ends the process and that a user, a terminal or the
//! system may send stops the run the way Ctrl-C does ([`STOP_SIGNALS`]): SIGHUP from a
//! closed terminal or a dropped ssh session, SIGTERM, SIGQUIT, SIGUSR1/2, SIGALRM, the
//! resource limits' SIGXCPU and SIGXFSZ, the real-time signals... Left alone: a signal
//! whose action is no longer the default when fsynclab starts — ignored (`nohup` ignores
//! SIGHUP, a shell's background job SIGINT) or handled by someone else (a profiler's SIGPROF
//! timer) —, SIGPIPE (Rust ignores it: a closed pipe is an EPIPE error instead), the faults (SIGSEGV,
//! SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS: a handler that returns would run the faulting
//! instruction again; SIGABRT: abort() ends the process whatever a handler does), and
//! SIGKILL and SIGSTOP, which cannot be caught (`fsynclab cleanup` is for SIGKILL).
//!
//! A second SIGINT, SIGTERM or SIGQUIT while the first is being handled exits at once,
//! as users of long-running tools expect, saying what it leaves behind (the testbed keeps
//! that message current, [`set_last_words`]). Other signals only ask to stop, however
//! often they come: a terminal closed during teardown must not cut it short.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The signals that stop a run, besides the real-time ones (SIGRTMIN..=SIGRTMAX).
pub const STOP_SIGNALS: [i32; 14] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGVTALRM,
    libc::SIGPROF,
    libc::SIGIO,
    libc::SIGPWR,
    libc::SIGSTKFLT,
    libc::SIGXCPU,
    libc::SIGXFSZ,
];

/// The signals whose repetition means "now": exit at once.
const INSISTENT: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGQUIT];

/// What a second signal prints before it exits: a leaked, never freed buffer, so that a
/// handler reading it cannot race with its replacement (a few hundred bytes per change).
static LAST_WORDS: AtomicPtr<Vec<u8>> = AtomicPtr::new(std::ptr::null_mut());

/// Sets what a second signal prints before exiting at once (one line, ending in `\n`).
pub fn set_last_words(text: String) {
    let words = Box::into_raw(Box::new(text.into_bytes()));
    LAST_WORDS.store(words, Ordering::SeqCst);
}

/// Writes the last words and exits with `code`. Async-signal-safe: write(2) and _exit(2).
fn exit_at_once(code: i32) -> ! {
    const DEFAULT: &[u8] = b"fsynclab: second signal: exiting at once\n";
    let words = LAST_WORDS.load(Ordering::SeqCst);
    // SAFETY: a non-null pointer comes from Box::into_raw in `set_last_words` and is never
    // freed, so it points to a live Vec whose bytes are never changed.
    let bytes: &[u8] = if words.is_null() { DEFAULT } else { unsafe { &*words } };
    // SAFETY: write(2) reads `bytes`, which is valid for its length; the result does not
    // matter (there is nothing left to do if stderr is gone).
    unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
    signal_hook::low_level::exit(code)
}

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

/// Whether `signal` still has its default action (SIG_DFL), which for [`STOP_SIGNALS`] ends
/// the process; not when ignored (`nohup`, a background job) or handled by someone else.
fn has_default_action(signal: i32) -> bool {
    // SAFETY: sigaction with a null new action only reads the current one into `old`, a
    // zeroed sigaction of the right type.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_DFL
    }
}

/// The signal number every [`Stop::on_signals`] of the process shares, set by handlers
/// installed once (a second call must not take our own handlers for someone else's).
static SIGNALLED: Mutex<Option<Arc<AtomicUsize>>> = Mutex::new(None);

impl Stop {
    /// A stop that no signal sets (for tests and library use).
    pub(crate) fn new() -> Stop {
        Stop {
            signal: Arc::new(AtomicUsize::new(0)),
            local: Arc::new(AtomicBool::new(false)),
        }
    }

    /// A stop that every signal in [`STOP_SIGNALS`] and the real-time signals set, except
    /// those whose action is not the default at the first call. The first signal is the one
    /// [`Stop::signal`] reports; a second SIGINT, SIGTERM or SIGQUIT exits at once with 128 +
    /// its number.
    pub(crate) fn on_signals() -> io::Result<Stop> {
        let mut shared = SIGNALLED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(signal) = &*shared {
            return Ok(Stop {
                signal: signal.clone(),
                local: Arc::new(AtomicBool::new(false)),
            });
        }
        let stop = Stop::new();
        let realtime = libc::SIGRTMIN()..=libc::SIGRTMAX();
        for sig in STOP_SIGNALS.into_iter().chain(realtime) {
            if !has_default_action(sig) {
                continue;
            }
            let first = stop.signal.clone();
            let insistent = INSISTENT.contains(&sig);
            let action = move || {
                let was = first.compare_exchange(0, sig as usize, Ordering::SeqCst, Ordering::SeqCst);
                if was.is_err() && insistent {
                    exit_at_once(128 + sig);
                }
            };
            // SAFETY: the action only touches atomics, and on a second insistent signal
            // calls write(2) and _exit(2): all async-signal-safe.
            unsafe { signal_hook::low_level::register(sig, action) }?;
        }
        *shared = Some(stop.signal.clone());
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
