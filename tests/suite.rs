//! Issue 3: `fsynclab suite` — runs every registered scenario (counted from `fsynclab list`,
//! not hard-coded), writes one JSON result per scenario plus summary.json, prints a summary
//! with the results path, leaves nothing in --dir, stops cleanly on Ctrl-C, refuses a
//! `--full` run that does not fit, and rejects bad `--set`s with status 2.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::path::Path;

use common::{fsynclab, leftovers};
use serde_json::Value;

common::tests! {
    suite_runs_every_scenario_and_writes_each_result_and_a_summary,
    ctrl_c_stops_the_suite_and_still_writes_the_summary,
    full_refuses_with_numbers_when_it_does_not_fit,
    bad_sets_and_expectations_are_one_line_errors_with_status_2,
    suite_expect_judges_the_scenario_it_names_or_every_one_with_the_figure,
}

fn scenario_names() -> Vec<String> {
    let list: Value = common::success_json(fsynclab().args(["list", "--format", "json"]));
    // The scenarios `list` marks as run on their own (fsync-errors) are not the suite's.
    list.as_array()
        .unwrap()
        .iter()
        .filter(|s| s["in_suite"] != Value::Bool(false))
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

fn suite(dir: &Path, cwd: &Path, extra: &[&str]) -> assert_cmd::assert::Assert {
    let mut cmd = fsynclab();
    cmd.current_dir(cwd).args(["suite", "--quiet", "--dir"]).arg(dir);
    for s in common::SUITE_TINY {
        cmd.args(["--set", s]);
    }
    cmd.args(extra);
    cmd.assert()
}

fn suite_runs_every_scenario_and_writes_each_result_and_a_summary() {
    let names = scenario_names();
    let dir = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let out = suite(dir.path(), cwd.path(), &[]).success().get_output().stdout.clone();
    let text = String::from_utf8(out).unwrap();

    // The default results directory is a new timestamped one in the current directory.
    let shown = text
        .lines()
        .find_map(|l| l.strip_prefix("results: "))
        .expect("results path printed");
    assert!(shown.starts_with("fsynclab-results-"), "{shown}");
    let results = cwd.path().join(shown);
    let mut files = leftovers(&results);
    files.sort();
    let mut want: Vec<String> = names.iter().map(|n| format!("{n}.json")).collect();
    want.push("summary.json".into());
    want.sort();
    assert_eq!(files, want);

    // One summary line per scenario, and the environment in one line.
    for n in &names {
        assert_eq!(
            text.lines().filter(|l| l.trim_start().starts_with(n.as_str())).count(),
            1,
            "{n}: {text}"
        );
    }
    assert!(text.lines().any(|l| l.trim_start().starts_with("env  Linux")), "{text}");
    // Each headline is the scenario's own figure: transactions/s, requests/s, KB/s, fsync.
    let line = |n: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(n))
            .unwrap_or("")
            .to_string()
    };
    let headline_shapes = [
        (
            "overwrite-fsync",
            r"fsync worst \S+, p99 \S+ .*background stream [\d.]+ MiB/s",
        ),
        (
            "random-writeback",
            r"fsync worst \S+, p99 \S+ .*background random [\d.]+ MiB/s",
        ),
        (
            "small-files",
            r"files write \d+ KB/s, rewrite \d+ KB/s; fs_mark [\d.]+ files/s",
        ),
        (
            "fsync-tps",
            r"best \d+ tps \(\w+, \d+ threads\), none x1 \d+ tps; avg flush [\d.]+ ms",
        ),
        ("datasync", r"fdatasync on overwrite: [\d.]+x fsync's rate"),
        (
            "rndwr",
            r"\d+ requests/s \([\d.]+ MiB/s\); fdatasync p99 \S+, worst \S+",
        ),
    ];
    for (n, shape) in headline_shapes {
        if names.iter().any(|m| m == n) {
            assert!(
                regex::Regex::new(shape).unwrap().is_match(&line(n)),
                "{n} headline: {}",
                line(n)
            );
        }
    }

    let summary: Value = serde_json::from_str(&std::fs::read_to_string(results.join("summary.json")).unwrap()).unwrap();
    let entries = summary["scenarios"].as_array().unwrap();
    assert_eq!(entries.len(), names.len());
    for (e, n) in entries.iter().zip(&names) {
        assert_eq!(e["scenario"], n.as_str());
        assert_eq!(e["status"], "ok", "{e}");
        assert!(!e["headline"].as_str().unwrap().is_empty());
        let r: Value =
            serde_json::from_str(&std::fs::read_to_string(results.join(format!("{n}.json"))).unwrap()).unwrap();
        assert_eq!(r["scenario"], n.as_str());
        common::assert_matches_schema(&r);
    }
    assert!(leftovers(dir.path()).is_empty(), "{:?}", leftovers(dir.path()));
}

fn ctrl_c_stops_the_suite_and_still_writes_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let results = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(common::bin())
        .env("FSYNCLAB_STORE", "off")
        .args([
            "suite",
            "--quiet",
            "--set",
            "duration=20s",
            "--set",
            "iterations=0",
            "--dir",
        ])
        .arg(dir.path())
        .arg("--results")
        .arg(results.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once the first scenario probes (before, Ctrl-C would find the suite starting).
    common::wait_until_measuring(dir.path(), common::PROBE_FILE, &mut child);
    common::send(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(results.path().join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["interrupted"], true);
    let entries = summary["scenarios"].as_array().unwrap();
    assert_eq!(entries[0]["status"], "interrupted");
    assert!(entries[1..].iter().all(|e| e["status"] == "skipped"), "{entries:?}");
    assert!(results
        .path()
        .join(format!("{}.json", entries[0]["scenario"].as_str().unwrap()))
        .exists());
    assert!(leftovers(dir.path()).is_empty(), "{:?}", leftovers(dir.path()));
}

fn full_refuses_with_numbers_when_it_does_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let results = tempfile::tempdir().unwrap();
    let out = fsynclab()
        .args([
            "suite",
            "--full",
            "--quiet",
            "--set",
            "random-writeback.random_file_size=100T",
            "--dir",
        ])
        .arg(dir.path())
        .arg("--results")
        .arg(results.path())
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("of measurement"), "says how long: {err}");
    assert!(err.contains("not enough space in"), "{err}");
    assert!(err.contains("random-writeback"), "names the scenario: {err}");
    assert!(leftovers(results.path()).is_empty());
    assert!(leftovers(dir.path()).is_empty());
}

/// `suite --expect`'s exit status and stderr, the tiny suite run in a new directory.
fn suite_expecting(expect: &[&str]) -> (Option<i32>, String) {
    let (dir, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let extra: Vec<&str> = expect.iter().flat_map(|e| ["--expect", e]).collect();
    let out = suite(dir.path(), cwd.path(), &extra).get_output().clone();
    assert!(leftovers(dir.path()).is_empty());
    (out.status.code(), String::from_utf8(out.stderr).unwrap())
}

/// Issue 26 item 5: `suite --expect` judges an expectation that names a scenario
/// (`datasync.fdatasync.p99<1h`) on that scenario, and one that names none (`fsync.p99<1h`)
/// on every scenario that has the figure, a line each: 0 when all are met, 1 when one is
/// not, 125 when no scenario has the figure; a word that is no scenario is refused (2).
fn suite_expect_judges_the_scenario_it_names_or_every_one_with_the_figure() {
    let (code, err) = suite_expecting(&["fsync.p99<1h", "datasync.fdatasync.p99<1h"]);
    assert_eq!(code, Some(0), "{err}");
    for name in ["overwrite-fsync", "datasync"] {
        let line = format!("{name}: expect fsync.p99<1h: measured ");
        assert!(
            err.lines().any(|l| l.starts_with(&line) && l.ends_with(", met")),
            "{err}"
        );
    }
    assert!(err.contains("datasync: expect fdatasync.p99<1h: measured "), "{err}");
    assert!(!err.contains("overwrite-fsync: expect fdatasync"), "{err}");

    let (code, err) = suite_expecting(&["fsync.p99<1h", "overwrite-fsync.fsync.p50<1ns"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("overwrite-fsync: expect fsync.p50<1ns: measured ") && l.ends_with(", not met")),
        "{err}"
    );
    let (code, err) = suite_expecting(&["fsync.p99<1h", "nosync.p99<1h"]);
    assert_eq!(code, Some(125), "{err}");
    assert!(err.contains("expect nosync.p99<1h: no run has nosync.p99"), "{err}");
    // An expectation naming no scenario of the suite: bad_sets_and_expectations_are_one_line_errors_with_status_2.
}

fn bad_sets_and_expectations_are_one_line_errors_with_status_2() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, set, says) in [
        ("--set", "nosuch.duration=1s", "unknown scenario 'nosuch'"),
        ("--set", "nosuchkey=1", "no scenario has a parameter 'nosuchkey'"),
        ("--set", "datasync.methods=fastsync", "expected a comma-separated list"),
        ("--set", "small-files.runs=0", "runs=0"),
        (
            "--expect",
            "overwrte-fsync.fsync.p99<1h",
            "'overwrte-fsync' is not a scenario of the suite",
        ),
    ] {
        let out = fsynclab()
            .args(["suite", "--quiet", flag, set, "--dir"])
            .arg(dir.path())
            .assert()
            .code(2)
            .get_output()
            .clone();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "{set}: {err}");
        assert!(err.contains(says), "{set}: {err}");
    }
    assert!(leftovers(dir.path()).is_empty());
}
