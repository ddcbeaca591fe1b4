//! Issue 19, items 1 and 2, and issue 8, items 9 and 10: where a command's output goes. A
//! device node, a link or a FIFO is written through, never replaced; the store in use is
//! never written over; an output place is checked before anything is measured; and a reader
//! that goes away ends the run quietly.

use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fsynclab::store::Store;
use serde_json::Value;

use crate::common::{self, fsynclab, leftovers, TINY};
use crate::setup::{listed, refused, refused_before_measuring, run, s, store_with_runs};

fn mknod(path: &Path, mode: libc::mode_t, major: u32, minor: u32) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string; mknod reads nothing else.
    let rc = unsafe { libc::mknod(c.as_ptr(), mode | 0o666, libc::makedev(major, minor)) };
    assert_eq!(rc, 0, "mknod {}: {}", path.display(), std::io::Error::last_os_error());
}

/// Issue 19, item 1: as root, `export -o`, `report -o` and `exec --output` replaced a device node
/// with a regular file (it replaced /dev/full on the test machine). They write into it now, and a
/// block device (a disk) is refused.
pub fn output_never_replaces_a_device_node() {
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
pub fn output_follows_links_and_writes_into_fifos() {
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
pub fn output_onto_the_store_in_use_is_refused() {
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
    let output = ["--output", s(&hard)];
    refused_before_measuring(Path::new("."), work.path(), &store, &output, "results store");
    assert_eq!(listed(&store), 3, "every run is still there");
}

/// Holds the store open (as a running matrix would), so that its -wal file exists.
fn rusqlite_like_holder(path: &Path) -> Store {
    Store::open(path).unwrap()
}

/// Issue 8, item 9: output places are checked before measuring.
pub fn output_places_are_checked_before_measuring() {
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
pub fn a_reader_that_goes_away_ends_the_run_quietly() {
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
