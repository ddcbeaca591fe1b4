//! A dead man's switch for the emulated device: if fsynclab is killed, abort its FUSE
//! connection.
//!
//! The emulated device is served by a thread of fsynclab itself. A SIGKILL that lands while
//! another thread waits on I/O that goes through that device (an fsync waiting for a journal
//! commit that the loop device writes to the FUSE image) leaves a process that can never
//! die: the serving thread is gone, the waiting thread sleeps uninterruptibly, and the
//! kernel aborts the FUSE connection only when the process releases /dev/fuse, which it
//! cannot do until that wait ends. The fault-injection sweep of tests/safety.rs found it.
//!
//! So, once the device is mounted, a dedicated thread forks a small helper process and then
//! waits. The helper asks for SIGTERM when that thread dies (PR_SET_PDEATHSIG: on thread
//! exit, which a SIGKILL causes at once, even while another thread is stuck) and answers it
//! with a forced unmount of the device (MNT_FORCE: FUSE aborts the connection, so pending
//! I/O fails and the process can exit). Disarmed at the end of a run, after the device is
//! unmounted.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;
use std::sync::mpsc;

use anyhow::{Context as _, Result};
use nix::mount::{umount2, MntFlags};
use nix::sys::prctl::set_pdeathsig;
use nix::sys::signal::{kill, sigprocmask, SigSet, SigmaskHow, Signal};
use nix::sys::wait::waitpid;
use nix::unistd::{fork, getpid, getppid, ForkResult, Pid};

/// An armed switch: the helper's pid and the thread whose death fires it.
pub struct Switch {
    helper: Pid,
    /// Dropping it ends the anchor thread.
    release: Option<mpsc::Sender<()>>,
    anchor: Option<std::thread::JoinHandle<()>>,
}

/// Arms a switch that force-unmounts `mount_point` if this process is killed.
pub fn arm(mount_point: &Path) -> Result<Switch> {
    let path = CString::new(mount_point.as_os_str().as_bytes()).context("mount point contains a NUL byte")?;
    let (pid_tx, pid_rx) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let anchor = std::thread::Builder::new()
        .name("fsynclab-deadman".into())
        .spawn(move || {
            let _ = pid_tx.send(fork_helper(&path));
            // Wait for the end of the run; a kill ends this thread, and fires the switch.
            let _ = released.recv();
        })
        .context("cannot start the emulated device's guard thread")?;
    let helper = pid_rx
        .recv()
        .context("the guard thread ended early")?
        .context("cannot fork the emulated device's guard")?;
    Ok(Switch {
        helper,
        release: Some(release),
        anchor: Some(anchor),
    })
}

/// Forks the helper; returns its pid. Called on the anchor thread, whose death the helper
/// watches.
fn fork_helper(path: &CString) -> std::io::Result<Pid> {
    let parent = getpid();
    // SAFETY: between fork and _exit the child makes only raw system calls ([`helper`]),
    // async-signal-safe in a child of a multi-threaded process, on memory prepared before
    // the fork.
    match unsafe { fork() }? {
        ForkResult::Parent { child } => Ok(child),
        ForkResult::Child => helper(path, parent),
    }
}

/// The helper, in the forked child: waits for SIGTERM (the anchor thread's death), then
/// force-unmounts `path` and exits. System calls only: close_range, sigprocmask, prctl,
/// getppid, sigwait, umount2, _exit.
fn helper(path: &CString, parent: Pid) -> ! {
    // Hold nothing of the parent's: not /dev/fuse (the kernel would keep the connection for
    // us), not its locks, not its pipes. close_range has no wrapper in nix.
    // SAFETY: closes descriptors only; nothing in this process uses them after.
    unsafe { libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) };
    let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::all()), None);
    let _ = set_pdeathsig(Signal::SIGTERM);
    // The whole process died before the prctl: fire now.
    if getppid() == parent {
        let mut term = SigSet::empty();
        term.add(Signal::SIGTERM);
        while term.wait() != Ok(Signal::SIGTERM) {}
    }
    let _ = umount2(path.as_c_str(), MntFlags::MNT_FORCE);
    // SAFETY: _exit ends the child at once, running nothing of the parent's (no atexit
    // handlers, no stdio flush); nix has no wrapper for it.
    unsafe { libc::_exit(0) }
}

impl Drop for Switch {
    /// Disarms: the helper is killed before the anchor thread ends, so it never fires.
    fn drop(&mut self) {
        // Our own child, which only we reap.
        let _ = kill(self.helper, Signal::SIGKILL);
        let _ = waitpid(self.helper, None);
        drop(self.release.take());
        if let Some(anchor) = self.anchor.take() {
            let _ = anchor.join();
        }
    }
}
