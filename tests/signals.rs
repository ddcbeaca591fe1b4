//! Issue 2: Ctrl-C (SIGINT) and SIGTERM stop the writers promptly, print what was measured,
//! remove the work directory, and exit with 128 + the signal number.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::leftovers;

common::tests! {
    ctrl_c_while_probing_reports_the_partial_run_and_cleans_up,
    sigterm_during_random_file_setup_cleans_up,
}

/// Runs fsynclab with `args` in `dir`, and sends `signal` once it has written into the file
/// `written` of its work directory (so that the signal finds it where the test means it to,
/// whatever the machine's load). Returns the exit code, stdout, and the time from the
/// signal to the end.
fn interrupt_once_written(args: &[&str], dir: &std::path::Path, written: &str, signal: i32) -> (i32, String, Duration) {
    let mut child = common::with_default_signals(&mut Command::new(common::bin()))
        .env("FSYNCLAB_STORE", "off")
        .args(args)
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    common::wait_until_measuring(dir, written, &mut child);
    let sent = Instant::now();
    common::send(&child, signal);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        sent.elapsed(),
    )
}

fn ctrl_c_while_probing_reports_the_partial_run_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "run",
        "overwrite-fsync",
        "--quiet",
        "--set",
        "duration=60s",
        "--set",
        "sleep=200ms",
    ];
    // Once the prober has written its first block: it is probing.
    let (code, stdout, took) = interrupt_once_written(
        &[&args[..], &["--set", "file_size=64M"]].concat(),
        dir.path(),
        common::PROBE_FILE,
        libc::SIGINT,
    );
    assert_eq!(code, 130, "{stdout}");
    assert!(stdout.starts_with("overwrite-fsync  (interrupted)"), "{stdout}");
    assert!(stdout.contains("background stream:"), "{stdout}");
    assert!(took < Duration::from_secs(5), "took {took:?} to stop");
    assert!(
        leftovers(dir.path()).is_empty(),
        "work directory left behind: {:?}",
        leftovers(dir.path())
    );
}

fn sigterm_during_random_file_setup_cleans_up() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let args = [
        "run",
        "random-writeback",
        "--quiet",
        "--format",
        "json",
        "--set",
        "random_file_size=8G",
    ];
    // Once the random file has data: its setup (8 GiB) is under way.
    let (code, stdout, took) = interrupt_once_written(&args, dir.path(), "fsync-tester.rnd-file", libc::SIGTERM);
    assert_eq!(code, 143, "{stdout}");
    let r: serde_json::Value = serde_json::from_str(&stdout).expect("partial result is still JSON");
    assert_eq!(r["interrupted"], true);
    assert!(took < Duration::from_secs(10), "took {took:?} to stop");
    assert!(
        leftovers(dir.path()).is_empty(),
        "work directory left behind: {:?}",
        leftovers(dir.path())
    );
}
