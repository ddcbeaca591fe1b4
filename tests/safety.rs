//! Issue 8: every way out leaves the machine as it was. Overlapping sysctl runs, every
//! terminating signal, a busy mount at the end, a second Ctrl-C, killed `--dir` runs, state
//! files that name what is not fsynclab's, and a sweep that SIGKILLs a scratch run at every
//! step of its life and checks that `fsynclab cleanup` restores the machine exactly.
//!
//! The tests of this file run one at a time, each with a state directory of its own
//! (`FSYNCLAB_STATE_DIR`): one's `cleanup` would otherwise undo what another is looking at,
//! or meet a user's leftovers.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::Need::{Fuse, Root, Tool};
use common::{
    backing as scratch_backing, bin, fsynclab, leftovers, send, stderr_of, traces_under, wait_at_most,
    wait_for_file_containing, ScratchRun, StderrLines,
};
use serde_json::Value;

common::tests! {
    a_second_run_setting_sysctls_is_refused_while_one_is_live: [Root],
    a_killed_runs_sysctls_are_cleaned_up_before_another_run_sets_them: [Root],
    a_result_says_when_a_sysctl_changed_under_it: [Root],
    every_terminating_signal_stops_a_dir_run_and_cleans_up,
    sighup_and_sigusr1_stop_a_scratch_run_and_undo_everything: [Root, Fuse],
    a_signal_ignored_at_start_stays_ignored,
    a_closed_terminal_still_undoes_a_scratch_run: [Root, Fuse],
    a_busy_mount_at_the_end_fails_the_run_and_cleanup_keeps_its_record: [Root, Fuse],
    a_second_ctrl_c_says_what_it_leaves_and_cleanup_undoes_it: [Root, Fuse],
    cleanup_removes_the_work_directory_of_a_killed_dir_run,
    cleanup_removes_nothing_without_fsynclabs_shape,
    cleanup_undoes_a_killed_scratch_run_whose_state_file_is_gone: [Root, Tool("mkfs.ext2")],
    a_sigkilled_run_on_an_emulated_disk_dies_at_once: [Root, Fuse],
    sigkill_at_every_step_then_cleanup_restores_the_machine: [Root, Fuse, Tool("mkfs.ext4")],
    sigkill_during_a_fault_run_then_cleanup_restores_the_machine: [Root, Fuse, Tool("mkfs.ext4"), Tool("mkfs.xfs")],
}

/// The running test's turn and its state directory, named to every fsynclab it starts
/// (the variable is set in this process while the guard lives: the tests run one at a time),
/// with the results store off.
struct Serial {
    _state: common::PrivateState,
    // Dropped last: the next test's turn begins once this one's state directory is gone.
    _turn: std::sync::MutexGuard<'static, ()>,
}

impl Drop for Serial {
    fn drop(&mut self) {
        std::env::remove_var(common::STATE_DIR_ENV);
    }
}

fn serial() -> Serial {
    let turn = common::one_at_a_time();
    let state = common::PrivateState::new();
    std::env::set_var(common::STATE_DIR_ENV, state.path());
    // As common::fsynclab(): never the user's results store.
    std::env::set_var("FSYNCLAB_STORE", "off");
    Serial {
        _state: state,
        _turn: turn,
    }
}

/// The running test's state directory.
fn state_dir() -> PathBuf {
    PathBuf::from(std::env::var_os(common::STATE_DIR_ENV).expect("serial() sets the state directory"))
}

/// The state file of the run with `pid`.
fn state_file(pid: u32) -> PathBuf {
    state_dir().join(format!("{pid}.json"))
}

/// Puts a sysctl back when dropped.
struct SysctlGuard(&'static str, String);

impl SysctlGuard {
    fn new(name: &'static str) -> SysctlGuard {
        SysctlGuard(name, sysctl(name))
    }
}

impl Drop for SysctlGuard {
    fn drop(&mut self) {
        let _ = std::fs::write(format!("/proc/sys/vm/{}", self.0), &self.1);
    }
}

fn sysctl(name: &str) -> String {
    std::fs::read_to_string(format!("/proc/sys/vm/{name}"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// A long scratch run on an emulated disk with a sysctl set; returns once it is measuring.
fn start_scratch_run(backing: &Path) -> (Child, PathBuf) {
    let mut child = scratch_run(backing)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start fsynclab");
    let state = state_file(child.id());
    wait_until_measuring_on_scratch(backing, &mut child);
    (child, state)
}

/// Waits until the scratch run `child` on `backing` is measuring: prepared, and probing in
/// its scratch filesystem.
fn wait_until_measuring_on_scratch(backing: &Path, child: &mut Child) {
    let scratch = backing.join(format!("fsynclab-scratch-{}-", child.id()));
    let deadline = Instant::now() + Duration::from_secs(60);
    let mnt = loop {
        let found = std::fs::read_dir(backing)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().starts_with(&*scratch.to_string_lossy()));
        if let Some(dir) = found {
            break dir.join("mnt");
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("fsynclab ended ({status}) before it made its scratch directory");
        }
        assert!(
            Instant::now() < deadline,
            "no scratch directory in {}",
            backing.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    common::wait_until_measuring(&mnt, common::PROBE_FILE, child);
}

/// A long scratch run on an emulated disk with a sysctl set.
fn scratch_run(backing: &Path) -> Command {
    let mut cmd = ScratchRun::run("overwrite-fsync")
        .quiet()
        .set("duration", "60s")
        .set("file_size", "32M")
        .fs("ext4")
        .size("256M")
        .device("hdd-5400")
        .args(["--dirty-ratio", "13"])
        .backing(backing)
        .process();
    common::with_default_signals(&mut cmd);
    cmd
}

// ---- item 1: overlapping --dirty-ratio runs ----

/// `fsynclab run overwrite-fsync --dir DIR` for about `duration`, with `extra` arguments.
fn dir_run(dir: &Path, duration: &str, extra: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    common::with_default_signals(&mut cmd);
    cmd.args(["run", "overwrite-fsync", "-q", "-f", "json", "--dir"])
        .arg(dir)
        .args(["--set", &format!("duration={duration}"), "--set", "sleep=100ms"])
        .args(["--set", "file_size=16M"])
        .args(extra);
    cmd
}

/// Issue 8: a second run setting sysctls is refused while one is live.
fn a_second_run_setting_sysctls_is_refused_while_one_is_live() {
    let _serial = serial();
    let _guard = SysctlGuard::new("dirty_ratio");
    let before = sysctl("dirty_ratio");
    let dir = tempfile::tempdir().unwrap();
    // A is live until the test stops it, after B's attempt: the order is certain.
    let mut a = dir_run(dir.path(), "60s", &["--dirty-ratio", "5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file_containing(&state_file(a.id()), "\"sysctl\"", &mut a);
    let b = dir_run(dir.path(), "3s", &["--dirty-ratio", "7"]).output().unwrap();
    let b_err = String::from_utf8_lossy(&b.stderr);
    assert_eq!(b.status.code(), Some(2), "the second run must be refused: {b_err}");
    assert_eq!(b_err.trim_end().lines().count(), 1, "{b_err}");
    assert!(
        b_err.contains(&format!("fsynclab pid {}", a.id())) && b_err.contains("vm.dirty_ratio=5"),
        "the refusal names the run holding the sysctls: {b_err}"
    );
    assert_eq!(sysctl("dirty_ratio"), "5", "the refused run changed nothing");
    send(&a, libc::SIGINT);
    let a_out = a.wait_with_output().unwrap();
    assert_eq!(
        a_out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&a_out.stderr)
    );
    let r: Value = serde_json::from_slice(&a_out.stdout).unwrap();
    assert_eq!(r["environment"]["sysctls_set"]["dirty_ratio"], 5);
    let findings = r["findings"].to_string();
    assert!(
        !findings.contains("sysctls:"),
        "A ran under its own value throughout: {findings}"
    );
    assert_eq!(sysctl("dirty_ratio"), before, "restored by the one run that set it");
}

/// Issue 8: a killed run's sysctls are cleaned up before another run sets them.
fn a_killed_runs_sysctls_are_cleaned_up_before_another_run_sets_them() {
    let _serial = serial();
    let _guard = SysctlGuard::new("dirty_ratio");
    let _cleanup = common::CleanupOnDrop(state_dir());
    let before = sysctl("dirty_ratio");
    let dir = tempfile::tempdir().unwrap();
    let mut a = dir_run(dir.path(), "60s", &["--dirty-ratio", "5"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_file_containing(&state_file(a.id()), "\"sysctl\"", &mut a);
    a.kill().unwrap();
    a.wait().unwrap();
    let b = dir_run(dir.path(), "1s", &["--dirty-ratio", "7"]).output().unwrap();
    let b_err = String::from_utf8_lossy(&b.stderr);
    assert_eq!(b.status.code(), Some(2), "{b_err}");
    assert!(
        b_err.contains(&format!("pid {}", a.id())) && b_err.contains("run `fsynclab cleanup` first"),
        "{b_err}"
    );
    let cleanup = fsynclab().arg("cleanup").output().unwrap();
    assert!(cleanup.status.success(), "{}", String::from_utf8_lossy(&cleanup.stderr));
    assert_eq!(sysctl("dirty_ratio"), before);
    assert!(leftovers(dir.path()).is_empty(), "{:?}", leftovers(dir.path()));
    let b = dir_run(dir.path(), "1s", &["--dirty-ratio", "7"]).output().unwrap();
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    assert_eq!(sysctl("dirty_ratio"), before);
}

/// Issue 8: a result says when a sysctl changed under it.
fn a_result_says_when_a_sysctl_changed_under_it() {
    let _serial = serial();
    let _guard = SysctlGuard::new("dirty_ratio");
    let before: u64 = sysctl("dirty_ratio").parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut run = dir_run(dir.path(), "2s", &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The run read the sysctls before it wrote its first probe; it measures 2 s from there.
    common::wait_until_measuring(dir.path(), common::PROBE_FILE, &mut run);
    std::fs::write("/proc/sys/vm/dirty_ratio", (before - 1).to_string()).unwrap();
    let out = run.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = r["findings"].to_string();
    assert!(
        findings.contains(&format!("vm.dirty_ratio {before} -> {}", before - 1)),
        "{findings}"
    );
}

// ---- item 2: every terminating signal ----

/// Issue 8: every terminating signal stops a dir run and cleans up.
fn every_terminating_signal_stops_a_dir_run_and_cleans_up() {
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
fn sighup_and_sigusr1_stop_a_scratch_run_and_undo_everything() {
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
fn a_signal_ignored_at_start_stays_ignored() {
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
fn a_closed_terminal_still_undoes_a_scratch_run() {
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

// ---- item 3: a busy mount at the end of a run ----

/// Issue 8: a busy mount at the end fails the run and cleanup keeps its record.
fn a_busy_mount_at_the_end_fails_the_run_and_cleanup_keeps_its_record() {
    let _serial = serial();
    let _cleanup = common::CleanupOnDrop(state_dir());
    let backing = scratch_backing();
    let mut run = ScratchRun::probe()
        .quiet()
        .set("iterations", "1000")
        .fs("ext4")
        .size("128M")
        .device("flush=1ms")
        .backing(backing.path())
        .process()
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let state = state_file(run.id());
    wait_for_file_containing(&state, "\"mount\"", &mut run);
    let scratch = std::fs::read_dir(backing.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().starts_with("fsynclab-scratch-"))
        .expect("the scratch directory")
        .path();
    // Steps are recorded before they are done: wait for the kernel to show the mount.
    let mnt = scratch.join("mnt");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .contains(&format!(" {} ", mnt.display()))
    {
        assert!(Instant::now() < deadline, "{} never mounted", mnt.display());
        std::thread::sleep(Duration::from_millis(10));
    }
    // A shell sitting in the scratch filesystem: the mount cannot come off.
    let mut sitter = Command::new("sleep").arg("120").current_dir(&mnt).spawn().unwrap();
    let status = wait_at_most(&mut run, Duration::from_secs(60));
    let err = stderr_of(&mut run);
    assert_eq!(status.code(), Some(1), "a run that could not undo a step fails: {err}");
    assert!(
        err.contains(&format!(
            "busy: pid {} (sleep) has its working directory there",
            sitter.id()
        )),
        "says why: {err}"
    );
    assert!(
        err.contains("left in place:") && err.contains("loop device /dev/loop"),
        "{err}"
    );
    assert!(state.exists(), "the state file still records what is left");
    assert!(
        traces_under(backing.path()).iter().any(|t| t.contains("/dev/loop")),
        "the loop device is still there, and still names the scratch directory"
    );

    // cleanup cannot undo it either while the shell stays, and says so.
    let out = fsynclab().arg("cleanup").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("could not undo") && stderr.contains("busy"), "{stderr}");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("loop device"),
        "the loop device is not reported undone: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(state.exists(), "cleanup keeps the state file while anything remains");

    sitter.kill().unwrap();
    sitter.wait().unwrap();
    let out = fsynclab().arg("cleanup").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("undone: pid"));
    assert!(!state.exists());
    assert_eq!(traces_under(backing.path()), Vec::<String>::new(), "left behind");
}

// ---- item 5: a second Ctrl-C ----

/// Issue 8: a second Ctrl-C says what it leaves and cleanup undoes it.
fn a_second_ctrl_c_says_what_it_leaves_and_cleanup_undoes_it() {
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

// ---- item 4, second half: work directories of killed --dir runs ----

/// A runtime directory for a non-root user (the test's state directory wins over it).
fn user_runtime_dir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("fsynclab-runtime-").tempdir().unwrap()
}

/// Issue 8: cleanup removes the work directory of a killed dir run.
fn cleanup_removes_the_work_directory_of_a_killed_dir_run() {
    let _serial = serial();
    let runtime = user_runtime_dir();
    let dir = tempfile::tempdir().unwrap();
    let mut run = dir_run(dir.path(), "60s", &[])
        .env("XDG_RUNTIME_DIR", runtime.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while leftovers(dir.path()).is_empty() {
        assert!(Instant::now() < deadline, "no work directory appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    run.kill().unwrap();
    run.wait().unwrap();
    let left = leftovers(dir.path());
    assert_eq!(left.len(), 1, "{left:?}");

    // The next run in the same directory points at it.
    let next = dir_run(dir.path(), "200ms", &[])
        .env("XDG_RUNTIME_DIR", runtime.path())
        .output()
        .unwrap();
    let hint = String::from_utf8_lossy(&next.stderr);
    assert!(
        hint.contains("work directories of runs killed earlier") && hint.contains(&left[0]),
        "{hint}"
    );
    assert!(hint.contains("`fsynclab cleanup` removes"), "{hint}");

    let out = fsynclab()
        .arg("cleanup")
        .env("XDG_RUNTIME_DIR", runtime.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        stdout.contains(&format!("undone: pid {}: directory", run.id())),
        "{stdout}"
    );
    assert!(leftovers(dir.path()).is_empty(), "{:?}", leftovers(dir.path()));
}

// ---- item 12: cleanup trusts nothing that is not fsynclab's ----

/// Issue 8: cleanup removes nothing without fsynclab's shape.
fn cleanup_removes_nothing_without_fsynclabs_shape() {
    let _serial = serial();
    let runtime = user_runtime_dir();
    let state_dir = state_dir();
    std::fs::create_dir_all(&state_dir).unwrap();
    let work = tempfile::tempdir().unwrap();
    let precious = work.path().join("precious");
    std::fs::create_dir(&precious).unwrap();
    std::fs::write(precious.join("thesis.tex"), b"years of work").unwrap();
    // The shape of a scratch directory, but another process's.
    let not_mine = work.path().join("fsynclab-scratch-12-00000000");
    std::fs::create_dir(&not_mine).unwrap();
    // No process has this pid (pid_max is at most 2^22).
    let pid = 4_000_000_002u32;
    let file = state_dir.join(format!("{pid}.json"));
    let forged = serde_json::json!({
        "pid": pid, "start_time": 1,
        "steps": [
            {"step": "directory", "path": precious},
            {"step": "directory", "path": not_mine},
            {"step": "directory", "path": work.path().join(format!("fsynclab-scratch-{pid}-00000000/../precious"))},
            {"step": "sysctl", "name": "swappiness", "previous": 0},
        ]
    });
    std::fs::write(&file, forged.to_string()).unwrap();
    struct Remove(PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _remove = Remove(file.clone());
    let out = fsynclab()
        .arg("cleanup")
        .env("XDG_RUNTIME_DIR", runtime.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        precious.join("thesis.tex").exists(),
        "cleanup deleted a directory it did not make"
    );
    assert!(not_mine.exists());
    assert_eq!(
        stderr.matches("does not have the shape").count(),
        3,
        "each refused path is named: {stderr}"
    );
    assert!(
        stderr.contains("vm.swappiness is not a sysctl fsynclab sets"),
        "{stderr}"
    );
    assert!(file.exists(), "the state file stays for the user to look at");
}

// ---- the fault-injection sweep ----

/// What the sweep compares before and after: everything a scratch run touches, and nothing
/// of another fsynclab's that may run beside the test (its loop devices, mounts and trace
/// instances are left out; the vm sysctls cannot be: two runs never set them at once).
/// Trace instances are the sweep's own runs' (by pid): another's, even one a SIGKILL left
/// for its own cleanup, is not the sweep's to find.
#[derive(Clone, Debug, PartialEq)]
struct Machine {
    /// Attached loop devices and their backing files.
    loops: BTreeMap<String, String>,
    /// Every loop device's scheduler, bdi limits and (attached ones only) rotational flag.
    loop_settings: BTreeMap<String, String>,
    /// Every mount: mount point, type and source.
    mounts: BTreeSet<String>,
    sysctls: BTreeMap<String, String>,
    trace_instances: BTreeSet<String>,
    run_state: BTreeSet<String>,
    files: BTreeSet<String>,
    /// Processes still working in the backing directory.
    stragglers: BTreeSet<String>,
    /// Whether another fsynclab had a trace instance: then the tracefs mount is not compared.
    others_trace: bool,
}

fn list(dir: &Path) -> BTreeSet<String> {
    leftovers(dir).into_iter().collect()
}

/// The machine as the sweep sees it, `ours` being the pids of every run it started.
fn snapshot(backing: &Path, ours: &[u32]) -> Machine {
    let mut loops = BTreeMap::new();
    let mut loop_settings = BTreeMap::new();
    for entry in std::fs::read_dir("/sys/block").unwrap().filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with("loop") {
            continue;
        }
        let read = |p: &str| {
            std::fs::read_to_string(entry.path().join(p))
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        let backing_file = read("loop/backing_file");
        if !backing_file.is_empty() {
            if !backing_file.starts_with(&*backing.to_string_lossy()) {
                continue; // another's
            }
            loops.insert(name.clone(), backing_file.clone());
        }
        // A free device's rotational flag is not the machine's state: the kernel sets it
        // afresh at every attach from the backing file's disk (0 for a file on FUSE or
        // tmpfs), so a run that restores what it found after attaching leaves a value that
        // differs from a stale one seen before. Its scheduler and bdi limits do persist.
        let rotational = if backing_file.is_empty() {
            "(set at attach)".to_string()
        } else {
            read("queue/rotational")
        };
        loop_settings.insert(
            name,
            format!(
                "{} rotational={} bdi strict_limit={} max_ratio_fine={}",
                read("queue/scheduler"),
                rotational,
                read("bdi/strict_limit"),
                read("bdi/max_ratio_fine")
            ),
        );
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let mounts: Vec<String> = mountinfo
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let sep = f.iter().position(|x| *x == "-").unwrap_or(0);
            format!(
                "{} {} {}",
                f[4],
                f.get(sep + 1).unwrap_or(&""),
                f.get(sep + 2).unwrap_or(&"")
            )
        })
        .collect();
    let sysctls = [
        "dirty_ratio",
        "dirty_background_ratio",
        "dirty_bytes",
        "dirty_background_bytes",
        "dirty_expire_centisecs",
        "dirty_writeback_centisecs",
    ]
    .into_iter()
    .map(|n| (n.to_string(), sysctl(n)))
    .collect();
    // Another's instance makes the tracefs mount its own too.
    let mut trace_instances = BTreeSet::new();
    let mut others_trace = false;
    for dir in ["/sys/kernel/tracing/instances", "/sys/kernel/debug/tracing/instances"] {
        for i in list(Path::new(dir)) {
            if ours.iter().any(|pid| i == format!("fsynclab-{pid}")) {
                trace_instances.insert(format!("{dir}/{i}"));
            } else {
                others_trace = true;
            }
        }
    }
    let b = backing.to_string_lossy().into_owned();
    let mounts = mounts
        .into_iter()
        .filter(|m: &String| m.contains(&b) || m.contains(" tracefs "))
        .collect();
    let stragglers = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&b))
        .collect();
    Machine {
        loops,
        loop_settings,
        mounts,
        sysctls,
        trace_instances,
        run_state: list(&state_dir()),
        files: list(backing),
        stragglers,
        others_trace,
    }
}

/// Loop devices created by a run stay as free devices: compare the settings of those
/// that existed before only.
fn same_machine(before: &Machine, after: &Machine) -> Result<(), String> {
    let (mut before, mut after) = (before.clone(), after.clone());
    // A device another run holds at either time is its to set.
    before.loop_settings.retain(|k, _| after.loop_settings.contains_key(k));
    after.loop_settings.retain(|k, _| before.loop_settings.contains_key(k));
    // So is the tracefs mount while another run traces.
    if before.others_trace || after.others_trace {
        for m in [&mut before, &mut after] {
            m.mounts.retain(|l| !l.contains(" tracefs "));
            m.others_trace = false;
        }
    }
    if after == before {
        Ok(())
    } else {
        Err(format!("before: {before:#?}\nafter: {after:#?}"))
    }
}

/// How a sweep run is stopped: at a named point, or after a delay.
#[derive(Clone, Debug)]
enum KillAt {
    Point(&'static str),
    After(Duration),
}

/// The points of a scratch run on an emulated disk with a scheduler, two per-device dirty
/// limits and two sysctls, from
/// the first step to the last undo (see src/testbed/pause.rs).
const POINTS: &[&str] = &[
    "recorded:directory",
    "done:directory",
    "run:mkfs.ext4",
    "recorded:fuse",
    "done:fuse",
    "recorded:loop",
    "run:losetup",
    "done:loop",
    "recorded:rotational",
    "done:rotational",
    "recorded:scheduler",
    "done:scheduler",
    "recorded:bdi",
    "done:bdi",
    "recorded:bdi@2",
    "done:bdi@2",
    "recorded:mount",
    "run:mount",
    "done:mount",
    "recorded:sysctl",
    "done:sysctl",
    "recorded:sysctl@2",
    "done:sysctl@2",
    "prepared",
    "undo:sysctl",
    "undone:sysctl",
    "undo:sysctl@2",
    "undo:mount",
    "run:umount",
    "undone:mount",
    "undo:bdi",
    "undone:bdi",
    "undo:bdi@2",
    "undone:bdi@2",
    "undo:scheduler",
    "undone:scheduler",
    "undo:rotational",
    "undone:rotational",
    "undo:loop",
    "run:losetup@2",
    "undone:loop",
    "undo:fuse",
    "run:umount@2",
    "undone:fuse",
    "undo:directory",
    "undone:directory",
];

/// Starts a sweep run, waits for the kill point, and SIGKILLs it. Returns false if the run
/// ended before the delay.
/// The run the sweep kills: a scratch ext4 on an emulated disk, with a scheduler, per-device
/// dirty limits and two sysctls, so that every kind of step is there.
fn sweep_run(backing: &Path) -> Command {
    let mut cmd = ScratchRun::probe()
        .quiet()
        .set("iterations", "20")
        .fs("ext4")
        .size("160M")
        .device("hdd-5400")
        .args(["--scheduler", "mq-deadline"])
        .args(["--bdi", "strict_limit=1,max_bytes=4M"])
        .args(["--dirty-ratio", "13", "--dirty-expire", "7s"])
        .backing(backing)
        .process();
    common::with_default_signals(&mut cmd);
    cmd
}

/// Returns whether the run was killed before it ended, and its pid.
fn kill_sweep_run(backing: &Path, at: &KillAt) -> (bool, u32) {
    kill_run(sweep_run(backing), at)
}

/// Starts `cmd`, waits for the kill point, and SIGKILLs it. Returns whether the run was
/// killed before it ended, and its pid.
fn kill_run(mut cmd: Command, at: &KillAt) -> (bool, u32) {
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    if let KillAt::Point(point) = at {
        cmd.env("FSYNCLAB_TEST_PAUSE", point);
    }
    let mut run = cmd.spawn().expect("start fsynclab");
    let mut said = StderrLines::of(&mut run);
    let killed = match at {
        KillAt::Point(point) => {
            let line = format!("fsynclab: test pause at {}", point.split('@').next().unwrap());
            said.wait_for(&line, &mut run, Duration::from_secs(60));
            true
        }
        KillAt::After(delay) => {
            std::thread::sleep(*delay);
            run.try_wait().unwrap().is_none()
        }
    };
    let _ = run.kill();
    wait_dead(&mut run, &format!("{at:?}"));
    (killed, run.id())
}

/// Waits for a SIGKILLed run to be gone. One that is not within 10 s is stuck in an
/// uninterruptible wait (see src/testbed/deadman.rs): a failure, after freeing it.
fn wait_dead(run: &mut Child, at: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while run.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let state = std::fs::read_to_string(format!("/proc/{}/status", run.id())).unwrap_or_default();
            let state = state
                .lines()
                .find(|l| l.starts_with("State:"))
                .unwrap_or("")
                .to_string();
            // Free it for the next tests: abort its emulated device's FUSE connection.
            for m in std::fs::read_to_string("/proc/self/mountinfo")
                .unwrap_or_default()
                .lines()
            {
                let point = m.split(' ').nth(4).unwrap_or("");
                if point.contains(&format!("fsynclab-scratch-{}-", run.id())) && point.ends_with("/dev") {
                    let _ = Command::new("umount").args(["-f", point]).output();
                }
            }
            let _ = run.wait();
            panic!("a run SIGKILLed at {at} was still there 10 s later ({state})");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Issue 8: a SIGKILLed run on an emulated disk dies at once.
fn a_sigkilled_run_on_an_emulated_disk_dies_at_once() {
    // SIGKILL while the prober waits in fdatasync for the emulated disk: the process must
    // die, not hang in an uninterruptible wait for its own FUSE thread.
    let _serial = serial();
    let _cleanup = common::CleanupOnDrop(state_dir());
    let backing = scratch_backing();
    for i in 0..5 {
        let mut run = ScratchRun::probe()
            .quiet()
            .set("iterations", "1000")
            .fs("ext4")
            .size("160M")
            .device("hdd-5400")
            .backing(backing.path())
            .process()
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let state = state_file(run.id());
        wait_for_file_containing(&state, "\"mount\"", &mut run);
        std::thread::sleep(Duration::from_millis(300 + 70 * i));
        run.kill().unwrap();
        wait_dead(&mut run, &format!("measurement, kill {i}"));
        let out = fsynclab().arg("cleanup").output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(traces_under(backing.path()), Vec::<String>::new(), "left behind");
    }
}

/// Issue 8: SIGKILL at every step then cleanup restores the machine.
fn sigkill_at_every_step_then_cleanup_restores_the_machine() {
    let _serial = serial();
    let _cleanup = common::CleanupOnDrop(state_dir());
    let _guards = [
        SysctlGuard::new("dirty_ratio"),
        SysctlGuard::new("dirty_expire_centisecs"),
    ];
    let backing = scratch_backing();
    let mut ours = Vec::new();
    let before = snapshot(backing.path(), &ours);
    let started = Instant::now();
    // One run to its end: it must leave the machine as it was, and its length spreads the
    // kills by delay over its whole life, reaching what the named points do not (inside
    // mkfs, mount, the measurement).
    let whole = sweep_run(backing.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    ours.push(whole.id());
    let whole = whole.wait_with_output().unwrap();
    assert!(whole.status.success(), "{}", String::from_utf8_lossy(&whole.stderr));
    let length = started.elapsed();
    same_machine(&before, &snapshot(backing.path(), &ours)).unwrap_or_else(|d| panic!("after a whole run: {d}"));
    const BY_DELAY: u32 = 12;
    let mut plan: Vec<KillAt> = POINTS.iter().map(|p| KillAt::Point(p)).collect();
    plan.extend((0..BY_DELAY).map(|i| KillAt::After(length * (2 * i + 1) / (2 * BY_DELAY))));
    let mut tried = 0;
    for at in &plan {
        let (killed, pid) = kill_sweep_run(backing.path(), at);
        ours.push(pid);
        if !killed {
            continue;
        }
        tried += 1;
        let out = fsynclab().arg("cleanup").output().unwrap();
        assert!(
            out.status.success(),
            "cleanup after a kill at {at:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let after = snapshot(backing.path(), &ours);
        if let Err(diff) = same_machine(&before, &after) {
            panic!(
                "after a kill at {at:?} and `fsynclab cleanup` ({}), the machine differs:\n{diff}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
    let _ = writeln!(
        std::io::stderr(),
        "issue8 sweep: {tried} kill points tried ({} named, {} by delay), machine restored after each, in {:.1} s",
        POINTS.len(),
        tried - POINTS.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        tried >= POINTS.len() + BY_DELAY as usize / 2,
        "only {tried} kill points reached"
    );
}

/// The points of a fault run (`fsync-errors` on ext4 then XFS, every write failing): the
/// work directory, the first filesystem made and mounted, the unmount and mount once its
/// disk has failed (read-only), its teardown, the second filesystem (shut down) the same,
/// the work directory removed.
const FAULT_POINTS: &[&str] = &[
    "recorded:directory",
    "done:fuse",
    "done:mount",
    "run:umount",
    "run:mount@2",
    "undo:mount",
    "done:mount@2",
    "run:umount@3",
    "run:mount@4",
    "undo:mount@2",
    "undone:directory@3",
];

/// A run that makes filesystems fail: `fsync-errors` with every write failing (`disk`), or
/// one flush failing and then the power cut (`flush`), its scratch filesystems in its work
/// directory in `backing`.
fn fault_run(backing: &Path, fault: &str) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(["run", "fsync-errors", "-q", "--no-explain"])
        .args(["--set", "fs=ext4,xfs", "--set", &format!("fault={fault}"), "--dir"])
        .arg(backing);
    cmd
}

/// Issue 15: SIGKILL during a fault run then cleanup restores the machine.
fn sigkill_during_a_fault_run_then_cleanup_restores_the_machine() {
    // Issue 15, reliability: a run killed while its filesystems are read-only or shut down
    // (or being made, remounted, undone) leaves what `fsynclab cleanup` undoes, all of it:
    // the scratch filesystems inside the work directory first, then the work directory.
    let _serial = serial();
    let _cleanup = common::CleanupOnDrop(state_dir());
    let backing = scratch_backing();
    let mut ours = Vec::new();
    let before = snapshot(backing.path(), &ours);
    let started = Instant::now();
    // One run of each to its end: its length spreads the kills by delay over its life.
    let mut plan: Vec<(&str, KillAt)> = FAULT_POINTS.iter().map(|p| ("disk", KillAt::Point(p))).collect();
    const BY_DELAY: u32 = 6;
    for fault in ["disk", "flush"] {
        let t0 = Instant::now();
        let whole = fault_run(backing.path(), fault)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        ours.push(whole.id());
        let whole = whole.wait_with_output().unwrap();
        assert!(whole.status.success(), "{}", String::from_utf8_lossy(&whole.stderr));
        let length = t0.elapsed();
        plan.extend((0..BY_DELAY).map(|i| (fault, KillAt::After(length * (2 * i + 1) / (2 * BY_DELAY)))));
    }
    // The settings of free loop devices are left out: the run sets no scheduler, and
    // other runs beside this one attach and free devices meanwhile, each attach setting a
    // device's rotational flag afresh (seen here as loop1 rotational 1 -> 0 across a whole
    // run that restored its own); the issue8 sweep covers them. The rest must be as it was.
    let settled = |mut m: Machine| {
        m.loop_settings.clear();
        m
    };
    let before = settled(before);
    same_machine(&before, &settled(snapshot(backing.path(), &ours)))
        .unwrap_or_else(|d| panic!("after whole runs: {d}"));
    let mut tried = 0;
    for (fault, at) in &plan {
        let (killed, pid) = kill_run(fault_run(backing.path(), fault), at);
        ours.push(pid);
        if !killed {
            continue;
        }
        tried += 1;
        let out = fsynclab().arg("cleanup").output().unwrap();
        assert!(
            out.status.success(),
            "cleanup after a kill at {at:?} (fault={fault}) failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let after = settled(snapshot(backing.path(), &ours));
        if let Err(diff) = same_machine(&before, &after) {
            panic!(
                "after a kill at {at:?} (fault={fault}) and `fsynclab cleanup` ({}), the machine differs:\n{diff}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
    let _ = writeln!(
        std::io::stderr(),
        "issue15 sweep: {tried} kill points tried ({} named, {} by delay) in fault runs, machine restored after each, in {:.1} s",
        FAULT_POINTS.len(),
        tried - FAULT_POINTS.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(tried >= FAULT_POINTS.len(), "only {tried} kill points reached");
}

/// A run killed with SIGKILL whose state directory was removed afterwards (a test's private
/// one, as a failing test of tests/session.rs left it in a CI run: its mount and loop device
/// stayed, and `cleanup` said "nothing to clean up") is found by its shape and undone.
fn cleanup_undoes_a_killed_scratch_run_whose_state_file_is_gone() {
    let _serial = serial();
    let _cleanup = common::CleanupOnDrop(state_dir());
    let backing = scratch_backing();
    let lost = common::PrivateState::new();
    let mut run = ScratchRun::run("overwrite-fsync")
        .quiet()
        .set("duration", "60s")
        .set("file_size", "16M")
        .fs("ext2")
        .size("160M")
        .backing(backing.path())
        .process()
        .env(lost.env().0, lost.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let state = lost.file_of(run.id());
    wait_for_file_containing(&state, "\"mount\"", &mut run);
    // The state file records the mount before `mount` runs (so that a kill during it is
    // undone too): wait for the mount itself, which is what this test looks for.
    let backing_path = backing.path().to_string_lossy().to_string();
    let mounted = || {
        std::fs::read_to_string("/proc/self/mountinfo")
            .unwrap_or_default()
            .lines()
            .any(|l| l.contains(&backing_path))
    };
    let since = Instant::now();
    while !mounted() {
        assert!(run.try_wait().unwrap().is_none(), "the run ended before it mounted");
        assert!(
            since.elapsed() < Duration::from_secs(120),
            "no mount under the backing after 120 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    run.kill().unwrap();
    run.wait().unwrap();
    std::fs::remove_file(&state).unwrap();
    assert!(
        !traces_under(backing.path()).is_empty(),
        "the killed run left its testbed"
    );

    // The state directory of this cleanup knows nothing of it.
    let out = fsynclab().arg("cleanup").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let pid = run.id();
    for what in ["mount", "loop device", "directory"] {
        assert!(
            stdout.contains(&format!("undone: pid {pid} (no state file): {what}")),
            "{what}:\n{stdout}"
        );
    }
    assert_eq!(traces_under(backing.path()), Vec::<String>::new(), "left behind");
}
