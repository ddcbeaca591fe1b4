//! The programs fsynclab starts and waits for (a power cut's `--check`, mkfs, fsck, Slurm's
//! clients): each is bounded by a stated limit, in a process group fsynclab ends on its way
//! out, and a signal while fsynclab waits on it starts the undo instead of being lost. A
//! signal sent to fsynclab's whole process group (GNU `timeout`) counts once.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::Need::{Fuse, Root, Tool};
use common::ScratchRun;

common::tests! {
    one_sigterm_stops_a_check_that_never_ends_and_leaves_nothing: [Root, Fuse, Tool("mkfs.ext4")],
    a_check_past_its_limit_is_stopped_and_exits_124: [Root, Fuse, Tool("mkfs.ext4")],
    a_signal_sent_to_fsynclab_and_its_group_counts_once: [Root, Fuse, Tool("mkfs.ext4"), Tool("timeout")],
    a_bad_check_timeout_is_one_line_and_exit_2,
    sigterm_while_sbatch_retries_ends_it_and_says_how_to_resume: [Tool("sbatch"), Tool("squeue"), Tool("scontrol"), Tool("scancel"), Tool("sinfo")],
}

/// A `sleep` whose length names this process and test (`nth`), so that `pgrep` finds this
/// test's only.
fn marked_sleep(nth: u32) -> String {
    format!("sleep {}{nth}", 100_000 + std::process::id() % 100_000)
}

/// Processes whose command line is `what` (a check fsynclab should have ended).
fn running(what: &str) -> Vec<String> {
    let out = Command::new("pgrep")
        .args(["-a", "-f", &format!("^{what}$")])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// `fsynclab exec` on an emulated disk whose power is cut at once, then `check` runs.
fn exec_with_check(backing: &Path, state: &common::PrivateState, check: &str, extra: &[&str]) -> Command {
    let mut cmd = ScratchRun::exec()
        .fs("ext4")
        .device("hdd-7200")
        .args(["--cut", "after=200ms", "--check", check])
        .args(extra)
        .backing(backing)
        .process();
    cmd.env("FSYNCLAB_STORE", "off")
        .env(state.env().0, state.env().1)
        .args(["--", "sleep", "5"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn assert_nothing_left(backing: &Path, check: &str, said: &str) {
    assert!(
        running(check).is_empty(),
        "the check is still running: {:?}\n{said}",
        running(check)
    );
    let traces = common::traces_under(backing);
    assert!(traces.is_empty(), "left behind: {traces:?}\n{said}");
}

/// Issue 24: `exec --cut ... --check 'sleep 100000'` then one SIGTERM waited forever, and a
/// second left the mount, the loop device and the check running.
fn one_sigterm_stops_a_check_that_never_ends_and_leaves_nothing() {
    let backing = common::backing();
    let state = common::PrivateState::new();
    let _cleanup = common::CleanupOnDrop(state.path().to_path_buf());
    let check = marked_sleep(1);
    let mut child: Child = exec_with_check(backing.path(), &state, &check, &[]).spawn().unwrap();
    let mut lines = common::StderrLines::of(&mut child);
    lines.wait_for_containing("mounted again after the cut", &mut child, Duration::from_secs(60));
    // The check is under way once its sleep runs.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while running(&check).is_empty() {
        assert!(std::time::Instant::now() < deadline, "the check never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    common::send(&child, libc::SIGTERM);
    let status = common::wait_at_most(&mut child, Duration::from_secs(30));
    let said = lines.all();
    assert_eq!(status.code(), Some(143), "{said}");
    assert!(said.contains("signal 15 stopped the check"), "{said}");
    assert!(!said.contains("second signal"), "{said}");
    assert_nothing_left(backing.path(), &check, &said);
}

/// Issue 24: a check is bounded (`--check-timeout`, 10 minutes unless given): past it, it
/// and what it started are stopped, and fsynclab exits 124 as timeout(1) does.
fn a_check_past_its_limit_is_stopped_and_exits_124() {
    let backing = common::backing();
    let state = common::PrivateState::new();
    let _cleanup = common::CleanupOnDrop(state.path().to_path_buf());
    let check = marked_sleep(2);
    let script = format!("{check} & wait");
    let started = std::time::Instant::now();
    let out = exec_with_check(backing.path(), &state, &script, &["--check-timeout", "1s"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(124), "{said}");
    assert!(said.contains("did not end within 1s (--check-timeout)"), "{said}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
    assert_nothing_left(backing.path(), &check, &said);
}

/// Issue 24: under GNU `timeout`, which signals fsynclab and then its whole process group,
/// fsynclab took the group's signal for a second one and exited without undoing.
fn a_signal_sent_to_fsynclab_and_its_group_counts_once() {
    let backing = common::backing();
    let state = common::PrivateState::new();
    let _cleanup = common::CleanupOnDrop(state.path().to_path_buf());
    let check = marked_sleep(3);
    let inner = exec_with_check(backing.path(), &state, &check, &[]);
    let mut cmd = Command::new("timeout");
    cmd.arg("8").arg(inner.get_program()).args(inner.get_args());
    for (k, v) in inner.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    // timeout's own status once its command ended on the signal.
    assert_eq!(out.status.code(), Some(124), "{said}");
    assert!(said.contains("signal 15 stopped the check"), "{said}");
    assert!(!said.contains("second signal"), "{said}");
    assert_nothing_left(backing.path(), &check, &said);
}

/// A limit that is not a duration, or is zero, is refused before anything is made.
fn a_bad_check_timeout_is_one_line_and_exit_2() {
    for (value, says) in [
        ("soon", "--check-timeout soon:"),
        ("0s", "--check-timeout: must be longer than 0s"),
    ] {
        let out = common::fsynclab()
            .args([
                "exec",
                "--scratch",
                "ext4",
                "--device",
                "hdd-7200",
                "--cut",
                "now",
                "--check",
                "true",
            ])
            .args(["--check-timeout", value, "--", "true"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
    }
}

/// Issue 24: with `SLURM_CONF` naming a missing file `sbatch` retries, silently for 40 s; a
/// SIGTERM then left it running after fsynclab ended. Now fsynclab says it waits, and a
/// signal ends `sbatch` and says how to resume.
fn sigterm_while_sbatch_retries_ends_it_and_says_how_to_resume() {
    let work = tempfile::tempdir().unwrap();
    let mut child = Command::new(common::bin())
        .current_dir(work.path())
        .env("FSYNCLAB_STORE", work.path().join("runs.sqlite"))
        .env("SLURM_CONF", work.path().join("missing/slurm.conf"))
        .args([
            "matrix",
            "fsync-tps",
            "--axis",
            "record_size=4k,8k",
            "--repeat",
            "1",
            "--dir",
            ".",
        ])
        .args(["--set", "duration=200ms", "--engine", "slurm"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = common::StderrLines::of(&mut child);
    lines.wait_for_containing("still waiting for sbatch", &mut child, Duration::from_secs(30));
    common::send(&child, libc::SIGTERM);
    let status = common::wait_at_most(&mut child, Duration::from_secs(15));
    let said = lines.all();
    assert_eq!(status.code(), Some(143), "{said}");
    assert!(
        said.contains("stopped by signal 15 before any job was submitted"),
        "{said}"
    );
    assert!(said.contains("fsynclab matrix --resume m1"), "{said}");
    let ours = work.path().display().to_string();
    let out = Command::new("pgrep")
        .args(["-a", "-f", &format!("sbatch.*{ours}")])
        .output()
        .unwrap();
    let left = String::from_utf8_lossy(&out.stdout);
    assert!(left.trim().is_empty(), "sbatch left running: {left}");
}
