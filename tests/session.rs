//! Issue 14: one session runs every command, so a signal at any phase (while the testbed is
//! made, while it is undone) ends `run`, `suite`, `matrix` and `exec` alike: exit status
//! 128 + N and nothing left behind. The signal is sent at a known step: the run pauses there
//! (`FSYNCLAB_TEST_PAUSE`) until a signal arrives (`FSYNCLAB_TEST_PAUSE_UNTIL=signal`).
//! Issue 19, item 16: `exec` says what it does on the first signal, and a second kills the
//! command.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{require, require_root, PrivateState};

fn mkfs_ext2() -> bool {
    require(
        "mkfs.ext2",
        fsynclab::testbed::command::find_tool("mkfs.ext2").is_some(),
    )
}

/// Loop devices and mounts whose paths lie under `dir`, plus files left in it.
fn traces_under(dir: &Path) -> Vec<String> {
    let d = dir.to_string_lossy().to_string();
    let mut out = common::leftovers(dir);
    let losetup = Command::new("losetup")
        .arg("-a")
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    out.extend(
        String::from_utf8_lossy(&losetup)
            .lines()
            .filter(|l| l.contains(&d))
            .map(String::from),
    );
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    out.extend(mountinfo.lines().filter(|l| l.contains(&d)).map(String::from));
    out
}

/// A started fsynclab whose stderr lines arrive on a channel.
struct Started {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Started {
    fn spawn(mut cmd: Command) -> Started {
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start fsynclab");
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Started {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits (at most a minute) for a line containing `needle`.
    fn wait_for(&mut self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match self.lines.recv_timeout(Duration::from_millis(100)) {
                Ok(line) => {
                    let found = line.contains(needle);
                    self.seen.push(line);
                    if found {
                        return;
                    }
                }
                Err(_) => {
                    if let Some(status) = self.child.try_wait().unwrap() {
                        panic!("ended ({status}) before saying {needle:?}: {:#?}", self.seen);
                    }
                }
            }
            assert!(Instant::now() < deadline, "never said {needle:?}: {:#?}", self.seen);
        }
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill has no memory preconditions; the pid is our child, not yet reaped.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, sig) }, 0);
    }

    /// Waits (at most two minutes) for the end; returns the exit code and all of stderr.
    fn finish(mut self) -> (Option<i32>, String) {
        let deadline = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("did not end: {:#?}", self.seen);
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        // The reader thread ends with the pipe.
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(line);
        }
        (status.code(), self.seen.join("\n"))
    }
}

/// `fsynclab COMMAND...` on a small scratch ext2 under `backing`, with its own state
/// directory and store.
fn command(args: &[&str], backing: &Path, work: &Path, state: &PrivateState) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("fsynclab"));
    cmd.env(state.env().0, state.path())
        .env("FSYNCLAB_STORE", work.join("store.sqlite"))
        .current_dir(work)
        .args(args)
        .args(["--scratch", "ext2", "--scratch-size", "160M", "--backing"])
        .arg(backing);
    cmd
}

/// The four commands that open a testbed, each small: a suite of six scenarios takes about
/// 5 s on a scratch ext2.
const COMMANDS: [(&str, &[&str]); 4] = [
    (
        "run",
        &[
            "run",
            "fsync-tps",
            "-q",
            "--set",
            "threads=1",
            "--set",
            "duration=200ms",
        ],
    ),
    (
        "suite",
        &[
            "suite",
            "-q",
            "--results",
            "results",
            "--set",
            "duration=200ms",
            "--set",
            "iterations=1",
            "--set",
            "sleep=0s",
            "--set",
            "file_size=4M",
            "--set",
            "random_file_size=4M",
            "--set",
            "files=8",
            "--set",
            "total_size=4M",
            "--set",
            "rounds=1",
            "--set",
            "threads=1",
            "--set",
            "sizes=64k",
        ],
    ),
    (
        "matrix",
        &[
            "matrix",
            "fsync-tps",
            "-q",
            "--axis",
            "threads=1,2",
            "--set",
            "duration=200ms",
            "--repeat",
            "1",
        ],
    ),
    ("exec", &["exec"]),
];

/// Sends SIGTERM when each command pauses at `point`, and checks 143, the line that says
/// so, and a clean machine.
fn signal_at(point: &str, says: &str) {
    for (name, args) in COMMANDS {
        let backing = tempfile::Builder::new().prefix("fsynclab-test-").tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let state = PrivateState::new();
        let mut cmd = command(args, backing.path(), work.path(), &state);
        cmd.env("FSYNCLAB_TEST_PAUSE", point)
            .env("FSYNCLAB_TEST_PAUSE_UNTIL", "signal");
        if name == "exec" {
            cmd.args(["--", "true"]);
        }
        let mut run = Started::spawn(cmd);
        run.wait_for(&format!("test pause at {point}"));
        run.signal(libc::SIGTERM);
        let pid = run.child.id();
        let (code, stderr) = run.finish();
        assert_eq!(code, Some(143), "{name}, SIGTERM at {point}: {stderr}");
        assert!(stderr.contains(says), "{name}, SIGTERM at {point}: {stderr}");
        assert_eq!(
            traces_under(backing.path()),
            Vec::<String>::new(),
            "{name}: left behind"
        );
        assert!(!state.file_of(pid).exists(), "{name}: its state file is left");
    }
}

#[test]
fn issue14_a_signal_while_the_testbed_is_made_ends_every_command_with_128_plus_n() {
    if !require_root() || !mkfs_ext2() {
        return;
    }
    signal_at("done:mount", "interrupted by signal 15 while preparing the target");
}

#[test]
fn issue14_a_signal_while_the_testbed_is_undone_ends_every_command_with_128_plus_n() {
    if !require_root() || !mkfs_ext2() {
        return;
    }
    signal_at("undo:mount", "signal 15");
}

/// Issue 19, item 16: the first signal to `exec` while its command ignores it says what
/// happens, the second kills the command; everything is undone.
#[test]
fn issue19_exec_says_it_waits_for_the_command_and_a_second_signal_kills_it() {
    if !require_root() || !mkfs_ext2() {
        return;
    }
    let backing = tempfile::Builder::new().prefix("fsynclab-test-").tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let state = PrivateState::new();
    // `exec` replaces the shell, so the command that ignores SIGINT is the one fsynclab waits for.
    let script = "trap '' INT; echo ready >&2; exec sleep 600";
    let mut cmd = command(&["exec"], backing.path(), work.path(), &state);
    cmd.args(["--", "sh", "-c", script]);
    let mut run = Started::spawn(cmd);
    run.wait_for("ready");
    run.signal(libc::SIGINT);
    run.wait_for("waiting for the command to end; a second Ctrl-C kills it");
    run.signal(libc::SIGINT);
    let (code, stderr) = run.finish();
    assert!(stderr.contains("second signal: killing the command"), "{stderr}");
    assert_eq!(
        code,
        Some(128 + libc::SIGKILL),
        "the command's own end is passed through: {stderr}"
    );
    assert_eq!(traces_under(backing.path()), Vec::<String>::new(), "left behind");
}
