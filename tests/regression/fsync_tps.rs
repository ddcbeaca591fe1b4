//! Issue 8, items 4 and 7: fsync-tps's buffers are checked against memory for the whole run
//! before it starts, and rows cut short by a failed write are marked and left out.

use std::os::unix::process::CommandExt as _;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{self, fsynclab, leftovers};

/// Issue 8, item 4: fsync-tps buffers are checked for the whole run.
pub fn fsync_tps_buffers_are_checked_for_the_whole_run() {
    // Each buffer alone fits in half the RAM, the run's four together (three workers and the
    // calibration) do not: refused before anything is made, not aborted mid-run.
    let record_mib = common::mem_total() * 3 / 10 / (1 << 20);
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

/// Issue 8, item 7: fsync-tps rows cut short are marked and left out.
pub fn fsync_tps_rows_cut_short_are_marked_and_left_out() {
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
    let findings = common::strings(&r["findings"]);
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
