//! Issue 7: a result carries its typed details, so a saved result prints again exactly as
//! the run printed it — the seed programs' lines included (they used to exist only while
//! the run went on).
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use common::{fsynclab, TINY};

common::tests! {
    show_prints_a_saved_result_as_the_run_printed_it,
    show_refuses_what_is_not_a_result,
}

/// Every scenario and subcommand, with parameters that finish in about a second.
fn cases() -> Vec<Vec<String>> {
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let tiny = |head: &[&str]| head.iter().chain(TINY).map(|s| s.to_string()).collect::<Vec<_>>();
    let mut out = vec![
        tiny(&["run", "overwrite-fsync"]),
        tiny(&["run", "random-writeback"]),
        owned(&[
            "run",
            "small-files",
            "--set",
            "sizes=4k,64k",
            "--set",
            "runs=2",
            "--set",
            "files=20",
        ]),
        owned(&[
            "run",
            "fsync-tps",
            "--set",
            "threads=1,2",
            "--set",
            "duration=200ms",
            "--set",
            "file_size=256k",
        ]),
        owned(&["run", "datasync", "--set", "rounds=2", "--set", "duration=100ms"]),
        owned(&[
            "run",
            "rndwr",
            "--set",
            "files=4",
            "--set",
            "total_size=4M",
            "--set",
            "threads=2",
            "--set",
            "max_requests=300",
            "--set",
            "duration=0",
        ]),
        owned(&[
            "load",
            "random",
            "--set",
            "duration=500ms",
            "--set",
            "random_file_size=16M",
        ]),
        owned(&["load", "stream", "--set", "duration=500ms", "--set", "file_size=16M"]),
        owned(&["probe", "--set", "iterations=5"]),
    ];
    for c in &mut out {
        if !c.iter().any(|a| a == "--quiet") {
            c.push("--quiet".into());
        }
    }
    out
}

/// Issue 7: show prints a saved result as the run printed it.
fn show_prints_a_saved_result_as_the_run_printed_it() {
    for args in cases() {
        for format in ["seed", "text"] {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("r.json");
            let work = tempfile::tempdir().unwrap();
            let live = fsynclab()
                .args(&args)
                .args(["--format", format, "--output"])
                .arg(&file)
                .arg("--dir")
                .arg(work.path())
                .assert()
                .success()
                .get_output()
                .stdout
                .clone();
            let live = String::from_utf8(live).unwrap();
            if format == "seed" && args[0] != "probe" {
                assert!(!live.is_empty(), "{args:?}: the seed format printed nothing");
            }
            let again = fsynclab()
                .args(["show", "--format", format])
                .arg(&file)
                .assert()
                .success()
                .get_output()
                .stdout
                .clone();
            assert_eq!(String::from_utf8(again).unwrap(), live, "{args:?} --format {format}");
        }
    }
}

/// Issue 7: show refuses what is not a result.
fn show_refuses_what_is_not_a_result() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"not\": \"a result\"}").unwrap();
    for path in [bad, dir.path().join("missing.json")] {
        let out = fsynclab().arg("show").arg(&path).assert().code(2).get_output().clone();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}
