//! Issue 3: scenario `datasync` (seed 004) — every method against every case in one table,
//! findings computed from the run, the `writes` limit, and bad combinations.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use common::{fsynclab, leftovers};
use serde_json::Value;

common::tests! {
    every_method_meets_every_case_in_one_table,
    writes_limit_gives_exact_counts_and_seed_lines,
    text_report_states_the_ratio,
    bad_combinations_are_one_line_errors_with_status_2,
}

fn run(dir: &std::path::Path, format: &str, sets: &[&str]) -> String {
    let mut cmd = fsynclab();
    cmd.args(["run", "datasync", "--quiet", "--format", format, "--dir"])
        .arg(dir);
    for s in sets {
        cmd.args(["--set", s]);
    }
    String::from_utf8(cmd.assert().success().get_output().stdout.clone()).unwrap()
}

fn every_method_meets_every_case_in_one_table() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), "json", &["rounds=1", "duration=50ms", "file_size=256k"]);
    let r: Value = serde_json::from_str(&out).unwrap();
    let t = &r["tables"][0];
    let rows = t["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 12, "4 methods x 3 cases");
    let cols = common::strings(&t["columns"]);
    assert_eq!(&cols[..5], ["case", "method", "ops", "errors", "ops/s"]);
    for row in rows {
        assert!(row[2].as_u64().unwrap() > 0, "every cell ran: {row:?}");
        assert_eq!(row[3], 0);
    }
    for op in ["fsync", "fdatasync", "sync_file_range", "write_odsync"] {
        assert!(r["ops"][op]["count"].as_u64().unwrap() > 0, "{op} recorded");
    }
    let findings = common::strings(&r["findings"]);
    assert!(findings[0].starts_with("fdatasync on overwrite: "), "{findings:?}");
    assert!(findings[0].contains("x fsync's rate ("), "{findings:?}");
    assert!(leftovers(dir.path()).is_empty());
}

fn writes_limit_gives_exact_counts_and_seed_lines() {
    let dir = tempfile::tempdir().unwrap();
    let sets = [
        "methods=fsync,fdatasync",
        "cases=overwrite,append",
        "duration=0s",
        "writes=5",
        "file_size=32k",
        "rounds=2",
    ];
    let r: Value = serde_json::from_str(&run(dir.path(), "json", &sets)).unwrap();
    for row in r["tables"][0]["rows"].as_array().unwrap() {
        assert_eq!(row[2], 10, "2 rounds x 5 writes: {row:?}");
    }
    // Append runs past file_size (32k = 4 writes) and starts over without failing.
    assert_eq!(r["ops"]["fsync"]["count"], 20);
    assert_eq!(r["ops"]["fdatasync"]["count"], 20);
    let seed = run(dir.path(), "seed", &sets);
    assert_eq!(seed.lines().count(), 8, "{seed}");
    assert!(
        seed.lines()
            .all(|l| l.contains(": 5 writes of 8k in ") && l.ends_with(" sec")),
        "{seed}"
    );
}

fn text_report_states_the_ratio() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        "text",
        &[
            "methods=fsync,fdatasync",
            "cases=overwrite",
            "rounds=1",
            "duration=50ms",
            "file_size=64k",
        ],
    );
    assert!(out.contains("datasync: 8k write + sync per operation"), "{out}");
    assert!(out.contains("fdatasync on overwrite: "), "{out}");
}

fn bad_combinations_are_one_line_errors_with_status_2() {
    let dir = tempfile::tempdir().unwrap();
    for (sets, says) in [
        (
            vec!["methods=fsync,fastsync"],
            "expected a comma-separated list of fsync",
        ),
        (vec!["write_size=16k", "file_size=8k"], "larger than file_size"),
        (vec!["rounds=0"], "rounds=0"),
        (vec!["duration=0s", "writes=0"], "one of them must limit"),
        (vec!["cases=prepend"], "expected a comma-separated list of overwrite"),
    ] {
        common::assert_refused("datasync", dir.path(), &sets, says);
    }
    assert!(leftovers(dir.path()).is_empty());
}
