//! Issue 15, item 2: `fsynclab run fsync-errors`, the fsyncgate sequence on each
//! filesystem. The tests assert what does not depend on the kernel — a failed writeback
//! makes some fsync report EIO on every filesystem, the disk's count of failed writes is
//! exactly what the calls met, a filesystem read-only or shut down is reported and torn
//! down, nothing is left behind — and print the rest (the table), which is the kernel's to
//! decide.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use common::Need::{Fuse, Root, Tool};
use common::{backing, fsynclab, traces_under};
use serde_json::Value;

common::tests! {
    a_failed_writeback_makes_some_fsync_report_eio_on_each_filesystem: [Root, Fuse, Tool("mkfs.ext4"), Tool("mkfs.xfs"), Tool("mkfs.btrfs")],
    a_disk_that_stops_taking_writes_leaves_each_filesystem_reported_and_torn_down: [Root, Fuse, Tool("mkfs.ext4"), Tool("mkfs.xfs"), Tool("mkfs.btrfs")],
    a_power_cut_after_a_failed_flush_is_recovered_from_on_each_filesystem: [Root, Fuse, Tool("mkfs.ext4"), Tool("mkfs.xfs"), Tool("mkfs.btrfs")],
    bad_fsync_errors_settings_are_one_line_errors,
    mount_options_the_kernel_refuses_are_refused_as_scratch_refuses_them: [Root, Fuse, Tool("mkfs.ext4")],
}

/// Runs `fsynclab run fsync-errors` with `sets` in `dir`, with a private state directory;
/// returns the result, after checking that it exited 0, printed its table, and left
/// nothing behind (nor anything for `fsynclab cleanup`).
fn fsync_errors(dir: &Path, sets: &[&str]) -> Value {
    let private = common::PrivateState::new();
    let _cleanup = common::CleanupOnDrop(private.path().to_path_buf());
    let report = tempfile::NamedTempFile::new().unwrap();
    let mut cmd = fsynclab();
    cmd.env(private.env().0, private.path())
        .args(["run", "fsync-errors", "--dir"])
        .arg(dir)
        .arg("-o")
        .arg(report.path());
    for set in sets {
        cmd.args(["--set", set]);
    }
    let out = cmd.timeout(Duration::from_secs(300)).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The rest is the kernel's: printed, for the reader of the test's output.
    let _ = writeln!(std::io::stderr(), "fsync-errors {}:\n{stdout}", sets.join(" "));

    let said = private.cleanup();
    assert!(said.contains("nothing to clean up"), "{said}");
    assert_eq!(traces_under(dir), Vec::<String>::new(), "left behind");
    let result = serde_json::from_str(&std::fs::read_to_string(report.path()).unwrap()).unwrap();
    common::assert_matches_schema(&result);
    result
}

/// The rows of a result, each checked to be measured, by filesystem.
fn rows(r: &Value) -> Vec<&Value> {
    let rows: Vec<&Value> = r["details"]["fsync-errors"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    for row in &rows {
        assert_eq!(row["outcome"], "measured", "{row}");
    }
    rows
}

/// The calls of the sequence that went to the disk, in order.
const CALLS: [&str; 6] = [
    "write",
    "first_fsync",
    "writeback",
    "second_fsync",
    "fd_before",
    "fd_after",
];

/// Issue 15: a failed writeback makes some fsync report EIO on each filesystem.
fn a_failed_writeback_makes_some_fsync_report_eio_on_each_filesystem() {
    let dir = backing();
    let r = fsync_errors(dir.path(), &[]);
    let rows = rows(&r);
    let names: Vec<&str> = rows.iter().map(|row| row["filesystem"].as_str().unwrap()).collect();
    assert_eq!(names, ["ext4:data=ordered", "ext4:data=journal", "xfs", "btrfs"]);
    for row in rows {
        let fs = &row["filesystem"];
        // The disk failed the block's write, and some fsync said so.
        let failed = row["disk_failed"].as_u64().unwrap();
        assert!(failed >= 1, "{fs}: the disk failed no write: {row}");
        let told = ["first_fsync", "writeback", "second_fsync", "fd_before"]
            .iter()
            .any(|call| row[call]["error"] == "EIO");
        assert!(told, "{fs}: no fsync reported EIO: {row}");
        // Every write the disk failed, it failed during one of the sequence's calls.
        let met: u64 = CALLS.iter().filter_map(|call| row[call]["disk_failed"].as_u64()).sum();
        assert_eq!(met, failed, "{fs}: failed writes met by the calls: {row}");
        // The row's filesystem was mounted again on a healthy disk.
        assert!(row["on_disk"].get("Ok").is_some(), "{fs}: {row}");
    }
}

/// Issue 15: a disk that stops taking writes leaves each filesystem reported and torn down.
fn a_disk_that_stops_taking_writes_leaves_each_filesystem_reported_and_torn_down() {
    // The journal and metadata fail too: whatever the kernel makes of it (read-only, shut
    // down), the run reports it and undoes every filesystem (checked in fsync_errors).
    let dir = backing();
    let r = fsync_errors(dir.path(), &["fault=disk"]);
    for row in rows(&r) {
        let fs = &row["filesystem"];
        let told = ["first_fsync", "second_fsync"]
            .iter()
            .any(|call| row[call].get("error").is_some());
        assert!(told, "{fs}: no fsync failed: {row}");
        assert!(row["state"]["state"].is_string(), "{fs}: {row}");
    }
    assert_eq!(r["details"]["fsync-errors"]["fault"], "disk");
}

/// Issue 15: a power cut after a failed flush is recovered from on each filesystem.
fn a_power_cut_after_a_failed_flush_is_recovered_from_on_each_filesystem() {
    // Issue 15, item 4: one cache flush fails, then the power is cut. Which flush fails
    // first (the fsync's own, or the journal commit's) is the kernel's timing, and so is
    // whether the filesystem goes read-only: printed. What holds: the disk failed exactly
    // one flush, the first fsync said so (EIO, or EROFS where it aborted the journal), the
    // power was cut, and the filesystem came back from the media.
    let dir = backing();
    let r = fsync_errors(dir.path(), &["fault=flush"]);
    for row in rows(&r) {
        let fs = &row["filesystem"];
        assert_eq!(row["fault"], "fail=flush:times=1", "{fs}");
        assert_eq!(row["disk_failed"], 1, "{fs}: one flush failed: {row}");
        assert_eq!(row["cut"]["trigger"], "now", "{fs}: the power was cut: {row}");
        assert!(row["on_disk"].get("Ok").is_some(), "{fs}: mounted after the cut: {row}");
        assert!(
            row["first_fsync"]["error"].is_string(),
            "{fs}: the failed flush was reported: {row}"
        );
    }
}

/// Issue 15: bad fsync errors settings are one-line errors.
fn bad_fsync_errors_settings_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (set, says) in [
        ("fs=ext4,zfs", "unknown filesystem 'zfs'"),
        ("device=ram", "the faults need an emulated disk"),
        ("device=nvme,fail=flush", "without fail="),
        ("fault=sector", "expected one of block, disk, flush"),
    ] {
        let out = fsynclab()
            .args(["run", "fsync-errors", "--set", set, "--dir"])
            .arg(dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{set}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{set}: {stderr}");
        assert!(stderr.contains(says), "{set}: {stderr}");
    }
    assert_eq!(common::leftovers(dir.path()), Vec::<String>::new());
}

/// Issue 24, item 8: `fsync-errors --set fs=ext4:data=bogus` exited 0 and stored a run whose
/// only row was "not measured", while `run --scratch ext4:data=bogus` exits 2. The same
/// options get the same answer: one line in `--scratch`'s words (exit status 2), before
/// anything is measured, no run stored, and nothing left behind — with the options on the
/// second filesystem of the list too.
fn mount_options_the_kernel_refuses_are_refused_as_scratch_refuses_them() {
    let dir = tempfile::tempdir().unwrap();
    let stores = tempfile::tempdir().unwrap();
    let private = common::PrivateState::new();
    let _cleanup = common::CleanupOnDrop(private.path().to_path_buf());
    // --dir for fsync-errors, --backing for --scratch: the scratch filesystems go there.
    let refusal = |args: &[&str], store: &str| {
        let out = fsynclab()
            .env(private.env().0, private.path())
            .args(args)
            .arg(dir.path())
            .arg("--store")
            .arg(stores.path().join(store))
            .timeout(Duration::from_secs(300))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(!stderr.contains("stored as run"), "{args:?}: {stderr}");
        assert_eq!(traces_under(dir.path()), Vec::<String>::new(), "{args:?}: left behind");
        let runs = fsynclab()
            .args(["runs", "--format", "json", "--store"])
            .arg(stores.path().join(store))
            .output()
            .unwrap();
        let listed: Value = serde_json::from_slice(&runs.stdout).unwrap_or(Value::Array(Vec::new()));
        assert_eq!(listed, Value::Array(Vec::new()), "{args:?}: a run was stored");
        stderr
    };
    let scratch = refusal(
        &["run", "overwrite-fsync", "--scratch", "ext4:data=bogus", "--backing"],
        "scratch.sqlite",
    );
    let why = |said: &str| {
        // `Error: OPTION: what the kernel said (the command ...)`: the words after the option.
        said.splitn(3, ": ")
            .nth(2)
            .unwrap()
            .split(" (")
            .next()
            .unwrap()
            .to_string()
    };
    assert!(scratch.starts_with("Error: --scratch ext4:data=bogus: "), "{scratch}");
    for fs in ["ext4:data=bogus", "ext4,ext4:data=bogus"] {
        let set = format!("fs={fs}");
        let said = refusal(&["run", "fsync-errors", "--set", &set, "--dir"], "errors.sqlite");
        assert!(said.starts_with("Error: --set fs=ext4:data=bogus: "), "{said}");
        assert_eq!(why(&said), why(&scratch), "{said}\n{scratch}");
    }
    let said = private.cleanup();
    assert!(said.contains("nothing to clean up"), "{said}");
}
