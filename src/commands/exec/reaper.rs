//! The command's orphans reaped while it runs. As the command's subreaper fsynclab inherits
//! what the command started and left (a shell's `cmd &`, a daemon's double fork); each that
//! exits is a zombie of fsynclab's until reaped, and a command that leaves thousands (a
//! script starting short background jobs for an hour) would fill the process table. A
//! thread reaps them as they come, a few times a second: one waitid(2) that neither blocks
//! nor reaps when there is none. Never the command itself (its status is `exec`'s to read)
//! nor the processes fsynclab had before it (`ours`, the emulated disk's, which their
//! owners wait for).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};

use crate::child::reap_if_exited;
use crate::kernel::process;

/// How often the thread looks for orphans that exited.
const EVERY: Duration = Duration::from_millis(250);

/// The reaping thread, stopped (and joined) by [`Reaper::stop`] or when dropped.
pub(super) struct Reaper {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Reaper {
    /// Starts reaping the exited children of this process but `command` and `ours`.
    pub(super) fn start(command: u32, ours: Vec<u32>) -> std::io::Result<Reaper> {
        let done = Arc::new(AtomicBool::new(false));
        let thread = {
            let done = done.clone();
            std::thread::Builder::new()
                .name("fsynclab-reap".into())
                .spawn(move || {
                    while !done.load(Ordering::SeqCst) {
                        reap_orphans(command, &ours);
                        std::thread::park_timeout(EVERY);
                    }
                })?
        };
        Ok(Reaper {
            done,
            thread: Some(thread),
        })
    }

    /// Stops the thread and waits for it (at most one reaping pass).
    pub(super) fn stop(mut self) {
        self.end();
    }

    fn end(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        self.end();
    }
}

/// Reaps every exited child but `command` and `ours`. waitid(P_ALL, WNOHANG | WNOWAIT)
/// names one exited child without reaping it; an orphan is reaped and the next asked for.
/// Where it names one not to reap (the command has just ended, or one of `ours`), the others
/// hide behind it: those are found by the children's states in /proc instead.
fn reap_orphans(command: u32, ours: &[u32]) {
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    let to_reap = |pid: u32| pid != command && !ours.contains(&pid);
    loop {
        match waitid(Id::All, flags) {
            Ok(WaitStatus::StillAlive) => return,
            Ok(status) => match status.pid().map(|p| p.as_raw() as u32) {
                Some(pid) if to_reap(pid) => {
                    reap_if_exited(pid);
                }
                _ => break,
            },
            Err(nix::errno::Errno::EINTR) => {}
            // ECHILD: no child at all; EINVAL: one ended by a real-time signal, unnamed.
            Err(nix::errno::Errno::EINVAL) => break,
            Err(_) => return,
        }
    }
    let mut but = ours.to_vec();
    but.push(command);
    reap_zombies(&but);
}

/// Reaps the children of this process that have exited (zombies, by their states in /proc)
/// but those in `but`.
pub(super) fn reap_zombies(but: &[u32]) {
    let me = std::process::id();
    for pid in process::pids() {
        if !but.contains(&pid) && process::stat(pid).is_some_and(|s| s.state == 'Z' && s.ppid == me) {
            reap_if_exited(pid);
        }
    }
}
