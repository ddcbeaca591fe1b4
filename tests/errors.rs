//! Issue 2: a read-only directory is refused in one line (as root), and failing writes
//! (EFBIG past a file size limit, as ENOSPC on a full disk) are counted and reported in
//! the result, never a panic.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Need::Root;
use common::{fsynclab, leftovers};

common::tests! {
    read_only_directory_is_refused_in_one_line: [Root],
    failed_writes_are_counted_and_reported_not_fatal,
}

/// A tmpfs mounted for one test, unmounted when dropped (even when the test fails).
struct TmpfsMount {
    dir: tempfile::TempDir,
}

impl TmpfsMount {
    fn new(options: &str) -> TmpfsMount {
        let dir = tempfile::Builder::new().prefix("fsynclab-test-").tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "fsynclab-test"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(ok.success(), "mount tmpfs -o {options} failed");
        TmpfsMount { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
}

impl Drop for TmpfsMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn mounted(path: &Path) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .contains(path.to_str().unwrap())
}

fn read_only_directory_is_refused_in_one_line() {
    let m = TmpfsMount::new("ro,size=16m");
    let out = fsynclab()
        .args(["probe", "--quiet", "--dir"])
        .arg(m.path())
        .assert()
        .code(2);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    // Issue 8, item 11: root is told the mount is read-only, not that it lacks permission.
    assert!(stderr.contains("read-only mount"), "{stderr}");
    let path = m.path();
    drop(m);
    assert!(!mounted(&path));
}

fn failed_writes_are_counted_and_reported_not_fatal() {
    use std::os::unix::process::CommandExt;
    // A file size limit makes every write past 512 KiB fail with EFBIG, as a full disk fails
    // with ENOSPC: the same path through the prober, without root.
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("fsynclab"));
    cmd.env("FSYNCLAB_STORE", "off"); // as common::fsynclab(): never the user's store
    cmd.args([
        "run",
        "overwrite-fsync",
        "--quiet",
        "--format",
        "json",
        "--set",
        "background=none",
    ])
    .args([
        "--set",
        "placement=append",
        "--set",
        "write_size=64k",
        "--set",
        "sleep=0",
    ])
    .args(["--set", "iterations=20", "--dir"])
    .arg(dir.path());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit {
                rlim_cur: 512 * 1024,
                rlim_max: 512 * 1024,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("12 calls failed (first: EFBIG from write"), "{stderr}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    common::assert_matches_schema(&r);
    assert_eq!(r["ops"]["write"]["count"], 20);
    assert_eq!(r["ops"]["write"]["errors"], 12);
    // Issue 8, item 8: only the 8 writes that succeeded count their bytes (8 x 64 KiB =
    // 512 KiB, the size limit), not the 12 that failed.
    assert_eq!(r["ops"]["write"]["bytes"], 8 * 65536);
    assert_eq!(
        r["ops"]["fsync"]["count"], 20,
        "the sync after a failed write is still made and timed"
    );
    let failed: Vec<_> = r["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["error"] == "EFBIG")
        .collect();
    assert_eq!(failed.len(), 12);
    assert!(
        leftovers(dir.path()).is_empty(),
        "work directory left behind after failed writes"
    );
}
