//! Issue 19, items 4, 7, 11, 12 and 14: the results store. A foreign database is refused
//! unchanged, runs started at once on a new store are all kept, an immutable store is refused
//! before measuring, a store reads without write access, and `runs` parses its dates strictly
//! and compares parameters by value.

use std::path::{Path, PathBuf};

use fsynclab::store::Store;
use serde_json::{json, Value};

use crate::common;
use crate::setup::{
    all_at_once_succeed, listed, refused, refused_before_measuring, result, run, s, store_with_runs, NO_SAMPLES,
};

/// Issue 19, item 4: `runs --store other.sqlite` said it is not a results store, but left the file
/// switched to WAL. A foreign database is refused unchanged, by reading and recording alike.
pub fn a_foreign_database_is_refused_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let other = tmp.path().join("other.sqlite");
    {
        let conn = rusqlite::Connection::open(&other).unwrap();
        conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');")
            .unwrap();
    }
    let before = std::fs::read(&other).unwrap();
    let work = tempfile::tempdir().unwrap();
    // A run and a matrix recording into it.
    let recording = [
        "--dir",
        s(work.path()),
        "--set",
        "duration=1s",
        "--quiet",
        "--store",
        s(&other),
    ];
    let matrix = [
        "matrix",
        "overwrite-fsync",
        "--axis",
        "sync=fsync,fdatasync",
        "--repeat",
        "1",
    ];
    for args in [
        vec!["runs", "--store", s(&other)],
        vec!["show", "1", "--store", s(&other)],
        [&["run", "overwrite-fsync"][..], &recording].concat(),
        [&matrix[..], &recording].concat(),
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
pub fn concurrent_first_use_of_a_new_store_keeps_every_run() {
    const PROCESSES: usize = 8;
    const TRIES: usize = 5;
    let work = tempfile::tempdir().unwrap();
    for attempt in 0..TRIES {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("new.sqlite");
        let run = ["run", "overwrite-fsync", "--quiet", "--dir", s(work.path())];
        let tiny = [
            "--set",
            "duration=200ms",
            "--set",
            "sleep=20ms",
            "--set",
            "file_size=1M",
        ];
        let args = [&run[..], &tiny, &["--store", s(&store)]].concat();
        all_at_once_succeed(PROCESSES, &args, &format!("try {attempt}: "));
        assert_eq!(listed(&store), PROCESSES, "try {attempt}: every run is stored");
    }
}

/// Whether a file of the temporary directory can be made immutable (ext4, xfs, btrfs and
/// tmpfs since Linux 6.0 can; overlayfs over some cannot).
pub fn immutable_files_here() -> bool {
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
pub fn an_immutable_store_is_refused_before_measuring() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("S.sqlite");
    store_with_runs(&store, 1);
    let made = std::process::Command::new("chattr").arg("+i").arg(&store).status();
    assert!(made.is_ok_and(|s| s.success()), "chattr +i {}", store.display());
    let _undo = Immutable(&store);
    let work = tempfile::tempdir().unwrap();
    refused_before_measuring(work.path(), work.path(), &store, &[], "cannot be written");
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
pub fn a_store_reads_without_write_access() {
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

/// Issue 19, item 14: `runs --since garbage` was accepted and matched nothing; `--param sleep=0`
/// missed runs stored as `0s`. Dates are parsed strictly; parameters compare by value.
pub fn runs_parses_dates_strictly_and_compares_parameters_by_value() {
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
