//! Issue 8, the items that need no root: a run's buffers checked against memory in all
//! (item 4), fsync-tps rows cut short by a full disk (item 7), output places checked before
//! anything is measured (item 9), and a reader that goes away (item 10). Items 1-3, 5 and 12
//! are in tests/safety.rs, item 6 beside the result writer, items 8 and 11 in tests/errors.rs
//! and tests/scratch.rs.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::io::{BufRead as _, BufReader};
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{fsynclab, leftovers, TINY};

common::tests! {
    fsync_tps_buffers_are_checked_for_the_whole_run,
    fsync_tps_rows_cut_short_are_marked_and_left_out,
    output_places_are_checked_before_measuring,
    a_reader_that_goes_away_ends_the_run_quietly,
}

/// MemTotal in bytes.
fn mem_total() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib * 1024
}

/// Issue 8, item 4: fsync tps buffers are checked for the whole run.
fn fsync_tps_buffers_are_checked_for_the_whole_run() {
    // Each buffer alone fits in half the RAM, the run's four together (three workers and the
    // calibration) do not: refused before anything is made, not aborted mid-run.
    let record_mib = mem_total() * 3 / 10 / (1 << 20);
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = fsynclab()
        .args(["run", "fsync-tps", "--set", "threads=3", "--set"])
        .arg(format!("record_size={record_mib}M"))
        .arg("--set")
        .arg(format!("file_size={record_mib}M"))
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("workers each hold such a buffer") && stderr.contains("lower record_size or the thread count"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(leftovers(dir.path()).is_empty());
}

/// Issue 8, item 7: fsync tps rows cut short are marked and left out.
fn fsync_tps_rows_cut_short_are_marked_and_left_out() {
    // A 256 KiB file size limit cuts every row short with EFBIG, as a full disk does with
    // ENOSPC. Once, such a row claimed 273,488 tps and won the comparison.
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("fsynclab"));
    cmd.env("FSYNCLAB_STORE", "off")
        .args(["run", "fsync-tps", "--format", "json", "--quiet"])
        .args(["--set", "placement=append", "--set", "duration=1s"])
        .args(["--set", "threads=1,2", "--set", "coordination=none,wal", "--dir"])
        .arg(dir.path());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit {
                rlim_cur: 256 << 10,
                rlim_max: 256 << 10,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "failed calls fail the run: {stderr}");
    assert!(stderr.contains("EFBIG"), "{stderr}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    common::assert_matches_schema(&r);
    let findings: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(
        findings
            .iter()
            .any(|f| f.starts_with("rows with failed calls, left out of every comparison")),
        "{findings:?}"
    );
    assert!(
        findings.iter().all(|f| !f.contains("best coordination")),
        "no comparison is made from rows cut short: {findings:?}"
    );
    assert!(leftovers(dir.path()).is_empty());
}

/// Issue 8, item 9: output places are checked before measuring.
fn output_places_are_checked_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(Vec<String>, &str); 3] = [
        (
            vec!["--output".into(), "/nonexistent/x.json".into()],
            "the directory /nonexistent does not exist",
        ),
        (
            vec!["--output".into(), dir.path().display().to_string()],
            "is a directory; name a file",
        ),
        (
            vec!["--output".into(), "/proc/x.json".into()],
            // Root may write into /proc's directory, but cannot make a file there; another
            // user is told first that it may not write there.
            if common::is_root() {
                "cannot make a file in /proc"
            } else {
                "cannot write into /proc (this user may not write there)"
            },
        ),
    ];
    for (args, expected) in cases {
        let started = Instant::now();
        let out = fsynclab()
            .args(["run", "overwrite-fsync", "--set", "duration=10s", "--dir"])
            .arg(dir.path())
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(started.elapsed() < Duration::from_secs(5), "{args:?}: measured first");
        assert!(leftovers(dir.path()).is_empty());
    }
    // The suite's results directory too: here a file stands where it should be made.
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"").unwrap();
    let started = Instant::now();
    let out = fsynclab()
        .args(["suite", "--quiet", "--dir"])
        .arg(dir.path())
        .arg("--results")
        .arg(file.join("results"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--results"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(5), "measured first: {stderr}");
}

/// Issue 8, item 10: a reader that goes away ends the run quietly.
fn a_reader_that_goes_away_ends_the_run_quietly() {
    // `fsynclab run ... --format seed | head -2`: once panicked with exit 101.
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("fsynclab"))
        .env("FSYNCLAB_STORE", "off")
        .args([
            "run",
            "overwrite-fsync",
            "--format",
            "seed",
            "--set",
            "duration=20s",
            "--dir",
        ])
        .arg(dir.path())
        .args(&TINY[..TINY.len() - 1])
        .args(["--set", "duration=20s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for _ in 0..2 {
        lines.next().unwrap().unwrap();
    }
    drop(lines); // head -2 exits
    let started = Instant::now();
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(141), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the run stops soon after its reader goes, not at its end"
    );
    assert!(leftovers(dir.path()).is_empty());
}
