//! Issue 8, items 3, 4 and 12: what `fsynclab cleanup` undoes and what it leaves alone. A
//! mount still busy at a run's end is kept on record until it can come off, a killed `--dir`
//! run's work directory is removed, a killed scratch run whose state file is gone is found by
//! its shape, and nothing without fsynclab's shape is touched.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{
    self, backing as scratch_backing, fsynclab, leftovers, stderr_of, traces_under, wait_at_most,
    wait_for_file_containing, ScratchRun,
};
use crate::setup::{dir_run, serial, state_dir, state_file};

/// Issue 8: a busy mount at the end fails the run and cleanup keeps its record.
pub fn a_busy_mount_at_the_end_fails_the_run_and_cleanup_keeps_its_record() {
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

/// A runtime directory for a non-root user (the test's state directory wins over it).
fn user_runtime_dir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("fsynclab-runtime-").tempdir().unwrap()
}

/// Issue 8: cleanup removes the work directory of a killed dir run.
pub fn cleanup_removes_the_work_directory_of_a_killed_dir_run() {
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

/// Issue 8: cleanup removes nothing without fsynclab's shape.
pub fn cleanup_removes_nothing_without_fsynclabs_shape() {
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

/// A run killed with SIGKILL whose state directory was removed afterwards (a test's private
/// one, as a failing test of tests/session.rs left it in a CI run: its mount and loop device
/// stayed, and `cleanup` said "nothing to clean up") is found by its shape and undone.
pub fn cleanup_undoes_a_killed_scratch_run_whose_state_file_is_gone() {
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
