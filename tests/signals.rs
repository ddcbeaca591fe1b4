//! Issue 2: Ctrl-C (SIGINT) and SIGTERM stop the writers promptly, print what was measured,
//! remove the work directory, and exit with 128 + the signal number.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::leftovers;

fn interrupt_after(args: &[&str], dir: &std::path::Path, after: Duration, signal: i32) -> (i32, String, Duration) {
    let child = Command::new(assert_cmd::cargo::cargo_bin("fsynclab"))
        .env("FSYNCLAB_STORE", "off")
        .args(args)
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    let sent = Instant::now();
    // SAFETY: sending a signal to our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        sent.elapsed(),
    )
}

#[test]
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
    let (code, stdout, took) = interrupt_after(
        &[&args[..], &["--set", "file_size=64M"]].concat(),
        dir.path(),
        Duration::from_millis(1500),
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

#[test]
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
    let (code, stdout, took) = interrupt_after(&args, dir.path(), Duration::from_millis(700), libc::SIGTERM);
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
