//! Issue 3: scenario `rndwr` (seed 004, sysbench fileio rndwr with fdatasync) — tiny real
//! runs through the binary: sysbench's request accounting (a sweep of syncs over every file
//! after each `fsync_freq` requests, one more sync per file at the end), its summary lines,
//! the sync calls' own latency, and one-line errors for bad combinations.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use common::{fsynclab, leftovers};
use serde_json::Value;

common::tests! {
    max_requests_run_counts_like_sysbench,
    seed_format_prints_sysbench_0_4_summary,
    bad_combinations_exit_2_with_one_line,
}

/// Issue 3: a run of `max_requests` counts requests and syncs as sysbench does.
fn max_requests_run_counts_like_sysbench() {
    let dir = tempfile::tempdir().unwrap();
    let r: Value = common::success_json(
        fsynclab()
            .args(["run", "rndwr", "--dir"])
            .arg(dir.path())
            .args(["--format", "json", "--quiet"])
            .args(["--set", "files=4", "--set", "total_size=2M", "--set", "threads=3"])
            .args(["--set", "max_requests=250", "--set", "fsync_freq=100"]),
    );
    let ops = &r["ops"];
    assert_eq!(ops["write"]["count"], 250);
    assert_eq!(ops["write"]["bytes"], 250 * 16384);
    // Sweeps after 100 and 200 writes (4 files each), and one per file at the end.
    assert_eq!(ops["fdatasync"]["count"], 2 * 4 + 4);
    assert_eq!(ops["fdatasync"]["errors"], 0);
    let table = &r["tables"][0];
    assert_eq!(table["columns"][0], "requests/s");
    assert_eq!(table["rows"][0][2], 250);
    assert_eq!(table["rows"][0][3], 12);
    assert!(table["rows"][0][0].as_f64().unwrap() > 0.0);
    assert!(r["findings"][0]
        .as_str()
        .unwrap()
        .starts_with("fdatasync calls (sysbench's 'Other'"));
    common::assert_left_empty(dir.path());
}

/// Issue 3: `--format seed` prints sysbench 0.4's summary.
fn seed_format_prints_sysbench_0_4_summary() {
    let dir = tempfile::tempdir().unwrap();
    let text = common::success_stdout(
        fsynclab()
            .args(["run", "rndwr", "--dir"])
            .arg(dir.path())
            .args(["--format", "seed", "--quiet"])
            .args(["--set", "files=2", "--set", "total_size=1M", "--set", "threads=2"])
            .args([
                "--set",
                "max_requests=0",
                "--set",
                "duration=300ms",
                "--set",
                "fsync_mode=fsync",
            ]),
    );
    assert!(text.contains("2 files, 512Kb each, 1Mb total"), "{text}");
    let ops = text
        .lines()
        .find(|l| l.starts_with("Operations performed:  0 Read, "))
        .expect(&text);
    assert!(
        ops.contains(" Write, ") && ops.contains(" Other = ") && ops.ends_with(" Total"),
        "{ops}"
    );
    assert!(text.lines().any(|l| l.starts_with("Read 0b  Written ")), "{text}");
    assert!(text.lines().any(|l| l.ends_with(" Requests/sec executed")), "{text}");
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("approx.  95 percentile:")),
        "{text}"
    );
    assert!(leftovers(dir.path()).is_empty());
}

/// Issue 3: bad combinations exit 2 with one line.
fn bad_combinations_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for (sets, says) in [
        (vec!["threads=0"], "threads=0"),
        (vec!["files=0"], "files=0"),
        (vec!["files=4", "total_size=32k"], "smaller than block_size"),
        (vec!["max_requests=0", "duration=0"], "never stop"),
        (vec!["fsync_mode=sometimes"], "expected one of fsync, fdatasync"),
    ] {
        common::assert_refused("rndwr", dir.path(), &sets, says);
    }
    assert!(leftovers(dir.path()).is_empty());
}
