//! Issue 3: scenario `fsync-tps` (seed 002, flush coordination) — tiny real runs of every
//! coordination strategy through the binary, the group-commit accounting a user can check in
//! the JSON, and one-line errors for bad combinations.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use common::{fsynclab, leftovers};
use serde_json::Value;

common::tests! {
    every_strategy_reports_a_row_per_thread_count,
    wal_with_avg_flush_delay_and_append_batches_commits,
    a_directio_run_prints_fdatasync_time_and_tps_in_seed_format,
    bad_combinations_exit_2_with_one_line,
}

fn column(table: &Value, name: &str) -> usize {
    table["columns"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c == name)
        .unwrap_or_else(|| panic!("no column {name}"))
}

/// Issue 3: every strategy reports a row per thread count.
fn every_strategy_reports_a_row_per_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let r = common::run_json(
        "fsync-tps",
        dir.path(),
        &[
            "threads=1,3",
            "duration=300ms",
            "file_size=256k",
            "coordination=none,syncfs,wal",
        ],
    );
    let table = &r["tables"][0];
    let rows = table["rows"].as_array().unwrap();
    let (c, t, tps, commits, syncs) = (
        column(table, "coordination"),
        column(table, "threads"),
        column(table, "tps"),
        column(table, "commits"),
        column(table, "syncs"),
    );
    let shape: Vec<(String, u64)> = rows
        .iter()
        .map(|row| (row[c].as_str().unwrap().to_string(), row[t].as_u64().unwrap()))
        .collect();
    let want: Vec<(String, u64)> = ["none", "syncfs", "wal"]
        .iter()
        .flat_map(|s| [1, 3].map(|n| (s.to_string(), n)))
        .collect();
    assert_eq!(shape, want);
    for row in rows {
        assert!(row[commits].as_u64().unwrap() >= 1, "{row:?}");
        assert!(row[tps].as_f64().unwrap() > 0.0, "{row:?}");
        // One sync can serve many commits, never the other way round.
        assert!(
            row[syncs].as_u64().unwrap() <= row[commits].as_u64().unwrap(),
            "{row:?}"
        );
        assert!(row[syncs].as_u64().unwrap() >= 1, "{row:?}");
    }
    let ops = &r["ops"];
    // Every commit is one write plus a durable step; nothing failed.
    assert_eq!(ops["commit"]["count"], ops["write"]["count"]);
    assert_eq!(ops["commit"]["errors"], 0);
    assert!(ops["syncfs"]["count"].as_u64().unwrap() >= 1);
    assert!(ops["flush_calibration"]["count"].as_u64().unwrap() >= 1);
    let findings = r["findings"].as_array().unwrap();
    assert!(
        findings[0].as_str().unwrap().starts_with("average flush: "),
        "{findings:?}"
    );
    assert!(
        findings
            .iter()
            .any(|f| f.as_str().unwrap().starts_with("3 threads: best coordination")),
        "{findings:?}"
    );
    common::assert_left_empty(dir.path());
}

/// Issue 3: `coordination=wal` with a flush delay and appends batches commits.
fn wal_with_avg_flush_delay_and_append_batches_commits() {
    let dir = tempfile::tempdir().unwrap();
    let r = common::run_json(
        "fsync-tps",
        dir.path(),
        &[
            "threads=4",
            "duration=400ms",
            "file_size=128k",
            "coordination=wal",
            "delay=avg-flush",
            "placement=append",
            "sync=fsync",
        ],
    );
    let ops = &r["ops"];
    let commits = ops["commit"]["count"].as_u64().unwrap();
    assert_eq!(ops["write"]["count"].as_u64().unwrap(), commits);
    let syncs = ops["fsync"]["count"].as_u64().unwrap();
    assert!((1..=commits).contains(&syncs), "{syncs} fsyncs for {commits} commits");
    assert!(ops.get("fdatasync").is_none());
    assert!(leftovers(dir.path()).is_empty());
}

/// Issue 3: a directio run prints fdatasync time and tps in seed format.
fn a_directio_run_prints_fdatasync_time_and_tps_in_seed_format() {
    let dir = tempfile::tempdir().unwrap();
    let text = common::success_stdout(
        fsynclab()
            .args(["run", "fsync-tps", "--dir"])
            .arg(dir.path())
            .args(["--format", "seed", "--quiet"])
            .args([
                "--set",
                "threads=2",
                "--set",
                "duration=200ms",
                "--set",
                "file_size=64k",
            ])
            .args(["--set", "coordination=none", "--set", "directio=1"]),
    );
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("average fdatasync time: "), "{text}");
    assert!(
        lines[1].starts_with("none threads 2: ") && lines[1].ends_with(" tps"),
        "{text}"
    );
    assert!(leftovers(dir.path()).is_empty());
}

/// Issue 3: bad combinations exit 2 with one line.
fn bad_combinations_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for (set, says) in [
        ("threads=0", "at least 1"),
        ("threads=2,0", "at least 1"),
        ("record_size=32M", "larger than file_size"),
        (
            "coordination=batch",
            "expected a comma-separated list of none, syncfs, wal",
        ),
        ("delay=soon", "avg-flush"),
        ("delay=-5", "avg-flush"),
        ("directio=1", ""),
    ] {
        // directio=1 is only bad together with a record that O_DIRECT cannot write.
        let sets: &[&str] = if set == "directio=1" {
            &[set, "record_size=1000"]
        } else {
            &[set]
        };
        common::assert_refused("fsync-tps", dir.path(), sets, says);
    }
    assert!(leftovers(dir.path()).is_empty());
}
