//! Regression tests: cases that guard an issue, found by a hostile run or a review, each
//! named for what a user now sees and citing its issue in its doc comment (ripgrep's
//! tests/regression.rs). The other files under tests/ are by feature.
//!
//! Issue 19: the holes a hostile run of the store, matrix, compare, report and `-o` found.
//! Each test reproduces one as the issue describes it and checks what a user now sees.
//!
//! Issue 8, the items that need no root: a run's buffers checked against memory in all
//! (item 4), fsync-tps rows cut short by a full disk (item 7), output places checked before
//! anything is measured (item 9), and a reader that goes away (item 10). Items 1-3, 5 and 12
//! are in tests/safety.rs, item 6 beside the result writer, items 8 and 11 in tests/errors.rs
//! and tests/scratch.rs.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fsynclab::store::{RunFilter, RunId, Store};
use serde_json::{json, Value};

use common::Need::{Root, That, Tool};
use common::{fsynclab, leftovers, TINY};

common::tests! {
    output_never_replaces_a_device_node: [Root],
    output_follows_links_and_writes_into_fifos,
    output_onto_the_store_in_use_is_refused,
    a_foreign_database_is_refused_unchanged,
    concurrent_first_use_of_a_new_store_keeps_every_run,
    an_immutable_store_is_refused_before_measuring: [
        Root,
        Tool("chattr"),
        That("chattr +i on the filesystem of the temporary directory", immutable_files_here),
    ],
    a_store_reads_without_write_access: [Root, Tool("mount"), Tool("setpriv")],
    compare_counts_a_run_named_again_once_and_says_so,
    large_ranges_work_or_get_a_one_line_error,
    compare_of_different_scenarios_says_so_first,
    runs_parses_dates_strictly_and_compares_parameters_by_value,
    matrix_input_and_plans_are_bounded,
    matrix_values_spelled_differently_are_one_value,
    concurrent_resumes_make_each_run_once,
    fsync_tps_buffers_are_checked_for_the_whole_run,
    fsync_tps_rows_cut_short_are_marked_and_left_out,
    output_places_are_checked_before_measuring,
    a_reader_that_goes_away_ends_the_run_quietly,
}

// ---- Issue 19: the holes a hostile run found ----

/// A result of an fsync-bound run of `scenario` with parameters `params`, whose fsync takes
/// about `fsync_ms` (no samples: the store keeps what a run's head holds).
fn result(scenario: &str, params: Value, fsync_ms: f64, started_at: &str) -> Value {
    let p50 = fsync_ms * 1e6;
    json!({
        "schema_version": 1, "scenario": scenario, "started_at": started_at,
        "duration_s": 3.0, "interrupted": false, "params": params,
        "environment": {"fsynclab_version": "0.1.0", "kernel": "6.1.0", "cpus": 2, "memory_bytes": 8u64 << 30,
                        "target": "/work", "filesystem": null, "device": null, "sysctls": {}},
        "ops": {"fsync": {"count": (3000.0 / fsync_ms) as u64, "errors": 0, "bytes": 0, "latency_ns": {
            "min": (p50 * 0.9) as u64, "p50": p50 as u64, "p90": (p50 * 1.1) as u64,
            "p99": (p50 * 1.3) as u64, "p999": (p50 * 1.5) as u64, "max": (p50 * 2.0) as u64,
            "mean": p50 as u64}}},
        "background": null
    })
}

const NO_SAMPLES: &[(u64, &str, u64, u64, Option<&str>)] = &[];

/// A store at `path` holding `n` overwrite-fsync runs (ids 1..=n), fsync 1 ms and up.
fn store_with_runs(path: &Path, n: usize) {
    let mut store = Store::open(path).unwrap();
    for i in 0..n {
        let r = result(
            "overwrite-fsync",
            json!({"sleep": "1s", "sync": "fsync"}),
            1.0 + i as f64 * 0.01,
            &format!("2026-11-22T09:{:02}:00Z", i % 60),
        );
        store.record_run(&r, NO_SAMPLES, None).unwrap();
    }
}

/// Runs fsynclab with `args`: exit status, stdout, stderr.
fn run(args: &[&str]) -> (i32, String, String) {
    run_in(Path::new("."), args)
}

/// Runs fsynclab with `args` in `cwd`: exit status, stdout, stderr.
fn run_in(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let out = fsynclab().current_dir(cwd).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `args` must be refused as bad input: exit status 2, one line on stderr containing `says`.
fn refused(args: &[&str], says: &str) {
    refused_in(Path::new("."), args, says)
}

fn refused_in(cwd: &Path, args: &[&str], says: &str) {
    let (code, _, err) = run_in(cwd, args);
    assert_eq!(code, 2, "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line: {err}");
    assert!(err.contains(says), "{args:?}: {err}");
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The number of runs `fsynclab runs` lists in `store`.
fn listed(store: &Path) -> usize {
    let (code, out, err) = run(&["runs", "--store", s(store), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str::<Vec<Value>>(&out).unwrap().len()
}

fn mknod(path: &Path, mode: libc::mode_t, major: u32, minor: u32) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string; mknod reads nothing else.
    let rc = unsafe { libc::mknod(c.as_ptr(), mode | 0o666, libc::makedev(major, minor)) };
    assert_eq!(rc, 0, "mknod {}: {}", path.display(), std::io::Error::last_os_error());
}

/// Issue 19, item 1: as root, `export -o`, `report -o` and `exec --output` replaced a device node
/// with a regular file (it replaced /dev/full on the test machine). They write into it now, and a
/// block device (a disk) is refused.
fn output_never_replaces_a_device_node() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("S.sqlite");
    store_with_runs(&store, 1);
    let node = tmp.path().join("null");
    mknod(&node, libc::S_IFCHR, 1, 3);
    let is_null = |p: &Path| {
        let md = std::fs::symlink_metadata(p).unwrap();
        md.file_type().is_char_device() && md.rdev() == libc::makedev(1, 3)
    };
    for args in [
        vec!["export", "1", "-o", s(&node), "--store", s(&store)],
        vec!["report", "1", "-o", s(&node), "--store", s(&store)],
        vec!["exec", "--dir", s(tmp.path()), "--output", s(&node), "--", "true"],
    ] {
        let (code, _, err) = run(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(is_null(&node), "{args:?} replaced the device node");
    }
    // A full device: refused before anything is written (issue 24: a device that takes no
    // writes is found by the check every `-o` goes through), and the node stays.
    let full = tmp.path().join("full");
    mknod(&full, libc::S_IFCHR, 1, 7);
    let (code, _, err) = run(&["export", "1", "-o", s(&full), "--store", s(&store)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("takes no writes (No space left"), "{err}");
    assert!(std::fs::symlink_metadata(&full).unwrap().file_type().is_char_device());
    // A block device is never written.
    let disk = tmp.path().join("disk");
    mknod(&disk, libc::S_IFBLK, 7, 250);
    refused(&["export", "1", "-o", s(&disk), "--store", s(&store)], "block device");
    assert!(std::fs::symlink_metadata(&disk).unwrap().file_type().is_block_device());
}

/// Issue 19, item 1: a symlink (to /proc/self/fd/1, to a file) and a FIFO were replaced by a
/// regular file. A link is followed as `cp` and `tee` follow it; a FIFO is written into.
fn output_follows_links_and_writes_into_fifos() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("S.sqlite");
    store_with_runs(&store, 1);

    // A link to the process's stdout: the run comes out there.
    let stdout_link = tmp.path().join("out");
    std::os::unix::fs::symlink("/proc/self/fd/1", &stdout_link).unwrap();
    let (code, out, err) = run(&["export", "1", "-o", s(&stdout_link), "--store", s(&store)]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["scenario"],
        "overwrite-fsync"
    );
    assert!(std::fs::symlink_metadata(&stdout_link)
        .unwrap()
        .file_type()
        .is_symlink());

    // A link to a file: the file gets the run, the link stays a link.
    let file = tmp.path().join("real.json");
    std::fs::write(&file, "old").unwrap();
    let link = tmp.path().join("link.json");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    let (code, _, err) = run(&["export", "1", "-o", s(&link), "--store", s(&store)]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    let back: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(back["scenario"], "overwrite-fsync");

    // A FIFO: its reader gets the run; with no reader, a one-line refusal, never a wait.
    let fifo = tmp.path().join("fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    refused(
        &["export", "1", "-o", s(&fifo), "--store", s(&store)],
        "no process reads",
    );
    // Opened read-write, the FIFO has its reader before fsynclab starts (and never blocks).
    let mut reader = std::fs::OpenOptions::new().read(true).write(true).open(&fifo).unwrap();
    let (code, _, err) = run(&["export", "1", "-o", s(&fifo), "--store", s(&store)]);
    assert_eq!(code, 0, "{err}");
    let mut buf = vec![0u8; 1 << 16];
    let n = std::io::Read::read(&mut reader, &mut buf).unwrap();
    let back: Value = serde_json::from_slice(&buf[..n]).unwrap();
    assert_eq!(back["scenario"], "overwrite-fsync");
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());

    // A link that leads nowhere is refused, not made to create its target.
    let dangling = tmp.path().join("dangling");
    std::os::unix::fs::symlink(tmp.path().join("no/such.json"), &dangling).unwrap();
    refused(
        &["export", "1", "-o", s(&dangling), "--store", s(&store)],
        "which does not exist",
    );
}

/// Issue 19, item 2: `export 1 -o S.sqlite --store S.sqlite` exited 0 and every run was gone;
/// `report -o` and `run --output` did the same. The store is refused by any name (a hard link, a
/// symlink, its -wal file), before anything is measured.
fn output_onto_the_store_in_use_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("S.sqlite");
    store_with_runs(&store, 3);
    let hard = tmp.path().join("hard.sqlite");
    std::fs::hard_link(&store, &hard).unwrap();
    let soft = tmp.path().join("soft.json");
    std::os::unix::fs::symlink("S.sqlite", &soft).unwrap();
    let dotted = format!("{}/./S.sqlite", s(tmp.path()));
    for out in [s(&store), s(&hard), s(&soft), dotted.as_str()] {
        refused(&["export", "1", "-o", out, "--store", s(&store)], "results store");
        refused(&["report", "1-3", "-o", out, "--store", s(&store)], "results store");
    }
    // The store's write-ahead log, while another process holds the store open.
    let open = rusqlite_like_holder(&store);
    let wal = PathBuf::from(format!("{}-wal", s(&store)));
    assert!(wal.exists(), "the store is in WAL mode while open");
    refused(&["export", "1", "-o", s(&wal), "--store", s(&store)], "write-ahead log");
    drop(open);
    // A run: refused before it measures anything.
    let work = tempfile::tempdir().unwrap();
    let t0 = std::time::Instant::now();
    refused(
        &[
            "run",
            "overwrite-fsync",
            "--dir",
            s(work.path()),
            "--set",
            "duration=5s",
            "--quiet",
            "--store",
            s(&store),
            "--output",
            s(&hard),
        ],
        "results store",
    );
    assert!(t0.elapsed().as_secs() < 5, "refused before measuring");
    assert_eq!(listed(&store), 3, "every run is still there");
}

/// Holds the store open (as a running matrix would), so that its -wal file exists.
fn rusqlite_like_holder(path: &Path) -> Store {
    Store::open(path).unwrap()
}

/// Issue 19, item 4: `runs --store other.sqlite` said it is not a results store, but left the file
/// switched to WAL. A foreign database is refused unchanged, by reading and recording alike.
fn a_foreign_database_is_refused_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let other = tmp.path().join("other.sqlite");
    {
        let conn = rusqlite::Connection::open(&other).unwrap();
        conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');")
            .unwrap();
    }
    let before = std::fs::read(&other).unwrap();
    let work = tempfile::tempdir().unwrap();
    for args in [
        vec!["runs", "--store", s(&other)],
        vec!["show", "1", "--store", s(&other)],
        vec![
            "run",
            "overwrite-fsync",
            "--dir",
            s(work.path()),
            "--set",
            "duration=1s",
            "--quiet",
            "--store",
            s(&other),
        ],
        vec![
            "matrix",
            "overwrite-fsync",
            "--axis",
            "sync=fsync,fdatasync",
            "--repeat",
            "1",
            "--dir",
            s(work.path()),
            "--set",
            "duration=1s",
            "--quiet",
            "--store",
            s(&other),
        ],
    ] {
        refused(&args, "not a fsynclab results store");
        assert!(std::fs::read(&other).unwrap() == before, "{args:?} changed the file");
        let names = common::leftovers(tmp.path());
        assert_eq!(names, ["other.sqlite"], "{args:?} left {names:?}");
    }
}

/// Issue 19, item 7: four runs started at once on a new store lost 1-3 runs in 9 of 10 tries
/// (`table schema_version already exists`, "... not a fsynclab results store"). Eight at once, five
/// times: every run is stored.
fn concurrent_first_use_of_a_new_store_keeps_every_run() {
    const PROCESSES: usize = 8;
    const TRIES: usize = 5;
    let work = tempfile::tempdir().unwrap();
    for attempt in 0..TRIES {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("new.sqlite");
        let children: Vec<_> = (0..PROCESSES)
            .map(|_| {
                std::process::Command::new(common::bin())
                    .args(["run", "overwrite-fsync", "--quiet", "--dir", s(work.path())])
                    .args([
                        "--set",
                        "duration=200ms",
                        "--set",
                        "sleep=20ms",
                        "--set",
                        "file_size=1M",
                    ])
                    .args(["--store", s(&store)])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "try {attempt}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert_eq!(listed(&store), PROCESSES, "try {attempt}: every run is stored");
    }
}

/// Whether a file of the temporary directory can be made immutable (ext4, xfs, btrfs and
/// tmpfs since Linux 6.0 can; overlayfs over some cannot).
fn immutable_files_here() -> bool {
    let Ok(dir) = tempfile::tempdir() else {
        return false;
    };
    let file = dir.path().join("f");
    let chattr = |flag: &str| {
        std::process::Command::new("chattr")
            .arg(flag)
            .arg(&file)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    std::fs::write(&file, b"").is_ok() && chattr("+i") && chattr("-i")
}

/// Undoes `chattr +i` when dropped, so that the test's directory can be removed.
struct Immutable<'a>(&'a Path);

impl Drop for Immutable<'_> {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr").arg("-i").arg(self.0).status();
    }
}

/// Issue 19, item 11: an immutable store (`chattr +i`) passed the writability check; the run was
/// measured, then not stored. It is refused before anything is measured, in one line.
fn an_immutable_store_is_refused_before_measuring() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("S.sqlite");
    store_with_runs(&store, 1);
    let made = std::process::Command::new("chattr").arg("+i").arg(&store).status();
    assert!(made.is_ok_and(|s| s.success()), "chattr +i {}", store.display());
    let _undo = Immutable(&store);
    let work = tempfile::tempdir().unwrap();
    let t0 = std::time::Instant::now();
    refused_in(
        work.path(),
        &[
            "run",
            "overwrite-fsync",
            "--dir",
            s(work.path()),
            "--set",
            "duration=5s",
            "--quiet",
            "--store",
            s(&store),
        ],
        "cannot be written",
    );
    assert!(t0.elapsed().as_secs() < 5, "refused before measuring");
    assert!(common::leftovers(work.path()).is_empty(), "nothing was kept elsewhere");
    // And it still reads.
    assert_eq!(listed(&store), 1);
}

/// Unmounts a bind mount when dropped.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// Issue 19, item 12: `runs` on a store on a read-only mount, or a user reading root's 0444 store
/// in a directory they cannot write, failed ("unable to open database file", "attempt to write a
/// readonly database"). Reading needs no write access.
fn a_store_reads_without_write_access() {
    let tmp = tempfile::Builder::new().prefix("fsynclab-test-ro-").tempdir().unwrap();
    let dir = tmp.path().join("store");
    std::fs::create_dir(&dir).unwrap();
    let store = dir.join("S.sqlite");
    store_with_runs(&store, 3);
    assert_eq!(common::leftovers(&dir), ["S.sqlite"], "closed cleanly, no -wal or -shm");
    let reads = |store: &Path, as_nobody: bool| {
        let bin = common::bin();
        for args in [
            vec!["runs", "--store", s(store)],
            vec!["export", "3", "--store", s(store)],
            vec!["compare", "1", "2-3", "--store", s(store)],
        ] {
            let mut cmd = match as_nobody {
                true => {
                    let mut c = std::process::Command::new("setpriv");
                    c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(&bin);
                    c
                }
                false => std::process::Command::new(&bin),
            };
            let out = cmd.args(&args).env("FSYNCLAB_STORE", "off").output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{args:?} (as nobody: {as_nobody}): {err}");
        }
    };

    // A read-only mount.
    let ro = tmp.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let mount = |args: &[&str]| {
        std::process::Command::new("mount")
            .args(args)
            .status()
            .unwrap()
            .success()
    };
    assert!(mount(&["--bind", s(&dir), s(&ro)]));
    let guard = Mounted(ro.clone());
    assert!(mount(&["-o", "remount,bind,ro", s(&ro)]));
    reads(&ro.join("S.sqlite"), false);
    drop(guard);

    // Another user, a 0444 file in a directory they may not write.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o444)).unwrap();
    reads(&store, true);
    assert_eq!(common::leftovers(&dir), ["S.sqlite"]);
}

/// Writes `result` as a result file at `path`.
fn result_file(path: &Path, result: &Value) {
    std::fs::write(path, serde_json::to_vec(result).unwrap()).unwrap();
}

/// Issue 19, item 9: `compare r3.json,r3.json,... r4.json,...` counted one file given five times as
/// five runs and said "slower, p=0.0079". A run named again is counted once, and it says so.
fn compare_counts_a_run_named_again_once_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let (r3, r4) = (tmp.path().join("r3.json"), tmp.path().join("r4.json"));
    let params = json!({"sleep": "1s"});
    result_file(
        &r3,
        &result("overwrite-fsync", params.clone(), 1.0, "2026-11-22T09:00:00Z"),
    );
    result_file(&r4, &result("overwrite-fsync", params, 2.0, "2026-11-22T09:01:00Z"));
    let copy = tmp.path().join("r3-copy.json");
    std::fs::copy(&r3, &copy).unwrap();
    let five = |p: &Path| [s(p); 5].join(",");
    let a = format!("{},{}", five(&r3), s(&copy));
    let (code, out, err) = run(&["compare", &a, &five(&r4)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("(1 run; 5 named again, counted once)"), "{out}");
    assert!(out.contains("(1 run; 4 named again, counted once)"), "{out}");
    assert!(!out.contains("B is slower"), "one run a side gives no verdict: {out}");

    // A stored run and its export are one run too; a run in both sets is said to be.
    let store = tmp.path().join("S.sqlite");
    store_with_runs(&store, 3);
    let e1 = tmp.path().join("e1.json");
    let (code, _, err) = run(&["export", "1", "-o", s(&e1), "--store", s(&store)]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(&["compare", &format!("1,{}", s(&e1)), "1-3", "--store", s(&store)]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("A: ") && out.contains("(1 run; 1 named again, counted once)"),
        "{out}"
    );
    assert!(out.contains("in both sets: "), "{out}");
}

/// Issue 19, item 10: `compare 1-32767 1-3` and `report 1-999999` exited 1 with SQLite's "variable
/// number must be between ?1 and ?32766". A range is one condition, never expanded, so a
/// range past the last run is a one-line error naming the first missing id; a list of more
/// ids than SQLite takes variables is read in groups.
fn large_ranges_work_or_get_a_one_line_error() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("S.sqlite");
    store_with_runs(&store, 40);
    refused(
        &["compare", "1-32767", "1-3", "--store", s(&store)],
        "no run 41 in the results store",
    );
    let page = tmp.path().join("r.html");
    refused(
        &["report", "1-999999", "-o", s(&page), "--store", s(&store)],
        "no run 41",
    );
    assert!(!page.exists());
    let (code, out, err) = run(&["compare", "1-20", "21-40", "--format", "json", "--store", s(&store)]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["figures"][0]["runs_a"].as_u64(), v["figures"][0]["runs_b"].as_u64()),
        (Some(20), Some(20))
    );

    // 40,000 runs (39,960 more in one statement), listed by 40,000 ids.
    {
        let conn = rusqlite::Connection::open(&store).unwrap();
        conn.execute_batch(
            "WITH RECURSIVE n(i) AS (SELECT 41 UNION ALL SELECT i + 1 FROM n WHERE i < 40000)
             INSERT INTO runs (uid, scenario, started_at, recorded_at, duration_s, interrupted,
                 result_schema_version, params, environment, ops, background, tables, findings,
                 extra, sample_count)
             SELECT 'u' || i, 'overwrite-fsync', strftime('%Y-%m-%dT%H:%M:%SZ', 1800000000 + 60 * i, 'unixepoch'),
                 '2026-11-22T09:00:00Z', 3.0, 0, 1, '{}', '{}', '{}', NULL, '[]', '[]', '{}', 0
             FROM n;",
        )
        .unwrap();
    }
    let store = Store::open(&store).unwrap();
    let ids: Vec<RunId> = (1..=40_000).map(RunId).collect();
    let found = store
        .runs(&RunFilter {
            ids: ids.clone(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(found.iter().map(|r| r.id).collect::<Vec<_>>(), ids);
}

/// Issue 19, item 13: `compare` of runs of different scenarios listed the parameters that differ
/// but never said the scenarios did. It refuses, in one line, unless --across-scenarios, and then
/// says so first.
fn compare_of_different_scenarios_says_so_first() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a.json"), tmp.path().join("b.json"));
    result_file(&a, &result("overwrite-fsync", json!({}), 1.0, "2026-11-22T09:00:00Z"));
    result_file(&b, &result("fsync-tps", json!({}), 1.0, "2026-11-22T09:01:00Z"));
    refused(
        &["compare", s(&a), s(&b)],
        "A is overwrite-fsync, B is fsync-tps: runs of different scenarios",
    );
    let (code, out, err) = run(&["compare", s(&a), s(&b), "--across-scenarios"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.lines().next(),
        Some("scenarios differ: A is overwrite-fsync, B is fsync-tps"),
        "{out}"
    );
}

/// Issue 19, item 14: `runs --since garbage` was accepted and matched nothing; `--param sleep=0`
/// missed runs stored as `0s`. Dates are parsed strictly; parameters compare by value.
fn runs_parses_dates_strictly_and_compares_parameters_by_value() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("S.sqlite");
    {
        let mut st = Store::open(&store).unwrap();
        for (sleep, size, start) in [
            ("0s", "1G", "2026-11-20T10:00:00Z"),
            ("250ms", "1024M", "2026-11-21T10:00:00Z"),
            ("1s", "4G", "2026-11-22T10:00:00Z"),
        ] {
            let r = result(
                "overwrite-fsync",
                json!({"sleep": sleep, "file_size": size}),
                1.0,
                start,
            );
            st.record_run(&r, NO_SAMPLES, None).unwrap();
        }
    }
    let ids = |args: &[&str]| -> Vec<u64> {
        let mut all = vec!["runs", "--format", "json", "--store", s(&store)];
        all.extend_from_slice(args);
        let (code, out, err) = run(&all);
        assert_eq!(code, 0, "{args:?}: {err}");
        serde_json::from_str::<Vec<Value>>(&out)
            .unwrap()
            .iter()
            .map(|r| r["id"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(ids(&["--param", "sleep=0"]), [1]);
    assert_eq!(ids(&["--param", "sleep=0.25s"]), [2]);
    assert_eq!(ids(&["--param", "file_size=1024M"]), [1, 2]);
    assert_eq!(ids(&["--param", "file_size=1G", "--last", "1"]), [2]);
    assert_eq!(ids(&["--since", "2026-11-21"]), [2, 3]);
    assert_eq!(ids(&["--since", "2026-11-21T11:00:00+01:00"]), [2, 3]);
    assert_eq!(ids(&["--since", "2026-11-21T10:00:01Z"]), [3]);
    for bad in ["garbage", "2026-02-30", "2026-11-21 10:00"] {
        refused(
            &["runs", "--store", s(&store), "--since", bad],
            "expected a date (2026-11-22)",
        );
    }
    refused(
        &["runs", "--store", s(&store), "--param", "sleep=abc"],
        "--param sleep=abc: expected a duration",
    );
}

/// `args` must be refused within 20 s (a regression must not hang the suite), as bad
/// input: exit status 2, one line on stderr containing `says`.
fn refused_quickly(args: &[&str], says: &str) {
    let t0 = std::time::Instant::now();
    let out = fsynclab()
        .args(args)
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?} (after {:?}): {err}", t0.elapsed());
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line: {err}");
    assert!(err.contains(says), "{args:?}: {err}");
    assert!(t0.elapsed().as_secs() < 5, "{args:?} took {:?}", t0.elapsed());
}

/// Issue 19, item 5: `matrix --file /dev/zero --dry-run` grew by 850 MB/s, `--file FIFO` blocked
/// for ever, a 100x100x100 plan with `--repeat 1000 --dry-run` printed nothing for 10 minutes at 16
/// GB. Files are bounded and regular; a plan is counted before it is built, and one past the stated
/// limit needs --yes.
fn matrix_input_and_plans_are_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("plan.toml");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    refused_quickly(
        &["matrix", "--file", "/dev/zero", "--dry-run"],
        "a device, not a matrix file",
    );
    refused_quickly(
        &["matrix", "--file", s(&fifo), "--dry-run"],
        "a FIFO, not a matrix file",
    );
    let big = tmp.path().join("big.toml");
    let mut text = String::from("scenario = \"fsync-tps\"\n");
    while text.len() <= 1 << 20 {
        text.push_str("# padding padding padding padding padding padding padding padding\n");
    }
    std::fs::write(&big, text).unwrap();
    refused_quickly(&["matrix", "--file", s(&big), "--dry-run"], "larger than 1024 KiB");

    let hundred = |key: &str, unit: &str| {
        format!(
            "{key}={}",
            (1..=100).map(|i| format!("{i}{unit}")).collect::<Vec<_>>().join(",")
        )
    };
    let (a, b, c) = (
        hundred("record_size", "k"),
        hundred("file_size", "M"),
        hundred("duration", "ms"),
    );
    let huge = [
        "matrix",
        "fsync-tps",
        "--axis",
        &a,
        "--axis",
        &b,
        "--axis",
        &c,
        "--repeat",
        "1000",
        "--dry-run",
    ];
    refused_quickly(
        &huge,
        "1000000000 runs (100 x 100 x 100 cells x 1000 repetitions), more than the 1000000",
    );
    let mut with_yes = huge.to_vec();
    with_yes.push("--yes");
    refused_quickly(&with_yes, "more than the 1000000 a matrix can plan");
    // 12,000 runs: past the 10,000 made unasked; with --yes the plan is printed.
    let many = format!(
        "duration={}",
        (1..=2400).map(|i| format!("{i}ms")).collect::<Vec<_>>().join(",")
    );
    let args = ["matrix", "fsync-tps", "--axis", &many, "--dry-run"];
    refused_quickly(
        &args,
        "12000 runs (2400 cells x 5 repetitions), more than the 10000 a matrix makes unasked; give --yes",
    );
    let out = fsynclab()
        .args(args)
        .arg("--yes")
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("2400 cells, 5 repetitions: 12000 runs"));
}

/// Issue 19, item 15: matrix values spelled differently (`sleep=0,0s,0ms`, `1G,1024M`) became
/// separate cells. They are read through the parameter's type, and one value given twice is
/// refused.
fn matrix_values_spelled_differently_are_one_value() {
    let tmp = tempfile::tempdir().unwrap();
    refused_quickly(
        &["matrix", "overwrite-fsync", "--axis", "sleep=0,0s,0ms", "--dry-run"],
        "--axis sleep: 0 and 0s are the same value; give each value once",
    );
    refused_quickly(
        &["matrix", "overwrite-fsync", "--axis", "file_size=1G,1024M", "--dry-run"],
        "--axis file_size: 1G and 1024M are the same value",
    );
    refused_quickly(
        &[
            "matrix",
            "overwrite-fsync",
            "--axis",
            "scratch-size=1G,1024M",
            "--dry-run",
        ],
        "--axis scratch-size: 1G and 1024M are the same value",
    );
    let file = tmp.path().join("m.toml");
    std::fs::write(
        &file,
        "scenario = \"overwrite-fsync\"\n[axes]\nsleep = [\"250ms\", \"0.25s\"]\n",
    )
    .unwrap();
    refused_quickly(
        &["matrix", "--file", s(&file), "--dry-run"],
        "250ms and 0.25s are the same value",
    );
    let (code, out, err) = run(&["matrix", "overwrite-fsync", "--axis", "sleep=0,1s", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("2 cells"), "{out}");
}

/// Issue 19, item 8: two `matrix --resume ID` at once both made the missing runs: 7 runs in a 4-run
/// matrix, the duplicates folded into the medians. Each run's place is claimed in the store
/// first: three resumes at once make each run once.
fn concurrent_resumes_make_each_run_once() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("S.sqlite");
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    {
        // A matrix recorded with its plan, none of its 4 runs made yet (as one stopped at once).
        let mut st = Store::open(&store).unwrap();
        st.create_matrix(&fsynclab::store::MatrixRecord {
            id: "m1".into(),
            scenario: "overwrite-fsync".into(),
            created_at: "2026-11-22T09:00:00Z".into(),
            plan: json!({
                "scenario": "overwrite-fsync",
                "sets": ["duration=1s", "sleep=100ms", "file_size=16M", "chunk=1M"],
                "target": [["dir", s(&work)]],
                "axes": [{"key": "sync", "values": ["fsync", "fdatasync"]}],
                "repeat": 2,
            }),
        })
        .unwrap();
    }
    let children: Vec<_> = (0..3)
        .map(|_| {
            std::process::Command::new(common::bin())
                .args(["matrix", "--resume", "m1", "--quiet", "--store", s(&store)])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let (code, out, err) = run(&["runs", "--matrix", "m1", "--format", "json", "--store", s(&store)]);
    assert_eq!(code, 0, "{err}");
    let mut places: Vec<String> = serde_json::from_str::<Vec<Value>>(&out)
        .unwrap()
        .iter()
        .map(|r| r["matrix"]["cell"].to_string() + &r["matrix"]["repetition"].to_string())
        .collect();
    places.sort();
    let made = places.len();
    places.dedup();
    assert_eq!((made, places.len()), (4, 4), "each of the 4 runs made once: {out}");
    assert!(common::leftovers(&work).is_empty(), "{:?}", common::leftovers(&work));
}

// ---- Issue 8: the items that need no root ----

/// Issue 8, item 4: fsync-tps buffers are checked for the whole run.
fn fsync_tps_buffers_are_checked_for_the_whole_run() {
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
