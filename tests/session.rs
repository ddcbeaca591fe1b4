//! Issue 14: one session runs every command, so a signal at any phase (while the testbed is
//! made, while it is undone) ends `run`, `suite`, `matrix` and `exec` alike: exit status
//! 128 + N and nothing left behind. The signal is sent at a known step: the run pauses there
//! (`FSYNCLAB_TEST_PAUSE`) until a signal arrives (`FSYNCLAB_TEST_PAUSE_UNTIL=signal`).
//! Issue 19, item 16: `exec` says what it does on the first signal, and a second kills the
//! command.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::Need::{Root, Tool};
use common::{send, traces_under, wait_at_most, Need, PrivateState, ScratchRun, StderrLines};

/// What every test here needs beside root: its testbed is a scratch ext2.
const MKFS_EXT2: Need = Tool("mkfs.ext2");

common::tests! {
    a_signal_while_the_testbed_is_made_ends_every_command_with_128_plus_n: [Root, MKFS_EXT2],
    a_signal_while_the_testbed_is_undone_ends_every_command_with_128_plus_n: [Root, MKFS_EXT2],
    exec_says_it_waits_for_the_command_and_a_second_signal_kills_it: [Root, MKFS_EXT2],
    exec_ends_what_the_command_left_running_before_undoing: [Root, MKFS_EXT2],
    exec_says_nothing_of_children_that_already_exited: [Root, MKFS_EXT2],
    exec_reaps_the_orphans_its_command_leaves_while_it_runs: [Root, MKFS_EXT2],
}

/// `fsynclab COMMAND...` on a small scratch ext2 under `backing`, with its own state
/// directory and store.
fn command(args: &[&str], backing: &Path, work: &Path, state: &PrivateState) -> Command {
    let mut cmd = ScratchRun::flags()
        .args(args)
        .fs("ext2")
        .size("160M")
        .backing(backing)
        .process();
    cmd.env(state.env().0, state.path())
        .env("FSYNCLAB_STORE", work.join("store.sqlite"))
        .current_dir(work);
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
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        let mut run = cmd.spawn().expect("start fsynclab");
        let mut lines = StderrLines::of(&mut run);
        lines.wait_for(
            &format!("fsynclab: test pause at {point}"),
            &mut run,
            Duration::from_secs(60),
        );
        send(&run, libc::SIGTERM);
        let code = wait_at_most(&mut run, Duration::from_secs(120)).code();
        let stderr = lines.all();
        let pid = run.id();
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

/// Issue 14: a signal while the testbed is made ends every command with 128 + n.
fn a_signal_while_the_testbed_is_made_ends_every_command_with_128_plus_n() {
    signal_at("done:mount", "interrupted by signal 15 while preparing the target");
}

/// Issue 14: a signal while the testbed is undone ends every command with 128 + n.
fn a_signal_while_the_testbed_is_undone_ends_every_command_with_128_plus_n() {
    signal_at("undo:mount", "signal 15");
}

/// Issue 19, item 16: the first signal to `exec` while its command ignores it says what
/// happens, the second kills the command; everything is undone.
fn exec_says_it_waits_for_the_command_and_a_second_signal_kills_it() {
    let backing = tempfile::Builder::new().prefix("fsynclab-test-").tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let state = PrivateState::new();
    // `exec` replaces the shell, so the command that ignores SIGINT is the one fsynclab waits for.
    let script = "trap '' INT; echo ready >&2; exec sleep 600";
    let mut cmd = command(&["exec"], backing.path(), work.path(), &state);
    cmd.args(["--", "sh", "-c", script]);
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut run = cmd.spawn().expect("start fsynclab exec");
    let mut lines = StderrLines::of(&mut run);
    let minute = Duration::from_secs(60);
    lines.wait_for("ready", &mut run, minute);
    send(&run, libc::SIGINT);
    lines.wait_for(
        "fsynclab: waiting for the command to end; a second Ctrl-C kills it",
        &mut run,
        minute,
    );
    send(&run, libc::SIGINT);
    let code = wait_at_most(&mut run, Duration::from_secs(120)).code();
    let stderr = lines.all();
    assert!(stderr.contains("second signal: killing the command"), "{stderr}");
    assert_eq!(
        code,
        Some(128 + libc::SIGKILL),
        "the command's own end is passed through: {stderr}"
    );
    assert_eq!(traces_under(backing.path()), Vec::<String>::new(), "left behind");
}

/// Issue 19, item 3: a command that ends under SIGTERM while its own child goes on in the
/// scratch filesystem (`sh -c 'dd ...; sync'`: the shell dies, `sync` does not) left the
/// testbed busy, and the tmpfs and image behind. fsynclab inherits such children and ends
/// them before undoing.
fn exec_ends_what_the_command_left_running_before_undoing() {
    let backing = common::backing();
    let work = tempfile::tempdir().unwrap();
    let state = PrivateState::new();
    let mut cmd = command(&["exec"], backing.path(), work.path(), &state);
    // The inner shell ignores nothing and holds the scratch filesystem as its directory.
    let script = "sh -c 'sleep 600' & echo ready >&2; wait";
    cmd.args(["--", "sh", "-c", script]);
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut run = cmd.spawn().expect("start fsynclab exec");
    let mut lines = StderrLines::of(&mut run);
    lines.wait_for("ready", &mut run, Duration::from_secs(60));
    send(&run, libc::SIGTERM);
    let code = wait_at_most(&mut run, Duration::from_secs(120)).code();
    let stderr = lines.all();
    assert_eq!(code, Some(143), "the command's status: {stderr}");
    assert!(stderr.contains("the command ended and left sh (pid"), "{stderr}");
    assert!(!stderr.contains("could not undo"), "{stderr}");
    assert_eq!(traces_under(backing.path()), Vec::<String>::new(), "left behind");
}

/// Issue 16: a child that has exited but was not reaped (a zombie, handed to fsynclab when
/// its parent ended first; PostgreSQL's server after `pg_ctl stop`) was said to be left
/// running ("the command ended and left sh (pid N) running"). It is reaped silently.
fn exec_says_nothing_of_children_that_already_exited() {
    let backing = common::backing();
    let work = tempfile::tempdir().unwrap();
    let state = PrivateState::new();
    let mut cmd = command(&["exec"], backing.path(), work.path(), &state);
    // `true` exits at once, a child of what becomes `sleep`, which never reaps it; when
    // `sleep` ends, fsynclab inherits the zombie.
    cmd.args(["--", "sh", "-c", "true & exec sleep 0.5"]);
    let out = cmd.output().expect("run fsynclab exec");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("left"), "{stderr}");
    assert_eq!(traces_under(backing.path()), Vec::<String>::new(), "left behind");
}

/// A command that leaves background jobs behind (`sh -c "true &"`, a daemon's double fork)
/// hands each to fsynclab, its subreaper; each that exits stayed a zombie of fsynclab's until
/// the command ended, so an hour of them filled the process table. They are reaped while the
/// command runs: the command itself counts fsynclab's zombie children (its parent's) and
/// waits up to 10 s for none to be left.
fn exec_reaps_the_orphans_its_command_leaves_while_it_runs() {
    let backing = common::backing();
    let work = tempfile::tempdir().unwrap();
    let state = PrivateState::new();
    let mut cmd = command(&["exec"], backing.path(), work.path(), &state);
    let script = r#"for i in $(seq 20); do sh -c 'true &'; done
zombies() { for s in /proc/[0-9]*/stat; do read -r _ _ st pp _ < "$s" 2>/dev/null && [ "$st" = Z ] && [ "$pp" = "$PPID" ] && echo; done | wc -l; }
echo "left=$(zombies)" >&2
for t in $(seq 100); do n=$(zombies); [ "$n" = 0 ] && break; sleep 0.1; done
echo "zombies=$n" >&2"#;
    cmd.args(["--", "sh", "-c", script]);
    let out = cmd.output().expect("run fsynclab exec");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("zombies=0"), "{stderr}");
    assert!(!stderr.contains("left sh"), "{stderr}");
    assert_eq!(traces_under(backing.path()), Vec::<String>::new(), "left behind");
}
