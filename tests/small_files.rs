//! Issue 3: scenario `small-files` (seed 001) — real tiny runs of both modes through the
//! binary, their tables in the JSON result, the seed-format lines, and bad combinations.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use common::{fsynclab, leftovers};

common::tests! {
    iozone_mode_reports_write_and_rewrite_per_size_with_the_scheduler,
    fs_mark_mode_reports_files_per_second_and_fsync_latency,
    seed_format_prints_iozone_and_fs_mark_lines,
    bad_combinations_are_one_line_errors_with_status_2,
}

fn iozone_mode_reports_write_and_rewrite_per_size_with_the_scheduler() {
    let dir = tempfile::tempdir().unwrap();
    let r = common::run_json("small-files", dir.path(), &["mode=iozone", "sizes=4k,16k", "runs=2"]);
    let t = &r["tables"][0];
    let title = t["title"].as_str().unwrap();
    assert!(title.starts_with("iozone -e -i 0"), "{title}");
    assert!(title.contains("scheduler "), "the scheduler is named: {title}");
    assert_eq!(t["columns"][2], "write");
    assert_eq!(t["columns"][3], "rewrite");
    let rows = t["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0][0], 4);
    assert_eq!(rows[1][0], 16);
    for row in rows {
        assert!(
            row[2].as_f64().unwrap() > 0.0 && row[3].as_f64().unwrap() > 0.0,
            "{row:?}"
        );
    }
    // Every pass ends in an fsync, each recorded: 2 sizes x 2 runs x (write + rewrite).
    assert_eq!(r["ops"]["fsync"]["count"], 8);
    assert_eq!(r["ops"]["iozone_write"]["count"], 4);
    assert!(r["findings"][0].as_str().unwrap().contains("scheduler"));
    assert!(leftovers(dir.path()).is_empty(), "{:?}", leftovers(dir.path()));
}

fn fs_mark_mode_reports_files_per_second_and_fsync_latency() {
    let dir = tempfile::tempdir().unwrap();
    let r = common::run_json(
        "small-files",
        dir.path(),
        &["mode=fs_mark", "files=20", "file_size=16k", "dirs=2", "files_per_dir=5"],
    );
    assert_eq!(r["tables"].as_array().unwrap().len(), 1);
    let t = &r["tables"][0];
    assert!(t["title"].as_str().unwrap().starts_with("fs_mark -S 1"));
    assert_eq!(t["rows"][0][0], 20);
    assert!(t["rows"][0][1].as_f64().unwrap() > 0.0);
    assert_eq!(r["ops"]["fsync"]["count"], 20);
    assert_eq!(r["ops"]["create"]["count"], 20);
    assert_eq!(r["ops"]["write"]["count"], 80, "16k files in 4k writes");
    assert!(leftovers(dir.path()).is_empty());
}

fn seed_format_prints_iozone_and_fs_mark_lines() {
    let dir = tempfile::tempdir().unwrap();
    let text = common::success_stdout(
        fsynclab()
            .args(["run", "small-files", "--quiet", "--format", "seed", "--dir"])
            .arg(dir.path())
            .args(["--set", "sizes=64k", "--set", "runs=1", "--set", "files=3"]),
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["KB", "reclen", "write", "rewrite"]
    );
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(&row[..2], ["64", "4"], "{}", lines[1]);
    assert!(lines[2].starts_with("FSUse%"), "{text}");
    assert_eq!(lines[3].split_whitespace().nth(1), Some("3"), "{text}");
}

fn bad_combinations_are_one_line_errors_with_status_2() {
    let dir = tempfile::tempdir().unwrap();
    for (sets, says) in [
        (vec!["runs=0"], "runs=0"),
        (vec!["files=0"], "files=0"),
        (
            vec!["mode=iozone", "sizes=4k", "record=8k"],
            "larger than the file size",
        ),
        (
            vec!["mode=fs_mark", "file_size=4k", "record=8k"],
            "larger than file_size",
        ),
        (vec!["mode=sideways"], "expected one of iozone, fs_mark, both"),
    ] {
        common::assert_refused("small-files", dir.path(), &sets, says);
    }
    assert!(leftovers(dir.path()).is_empty());
}
