//! Issue 8, items 2 and 5: every terminating signal stops a run and undoes what it made, a
//! signal ignored at the start stays ignored (nohup), a closed terminal undoes a scratch run,
//! and a second Ctrl-C says what it leaves for `cleanup`.

use std::os::unix::process::CommandExt as _;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::common::{
    self, backing as scratch_backing, fsynclab, leftovers, send, stderr_of, traces_under, wait_at_most, StderrLines,
};
use crate::setup::{
    dir_run, scratch_run, serial, start_scratch_run, state_dir, state_file, sysctl, wait_until_measuring_on_scratch,
    SysctlGuard,
};

/// Issue 8: every terminating signal stops a dir run and cleans up.
pub fn every_terminating_signal_stops_a_dir_run_and_cleans_up() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let signals = [
        libc::SIGHUP,
        libc::SIGQUIT,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
        libc::SIGXCPU,
        libc::SIGXFSZ,
        libc::SIGPROF,
        libc::SIGRTMIN(),
        libc::SIGRTMAX(),
    ];
    for signal in signals {
        let mut run = dir_run(dir.path(), "60s", &[])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Once it measures: its handlers are in place (a signal before would end it by the
        // signal's default action, which is not what this test is about).
        common::wait_until_measuring(dir.path(), common::PROBE_FILE, &mut run);
        send(&run, signal);
        let status = wait_at_most(&mut run, Duration::from_secs(10));
        let err = stderr_of(&mut run);
        assert_eq!(status.code(), Some(128 + signal), "signal {signal}: {status}, {err}");
        assert!(err.contains(&format!("interrupted by signal {signal}")), "{err}");
        assert!(
            leftovers(dir.path()).is_empty(),
            "signal {signal} left {:?}",
            leftovers(dir.path())
        );
    }
}

/// Issue 8: SIGHUP and SIGUSR1 stop a scratch run and undo everything.
pub fn sighup_and_sigusr1_stop_a_scratch_run_and_undo_everything() {
    let _serial = serial();
    let _cleanup = common::CleanupOnDrop(state_dir());
    let _guard = SysctlGuard::new("dirty_ratio");
    let before = sysctl("dirty_ratio");
    let backing = scratch_backing();
    for signal in [libc::SIGHUP, libc::SIGUSR1, libc::SIGQUIT] {
        let (mut run, state) = start_scratch_run(backing.path());
        send(&run, signal);
        let status = wait_at_most(&mut run, Duration::from_secs(60));
        let err = stderr_of(&mut run);
        assert_eq!(status.code(), Some(128 + signal), "signal {signal}: {err}");
        assert!(!state.exists(), "signal {signal}: state file left");
        assert_eq!(traces_under(backing.path()), Vec::<String>::new(), "signal {signal}");
        assert_eq!(sysctl("dirty_ratio"), before, "signal {signal}");
    }
}

/// Issue 8: a signal ignored at start stays ignored.
pub fn a_signal_ignored_at_start_stays_ignored() {
    // `nohup fsynclab ...` must survive the terminal closing.
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = dir_run(dir.path(), "2s", &[]);
    // SAFETY: signal(2) is async-signal-safe; it runs in the child before exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut run = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // Once it measures, past where it would have installed a handler.
    common::wait_until_measuring(dir.path(), common::PROBE_FILE, &mut run);
    send(&run, libc::SIGHUP);
    let status = wait_at_most(&mut run, Duration::from_secs(30));
    let mut out = String::new();
    std::io::Read::read_to_string(&mut run.stdout.take().unwrap(), &mut out).unwrap();
    assert!(status.success(), "{status}: {}", stderr_of(&mut run));
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["interrupted"], false);
}

/// A pseudo-terminal pair: the master's descriptor and the slave's path.
fn open_pty() -> (std::os::fd::OwnedFd, std::ffi::CString) {
    use std::os::fd::FromRawFd as _;
    // SAFETY: posix_openpt returns a new descriptor or -1; fcntl, grantpt, unlockpt and
    // ptsname_r act on it; ptsname_r writes at most `buf.len()` bytes into `buf`.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(master >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
        // Not inherited by fsynclab: the hangup comes when the test closes the last copy.
        assert_eq!(libc::fcntl(master, libc::F_SETFD, libc::FD_CLOEXEC), 0);
        assert_eq!(libc::grantpt(master), 0);
        assert_eq!(libc::unlockpt(master), 0);
        let mut buf = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(master, buf.as_mut_ptr(), buf.len()), 0);
        let name = std::ffi::CStr::from_ptr(buf.as_ptr()).to_owned();
        (std::os::fd::OwnedFd::from_raw_fd(master), name)
    }
}

/// Issue 8: a closed terminal still undoes a scratch run.
pub fn a_closed_terminal_still_undoes_a_scratch_run() {
    let _serial = serial();
    let _cleanup = common::CleanupOnDrop(state_dir());
    let _guard = SysctlGuard::new("dirty_ratio");
    let before = sysctl("dirty_ratio");
    let backing = scratch_backing();
    let (master, slave) = open_pty();
    let mut cmd = scratch_run(backing.path());
    // SAFETY: between fork and exec the closure calls only async-signal-safe functions
    // (setsid, open, ioctl, dup2, close) on the path prepared before the fork.
    unsafe {
        cmd.pre_exec(move || {
            // Its own session, with the terminal as controlling terminal: closing the
            // master then hangs it up, and the kernel sends SIGHUP, as when an ssh drops.
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let fd = libc::open(slave.as_ptr(), libc::O_RDWR);
            if fd < 0 || libc::ioctl(fd, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            for target in 0..3 {
                libc::dup2(fd, target);
            }
            libc::close(fd);
            Ok(())
        });
    }
    let mut run = cmd.spawn().expect("start fsynclab on a terminal");
    let state = state_file(run.id());
    wait_until_measuring_on_scratch(backing.path(), &mut run);
    // Hang up: the master's last descriptor goes, as when a terminal window closes.
    drop(master);
    let status = wait_at_most(&mut run, Duration::from_secs(60));
    // 129: stopped by SIGHUP; no panic (101) writing to the hung-up terminal.
    assert_eq!(status.code(), Some(129), "a hung-up run exits 128 + SIGHUP: {status}");
    assert!(!state.exists(), "state file left after a hangup");
    assert_eq!(traces_under(backing.path()), Vec::<String>::new(), "left behind");
    assert_eq!(sysctl("dirty_ratio"), before);
}

/// Issue 8: a second Ctrl-C says what it leaves and cleanup undoes it.
pub fn a_second_ctrl_c_says_what_it_leaves_and_cleanup_undoes_it() {
    let _serial = serial();
    let _cleanup = common::CleanupOnDrop(state_dir());
    let _guard = SysctlGuard::new("dirty_ratio");
    let before = sysctl("dirty_ratio");
    let backing = scratch_backing();
    // The second Ctrl-C comes while the run undoes what it made, for certain: the run stops
    // before its first undo (the test pause point of src/testbed/pause.rs), says so, and
    // the test sends the second one then. (Sent 10 ms after the first, it once came after
    // the run had undone everything and ended.)
    let mut run = scratch_run(backing.path())
        .env("FSYNCLAB_TEST_PAUSE", "undo:sysctl")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start fsynclab");
    let state = state_file(run.id());
    let mut said = StderrLines::of(&mut run);
    wait_until_measuring_on_scratch(backing.path(), &mut run);
    send(&run, libc::SIGINT);
    said.wait_for("fsynclab: test pause at undo:sysctl", &mut run, Duration::from_secs(60));
    send(&run, libc::SIGINT);
    let status = wait_at_most(&mut run, Duration::from_secs(30));
    let err = said.all();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("second signal: exiting at once"), "{err}");
    for what in [
        "mount ",
        "loop device /dev/loop",
        "emulated device (FUSE)",
        "vm.dirty_ratio",
        "directory ",
    ] {
        assert!(err.contains(what), "the message names the {what}: {err}");
    }
    assert!(err.contains("`fsynclab cleanup` undoes them"), "{err}");
    assert!(state.exists());
    let out = fsynclab().arg("cleanup").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!state.exists());
    assert_eq!(traces_under(backing.path()), Vec::<String>::new(), "left behind");
    assert_eq!(sysctl("dirty_ratio"), before);
}
