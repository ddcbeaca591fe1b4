//! Issue 14: results are read back typed — as the result they were, not as untyped JSON —
//! and what other versions wrote still reads. The fixtures: result files and a results store
//! made by the first version with a store (commit 99ee4f9: `probe`, `run overwrite-fsync`,
//! a 2-cell matrix of 3 runs a cell, a suite's `fsync-tps.json`), a result of the shape
//! before results carried `details`, and a later version's result: a scenario, details, a
//! finding and a key this version does not know.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::path::{Path, PathBuf};

use fsynclab::store::Store;
use serde_json::Value;

use common::{assert_matches_schema, fsynclab};

common::tests! {
    result_files_of_older_versions_print_again_as_they_were,
    a_store_of_the_first_version_with_a_store_lists_compares_and_reports,
    a_later_versions_result_keeps_what_this_version_does_not_know,
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn json_of(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Runs fsynclab with `args`, expecting success; its stdout.
fn stdout(args: &[&str], store: Option<&Path>) -> String {
    let mut cmd = fsynclab();
    cmd.args(args);
    if let Some(s) = store {
        cmd.arg("--store").arg(s);
    }
    let out = cmd.assert().success().get_output().stdout.clone();
    String::from_utf8(out).unwrap()
}

/// Every finding and table title of `result` is in `text`.
fn assert_text_has_findings_and_tables(text: &str, result: &Value, what: &str) {
    for f in result["findings"].as_array().unwrap() {
        assert!(text.contains(f.as_str().unwrap()), "{what}: no finding {f} in\n{text}");
    }
    for t in result["tables"].as_array().unwrap() {
        assert!(
            text.contains(t["title"].as_str().unwrap()),
            "{what}: no table {t} in\n{text}"
        );
    }
}

/// Issue 14: result files of older versions print again as they were.
fn result_files_of_older_versions_print_again_as_they_were() {
    for name in ["result-99ee4f9.json", "result-before-details.json"] {
        let file = fixture(name);
        let path = file.to_str().unwrap();
        let written = json_of(&file);
        let shown: Value = serde_json::from_str(&stdout(&["show", path, "--format", "json"], None)).unwrap();
        assert_eq!(
            shown, written,
            "{name}: read back typed and printed again, nothing lost"
        );
        assert_matches_schema(&shown);
        let text = stdout(&["show", path, "--format", "text"], None);
        assert_text_has_findings_and_tables(&text, &written, name);
    }
    // A suite's file leaves its samples to a store (gone now): its text prints alone.
    let suite = fixture("result-99ee4f9-suite.json");
    let text = stdout(&["show", suite.to_str().unwrap(), "--format", "text"], None);
    assert_text_has_findings_and_tables(&text, &json_of(&suite), "the suite's file");
    // Files are compared on their figures.
    let cmp = stdout(
        &[
            "compare",
            fixture("result-99ee4f9.json").to_str().unwrap(),
            fixture("result-before-details.json").to_str().unwrap(),
        ],
        None,
    );
    assert!(cmp.contains("fsync.p99") && cmp.contains("verdict: "), "{cmp}");
}

/// A copy of the fixture store of commit 99ee4f9 in `dir` (opening a store may migrate it).
fn old_store(dir: &Path) -> PathBuf {
    let path = dir.join("results.sqlite");
    std::fs::copy(fixture("store-99ee4f9.sqlite"), &path).unwrap();
    path
}

/// Issue 14: a store of the first version with a store lists compares and reports.
fn a_store_of_the_first_version_with_a_store_lists_compares_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let store = old_store(dir.path());
    let runs: Value = serde_json::from_str(&stdout(&["runs", "--format", "json"], Some(&store))).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 8);
    for r in runs {
        let id = r["id"].to_string();
        assert!(
            r["figures"].as_object().is_some_and(|f| !f.is_empty()),
            "run {id} has figures: {r}"
        );
        assert!(r["testbed"].as_str().unwrap().contains(" at /"), "run {id}: {r}");
        // Read back typed, printed again: what the store holds, nothing lost.
        let shown: Value = serde_json::from_str(&stdout(&["show", &id, "--format", "json"], Some(&store))).unwrap();
        let exported: Value = serde_json::from_str(&stdout(&["export", &id], Some(&store))).unwrap();
        assert_eq!(shown, exported, "run {id}");
        assert_matches_schema(&shown);
    }
    let cmp = stdout(&["compare", "m1:sync=fsync", "m1:sync=fdatasync"], Some(&store));
    assert!(cmp.contains("differ in: sync: fsync vs fdatasync"), "{cmp}");
    assert!(cmp.contains("write.p99") && cmp.contains("(n=3)"), "{cmp}");
    let table: Value = serde_json::from_str(&stdout(
        &["matrix", "--resume", "m1", "--figure", "write.p99", "--format", "json"],
        Some(&store),
    ))
    .unwrap();
    let cells = table["rows"][0]["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "{table}");
    assert!(cells.iter().all(|c| c["runs"] == 3), "{table}");
    let page = dir.path().join("m1.html");
    fsynclab()
        .args(["report", "--matrix", "m1", "-o"])
        .arg(&page)
        .arg("--store")
        .arg(&store)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<h2>Matrix: fsync.p99 by sync</h2>"),
        "the report has the matrix table"
    );
}

/// Issue 14: a later version's result keeps what this version does not know.
fn a_later_versions_result_keeps_what_this_version_does_not_know() {
    let file = fixture("result-later-version.json");
    let path = file.to_str().unwrap();
    let written = json_of(&file);
    // Printed again whole: the unknown scenario's details, the unknown key and the finding
    // of an unknown kind are kept as they were.
    let shown: Value = serde_json::from_str(&stdout(&["show", path, "--format", "json"], None)).unwrap();
    assert_eq!(shown, written);
    let text = stdout(&["show", path, "--format", "text"], None);
    assert_text_has_findings_and_tables(&text, &written, "the later version's result");
    // A later version's scenario against this one's: compared when asked to (issue 19).
    let cmp = stdout(
        &[
            "compare",
            path,
            fixture("result-99ee4f9.json").to_str().unwrap(),
            "--across-scenarios",
        ],
        None,
    );
    assert!(cmp.contains("fdatasync.p99"), "compared on its figures: {cmp}");

    // Stored as a later version would store it, it is listed with its figures, and shown
    // and exported with everything it holds.
    let dir = tempfile::tempdir().unwrap();
    let store_path = dir.path().join("results.sqlite");
    let samples = common::samples_of(&written);
    Store::open(&store_path)
        .unwrap()
        .record_run(&written, &samples, None)
        .unwrap();
    let runs: Value = serde_json::from_str(&stdout(&["runs", "--format", "json"], Some(&store_path))).unwrap();
    assert!(runs[0]["figures"]["fsync_unchanged.p99"].as_f64().is_some(), "{runs}");
    let shown: Value = serde_json::from_str(&stdout(&["show", "1", "--format", "json"], Some(&store_path))).unwrap();
    assert_eq!(shown, written);
}
