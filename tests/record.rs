//! Issue 11, as a user runs it: every run is recorded in the results store and comes back
//! by its id (`show`, `export`, `runs`, `compare`, `report`); a store that cannot take the
//! run stops it before anything is measured; a suite's results directory leaves the samples
//! to the store. No root needed.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::path::Path;

use common::{assert_matches_schema, fsynclab, leftovers, TINY};
use serde_json::Value;

common::tests! {
    a_run_is_stored_and_shown_exported_and_listed_by_its_id,
    a_store_that_cannot_be_written_stops_the_run_before_it_starts,
    runs_filter_and_compare_sets_of_stored_runs,
    compare_warns_when_one_set_ran_in_a_vm_under_tcg_and_the_other_on_the_host,
    a_suite_leaves_the_samples_to_the_store,
}

/// `fsynclab ARGS` with the store at `store`; (stdout, stderr) of a successful run.
fn with_store(store: &Path, args: &[&str]) -> (String, String) {
    let out = fsynclab()
        .env("FSYNCLAB_STORE", store)
        .args(args)
        .assert()
        .success()
        .get_output()
        .clone();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn tiny_run(store: &Path, dir: &Path, format: &str, extra: &[&str]) -> (String, String) {
    let mut args = vec!["run", "overwrite-fsync", "--format", format, "--dir"];
    args.push(dir.to_str().unwrap());
    args.extend(TINY);
    args.extend(extra);
    with_store(store, &args)
}

/// Issue 11: a run is stored and shown exported and listed by its id.
fn a_run_is_stored_and_shown_exported_and_listed_by_its_id() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("nested/results.sqlite");
    let (json, err) = tiny_run(&store, tmp.path(), "json", &[]);
    assert!(
        err.contains(&format!("stored as run 1 in {}", store.display())),
        "{err}"
    );
    let printed: Value = serde_json::from_str(&json).unwrap();

    // show 1: the same result, in every format.
    let (shown, _) = with_store(&store, &["show", "1", "--format", "json"]);
    let shown: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown, printed, "the stored run reads back as the run printed it");
    let (text, _) = with_store(&store, &["show", "1"]);
    assert!(
        text.starts_with("overwrite-fsync\n") && text.contains("fsync"),
        "{text}"
    );
    let (seed, _) = with_store(&store, &["show", "1", "--format", "seed"]);
    assert!(seed.lines().any(|l| l.starts_with("fsync time: ")), "{seed}");

    // export: schema-valid JSON with every call, and the calls as CSV.
    let file = tmp.path().join("run1.json");
    with_store(&store, &["export", "1", "-o", file.to_str().unwrap()]);
    let exported: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_matches_schema(&exported);
    assert_eq!(exported, printed);
    let (csv, _) = with_store(&store, &["export", "1", "--format", "csv"]);
    let calls = printed["samples"].as_array().unwrap().len();
    assert_eq!(csv.lines().count(), calls + 1, "a header and one line a call");
    assert_eq!(csv.lines().next(), Some("t_ns,op,latency_ns,bytes,error"));

    // runs: one line under the header, and JSON with the figures.
    let (list, _) = with_store(&store, &["runs"]);
    assert_eq!(list.lines().count(), 2, "{list}");
    assert!(list.lines().nth(1).unwrap().trim_start().starts_with("1  "), "{list}");
    let (list, _) = with_store(&store, &["runs", "--format", "json"]);
    let list: Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list[0]["id"], 1);
    assert!(list[0]["figures"]["fsync.p99"].as_f64().unwrap() > 0.0);

    // A run id that is not there is bad input.
    let out = fsynclab()
        .env("FSYNCLAB_STORE", &store)
        .args(["show", "7"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("no run 7"));
}

/// Issue 11: a store that cannot be written stops the run before it starts.
fn a_store_that_cannot_be_written_stops_the_run_before_it_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let mut cmd = fsynclab();
    cmd.args(["run", "overwrite-fsync", "--store", "/dev/null/results.sqlite", "--dir"])
        .arg(&work)
        .args(TINY);
    let out = cmd.assert().code(2).get_output().clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("/dev/null") && err.contains("--no-store"), "{err}");
    assert!(out.stdout.is_empty(), "nothing was measured");
    assert!(leftovers(&work).is_empty(), "nothing was made: {:?}", leftovers(&work));

    // --no-store runs without one, whatever FSYNCLAB_STORE says.
    let store = tmp.path().join("unused.sqlite");
    let mut cmd = fsynclab();
    cmd.env("FSYNCLAB_STORE", &store)
        .args(["run", "overwrite-fsync", "--no-store", "--dir"])
        .arg(&work)
        .args(TINY);
    let out = cmd.assert().success().get_output().clone();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("stored as"));
    assert!(!store.exists());
}

/// Issue 11: runs filter and compare sets of stored runs.
fn runs_filter_and_compare_sets_of_stored_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s.sqlite");
    for sleep in ["100ms", "100ms", "100ms", "50ms", "50ms", "50ms"] {
        tiny_run(
            &store,
            tmp.path(),
            "text",
            &["--set", "background=none", "--set", &format!("sleep={sleep}")],
        );
    }
    let (list, _) = with_store(&store, &["runs", "--param", "sleep=50ms", "--last", "2"]);
    let ids: Vec<&str> = list
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(ids, ["5", "6"], "{list}");

    let (text, _) = with_store(&store, &["compare", "1-3", "4,5,6"]);
    assert!(text.starts_with("A: 1-3 (3 runs)\nB: 4,5,6 (3 runs)\n"), "{text}");
    assert!(text.contains("differ in: sleep: 100ms vs 50ms"), "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("verdict: ")),
        "one line sums it up: {text}"
    );
    let (json, _) = with_store(&store, &["compare", "1-3", "4-6", "--format", "json"]);
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["a"]["runs"].as_array().unwrap().len(), 3);
    assert!(
        json["figures"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["runs_a"] == 3 && f["runs_b"] == 3),
        "{json:#}"
    );

    // Fewer than three runs a side: figures, but no verdict, and why.
    let (text, _) = with_store(&store, &["compare", "1", "4-5"]);
    assert!(
        text.contains("no verdict possible: 1 runs against 2; at least 3 a side"),
        "{text}"
    );
    // A missing run is bad input, named.
    let out = fsynclab()
        .env("FSYNCLAB_STORE", &store)
        .args(["compare", "1-3", "4-9"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("no run 7"));

    // The report of two stored runs: one self-contained page.
    let page = tmp.path().join("r.html");
    with_store(&store, &["report", "1", "4", "-o", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("run 1") && html.contains("run 4") && html.contains("class=\"cdf\""));
}

/// Issue 26: runs a guest under TCG recorded and runs of the host differ by how they were
/// booted as well as by their kernel; compare says so, and says nothing when both ran alike.
/// (A guest's run is recorded as one here: the host's part of `environment.vm` comes in
/// FSYNCLAB_GUEST, as `--kernel` passes it.)
fn compare_warns_when_one_set_ran_in_a_vm_under_tcg_and_the_other_on_the_host() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s.sqlite");
    tiny_run(&store, tmp.path(), "text", &[]);
    let mut args = vec!["run", "overwrite-fsync", "--dir", tmp.path().to_str().unwrap()];
    args.extend(TINY);
    fsynclab()
        .env("FSYNCLAB_STORE", &store)
        .env(
            "FSYNCLAB_GUEST",
            "accel=tcg,cpus=2,memory=2147483648,boot=virtme-ng,disk=host",
        )
        .args(&args)
        .assert()
        .success();
    tiny_run(&store, tmp.path(), "text", &[]);
    let (text, _) = with_store(&store, &["compare", "1", "2"]);
    assert!(
        text.contains("caution: A ran on the host, B ran in a VM under tcg: "),
        "{text}"
    );
    let (json, _) = with_store(&store, &["compare", "1", "2", "--format", "json"]);
    let json: Value = serde_json::from_str(&json).unwrap();
    assert!(
        json["caution"].as_str().is_some_and(|c| c.contains("under tcg")),
        "{json:#}"
    );
    let (text, _) = with_store(&store, &["compare", "1", "3"]);
    assert!(!text.contains("caution"), "{text}");
}

/// Issue 11: a suite's results directory holds compact, schema-valid results without their samples,
/// which stay in the store; `show FILE --format seed` still prints every call from there.
fn a_suite_leaves_the_samples_to_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s.sqlite");
    let results = tmp.path().join("results");
    let mut args = vec!["suite", "--quiet", "--dir", tmp.path().to_str().unwrap()];
    args.extend(["--results", results.to_str().unwrap()]);
    for s in common::SUITE_TINY {
        args.extend(["--set", s]);
    }
    let (out, _) = with_store(&store, &args);
    assert!(out.lines().any(|l| l.starts_with("stored: runs 1-")), "{out}");
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(results.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["store"], store.display().to_string());
    for (i, e) in summary["scenarios"].as_array().unwrap().iter().enumerate() {
        assert_eq!(e["run"], i as u64 + 1, "{e}");
        let file = results.join(e["result"].as_str().unwrap());
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(text.lines().count(), 1, "compact JSON, one line: {}", file.display());
        let r: Value = serde_json::from_str(&text).unwrap();
        assert!(
            r.get("samples").is_none(),
            "{}: samples are in the store",
            file.display()
        );
        assert_eq!(r["stored"]["run"], i as u64 + 1);
        assert_matches_schema(&r);
    }
    let file = results.join("overwrite-fsync.json");
    let (seed, _) = with_store(&store, &["show", file.to_str().unwrap(), "--format", "seed"]);
    assert!(
        seed.lines().filter(|l| l.starts_with("fsync time: ")).count() >= 2,
        "{seed}"
    );
}
