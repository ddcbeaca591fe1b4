//! The signals that stop a run, caught once for the whole process: [`watch`] returns the
//! [`Stop`] they set.
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
//! that message current, [`set_last_words`]) and killing the programs it was waiting for
//! ([`end_with_us`]). Other signals only ask to stop, however often they
//! come: a terminal closed during teardown must not cut it short.
//!
//! A signal sent to the whole process group counts once: GNU `timeout`, the leader of the
//! process group it starts fsynclab in, sends its signal to fsynclab and then to that group,
//! so the same signal twice from the leader of fsynclab's group within
//! [`SAME_SIGNAL_WINDOW`] is one request, not a second, insistent one. The same signal sent
//! twice by anyone else (a user's `kill`, a test) is two.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::time::{clock_gettime, ClockId};
use nix::unistd::{getpgrp, Pid};

use crate::stop::Stop;

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

/// Within this time, the same signal from the same process again is the same request (a
/// signal sent to fsynclab and then to its process group).
pub const SAME_SIGNAL_WINDOW: Duration = Duration::from_secs(1);

/// The last signal another process sent that counted: its number, its sender, and when
/// (CLOCK_MONOTONIC, in ns), for [`repeats_the_last`].
static LAST_SENT_SIGNAL: AtomicI32 = AtomicI32::new(0);
static LAST_SENDER: AtomicI32 = AtomicI32::new(0);
static LAST_SENT_AT_NS: AtomicU64 = AtomicU64::new(0);

/// CLOCK_MONOTONIC in ns. Async-signal-safe (clock_gettime).
fn monotonic_ns() -> u64 {
    clock_gettime(ClockId::CLOCK_MONOTONIC).map_or(0, |ts| ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64)
}

/// Whether `sig`, as `info` describes it, is the last counted signal again: the same number
/// from the leader of fsynclab's process group within [`SAME_SIGNAL_WINDOW`] (`timeout`
/// signalling fsynclab, then its group). Otherwise it becomes the last counted one.
/// Async-signal-safe (getpgrp, clock_gettime).
fn repeats_the_last(sig: i32, info: &libc::siginfo_t) -> bool {
    if !matches!(info.si_code, libc::SI_USER | libc::SI_QUEUE) {
        return false;
    }
    // SAFETY: for SI_USER and SI_QUEUE the kernel sets the sender's pid.
    let sender = unsafe { info.si_pid() };
    if sender != getpgrp().as_raw() {
        return false;
    }
    let now = monotonic_ns();
    let same = LAST_SENT_SIGNAL.load(Ordering::SeqCst) == sig
        && LAST_SENDER.load(Ordering::SeqCst) == sender
        && now.saturating_sub(LAST_SENT_AT_NS.load(Ordering::SeqCst)) < SAME_SIGNAL_WINDOW.as_nanos() as u64;
    if !same {
        LAST_SENT_SIGNAL.store(sig, Ordering::SeqCst);
        LAST_SENDER.store(sender, Ordering::SeqCst);
        LAST_SENT_AT_NS.store(now, Ordering::SeqCst);
    }
    same
}

/// What a second signal prints before it exits: a leaked, never freed buffer, so that a
/// handler reading it cannot race with its replacement (a few hundred bytes per change).
static LAST_WORDS: AtomicPtr<Vec<u8>> = AtomicPtr::new(std::ptr::null_mut());

/// Sets what a second signal prints before exiting at once (one line, ending in `\n`).
pub fn set_last_words(text: String) {
    let words = Box::into_raw(Box::new(text.into_bytes()));
    LAST_WORDS.store(words, Ordering::SeqCst);
}

/// Kills the programs being waited for, writes the last words and exits with `code`.
/// Async-signal-safe: kill(2), write(2) and _exit(2).
fn exit_at_once(code: i32) -> ! {
    kill_groups();
    const DEFAULT: &[u8] = b"fsynclab: second signal: exiting at once\n";
    let words = LAST_WORDS.load(Ordering::SeqCst);
    // SAFETY: a non-null pointer comes from Box::into_raw in `set_last_words` and is never
    // freed, so it points to a live Vec whose bytes are never changed.
    let bytes: &[u8] = if words.is_null() { DEFAULT } else { unsafe { &*words } };
    say(bytes);
    signal_hook::low_level::exit(code)
}

/// The process groups of the programs fsynclab waits for ([`crate::child`]), which a second
/// Ctrl-C kills before exiting at once: a fixed table of atomics, which a handler can read.
static GROUPS: [AtomicI32; 16] = [const { AtomicI32::new(0) }; 16];

/// Process group `group` is killed (SIGKILL) if fsynclab exits at once, until the returned
/// guard is dropped. More than the table holds at once are not: they still die with
/// fsynclab's children (PR_SET_PDEATHSIG), only not their own.
pub(crate) fn end_with_us(group: i32) -> EndsWithUs {
    let slot = GROUPS
        .iter()
        .position(|s| s.compare_exchange(0, group, Ordering::SeqCst, Ordering::SeqCst).is_ok());
    EndsWithUs { slot }
}

/// See [`end_with_us`].
pub(crate) struct EndsWithUs {
    slot: Option<usize>,
}

impl Drop for EndsWithUs {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            GROUPS[slot].store(0, Ordering::SeqCst);
        }
    }
}

/// SIGKILL to every group of [`GROUPS`]. Async-signal-safe (atomics and kill(2)).
fn kill_groups() {
    for slot in &GROUPS {
        let group = slot.load(Ordering::SeqCst);
        if group > 0 {
            let _ = kill(Pid::from_raw(-group), Signal::SIGKILL);
        }
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

/// The signal number every [`watch`] of the process shares, set by handlers
/// installed once (a second call must not take our own handlers for someone else's).
static SIGNALLED: Mutex<Option<Arc<AtomicUsize>>> = Mutex::new(None);

/// The first signal received since [`watch`] was first called, if any.
pub(crate) fn received() -> Option<i32> {
    let shared = SIGNALLED.lock().unwrap_or_else(|p| p.into_inner());
    match shared.as_ref().map(|s| s.load(Ordering::SeqCst)) {
        None | Some(0) => None,
        Some(sig) => Some(sig as i32),
    }
}

/// The pid of the command `fsynclab exec` waits for, or 0: while there is one, the signals
/// are the command's business first ([`for_the_child`]).
static CHILD: AtomicI32 = AtomicI32::new(0);

/// Set from just before the command is started until it is reaped ([`Forwarding`]).
static ARMED: AtomicBool = AtomicBool::new(false);

/// A signal that came while the command was being started (armed, no pid yet): its number,
/// with [`SENT`] added when another process sent it; 0 for none. Whoever takes it (the
/// handler once the pid is known, or [`Forwarding::started`]) hands it to the command.
static PENDING: AtomicI32 = AtomicI32::new(0);
const SENT: i32 = 1 << 16;

/// SIGINT, SIGTERM, SIGQUIT and SIGHUP received while a command ran.
static RECEIVED_FOR_CHILD: AtomicUsize = AtomicUsize::new(0);

/// Returns the stop that every signal in [`STOP_SIGNALS`] and the real-time signals set,
/// except those whose action is not the default at the first call. The first signal is the
/// one [`Stop::signal`] reports; a second SIGINT, SIGTERM or SIGQUIT exits at once with 128
/// + its number. Installed once; later calls share the handlers.
pub(crate) fn watch() -> io::Result<Stop> {
    let mut shared = SIGNALLED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(signal) = &*shared {
        return Ok(Stop::on(signal.clone()));
    }
    let first = Arc::new(AtomicUsize::new(0));
    let realtime = libc::SIGRTMIN()..=libc::SIGRTMAX();
    for sig in STOP_SIGNALS.into_iter().chain(realtime) {
        if !has_default_action(sig) {
            continue;
        }
        let first = first.clone();
        let action = move |info: &libc::siginfo_t| {
            if repeats_the_last(sig, info) {
                return;
            }
            let was = first.compare_exchange(0, sig as usize, Ordering::SeqCst, Ordering::SeqCst);
            if for_the_child(sig, info) {
                return;
            }
            if was.is_err() && INSISTENT.contains(&sig) {
                exit_at_once(128 + sig);
            }
        };
        // SAFETY: the action only touches atomics, and calls kill(2), write(2) and
        // _exit(2): all async-signal-safe.
        unsafe { signal_hook_registry::register_sigaction(sig, action) }?;
    }
    *shared = Some(first.clone());
    Ok(Stop::on(first))
}

/// While `fsynclab exec` starts or waits for its command, hands it `sig` as
/// [`hand_to_child`] says, and returns true: the command decides when the run ends.
/// Async-signal-safe.
fn for_the_child(sig: i32, info: &libc::siginfo_t) -> bool {
    if !ARMED.load(Ordering::SeqCst) {
        return false;
    }
    let sent = matches!(info.si_code, libc::SI_USER | libc::SI_QUEUE | libc::SI_TKILL);
    let mine = sig | if sent { SENT } else { 0 };
    // Left for the command if its pid is not known yet; taken back here if it is, unless
    // `Forwarding::started` took it first.
    PENDING.store(mine, Ordering::SeqCst);
    let child = CHILD.load(Ordering::SeqCst);
    if child > 0
        && PENDING
            .compare_exchange(mine, 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    {
        hand_to_child(child, sig, sent);
    }
    true
}

/// Hands `sig` to the command `child`. A signal another process sent (`kill`, `timeout`)
/// is forwarded; one the terminal generated already reached the command, which shares our
/// process group, so it is not sent twice (the rule sudo follows). The first SIGINT,
/// SIGTERM, SIGQUIT or SIGHUP says that fsynclab waits for the command; the second kills it
/// (SIGKILL); a third is ignored (the command is being killed). Other signals are only
/// forwarded. Async-signal-safe.
fn hand_to_child(child: i32, sig: i32, sent: bool) {
    let counted = INSISTENT.contains(&sig) || sig == libc::SIGHUP;
    let n = if counted {
        RECEIVED_FOR_CHILD.fetch_add(1, Ordering::SeqCst) + 1
    } else {
        0
    };
    match n {
        0 | 1 => {
            if sent {
                // SAFETY: kill has no memory preconditions; `child` is our child, not yet
                // reaped (`Forwarding` is dropped before it is). libc's, since nix's Signal
                // has no real-time signals, which are forwarded too.
                unsafe { libc::kill(child, sig) };
            }
            if n == 1 {
                say(b"fsynclab: waiting for the command to end; a second Ctrl-C kills it\n");
            }
        }
        2 => {
            say(b"fsynclab: second signal: killing the command\n");
            // As above: our child, not yet reaped.
            let _ = kill(Pid::from_raw(child), Signal::SIGKILL);
        }
        _ => {}
    }
}

/// Writes `line` on stderr from a signal handler: write(2) on descriptor 2, taking no lock
/// (`Stderr`'s descriptor, not its buffer). A lost line changes nothing.
fn say(line: &[u8]) {
    let _ = nix::unistd::write(std::io::stderr(), line);
}

/// From now until the returned guard is dropped, signals are for the command being started
/// ([`Forwarding::started`] gives its pid): drop it before reaping the command, so that its
/// pid is never signalled once it may be reused.
pub(crate) fn forward_to_command() -> Forwarding {
    RECEIVED_FOR_CHILD.store(0, Ordering::SeqCst);
    PENDING.store(0, Ordering::SeqCst);
    ARMED.store(true, Ordering::SeqCst);
    Forwarding(())
}

/// See [`forward_to_command`].
pub(crate) struct Forwarding(());

impl Forwarding {
    /// The command is running as `pid`: a signal that came while it was being started is
    /// handed to it now.
    pub(crate) fn started(&self, pid: u32) {
        CHILD.store(pid as i32, Ordering::SeqCst);
        let pending = PENDING.swap(0, Ordering::SeqCst);
        if pending != 0 {
            hand_to_child(pid as i32, pending & !SENT, pending & SENT != 0);
        }
    }
}

impl Drop for Forwarding {
    fn drop(&mut self) {
        CHILD.store(0, Ordering::SeqCst);
        ARMED.store(false, Ordering::SeqCst);
    }
}
