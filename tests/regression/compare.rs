//! Issue 19, items 9, 10 and 13: `compare` and `report`. A run named again is counted once,
//! large ranges work or are one line, and runs of different scenarios are said to differ.

use std::path::Path;

use fsynclab::store::{RunFilter, RunId, Store};
use serde_json::{json, Value};

use crate::setup::{refused, result, result_file, run, s, store_with_runs};

/// Issue 19, item 9: `compare r3.json,r3.json,... r4.json,...` counted one file given five times as
/// five runs and said "slower, p=0.0079". A run named again is counted once, and it says so.
pub fn compare_counts_a_run_named_again_once_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let (r3, r4) = (tmp.path().join("r3.json"), tmp.path().join("r4.json"));
    let params = json!({"sleep": "1s"});
    result_file(
        &r3,
        &result("overwrite-fsync", params.clone(), 1.0, "2026-11-22T09:00:00Z"),
    );
    result_file(&r4, &result("overwrite-fsync", params, 2.0, "2026-11-22T09:01:00Z"));
    let copy = tmp.path().join("r3-copy.json");
    std::fs::copy(&r3, &copy).unwrap();
    let five = |p: &Path| [s(p); 5].join(",");
    let a = format!("{},{}", five(&r3), s(&copy));
    let (code, out, err) = run(&["compare", &a, &five(&r4)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("(1 run; 5 named again, counted once)"), "{out}");
    assert!(out.contains("(1 run; 4 named again, counted once)"), "{out}");
    assert!(!out.contains("B is slower"), "one run a side gives no verdict: {out}");

    // A stored run and its export are one run too; a run in both sets is said to be.
    let store = tmp.path().join("S.sqlite");
    store_with_runs(&store, 3);
    let e1 = tmp.path().join("e1.json");
    let (code, _, err) = run(&["export", "1", "-o", s(&e1), "--store", s(&store)]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(&["compare", &format!("1,{}", s(&e1)), "1-3", "--store", s(&store)]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("A: ") && out.contains("(1 run; 1 named again, counted once)"),
        "{out}"
    );
    assert!(out.contains("in both sets: "), "{out}");
}

/// Issue 19, item 10: `compare 1-32767 1-3` and `report 1-999999` exited 1 with SQLite's "variable
/// number must be between ?1 and ?32766". A range is one condition, never expanded, so a
/// range past the last run is a one-line error naming the first missing id; a list of more
/// ids than SQLite takes variables is read in groups.
pub fn large_ranges_work_or_get_a_one_line_error() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("S.sqlite");
    store_with_runs(&store, 40);
    refused(
        &["compare", "1-32767", "1-3", "--store", s(&store)],
        "no run 41 in the results store",
    );
    let page = tmp.path().join("r.html");
    refused(
        &["report", "1-999999", "-o", s(&page), "--store", s(&store)],
        "no run 41",
    );
    assert!(!page.exists());
    let (code, out, err) = run(&["compare", "1-20", "21-40", "--format", "json", "--store", s(&store)]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["figures"][0]["runs_a"].as_u64(), v["figures"][0]["runs_b"].as_u64()),
        (Some(20), Some(20))
    );

    // 40,000 runs (39,960 more in one statement), listed by 40,000 ids.
    {
        let conn = rusqlite::Connection::open(&store).unwrap();
        conn.execute_batch(
            "WITH RECURSIVE n(i) AS (SELECT 41 UNION ALL SELECT i + 1 FROM n WHERE i < 40000)
             INSERT INTO runs (uid, scenario, started_at, recorded_at, duration_s, interrupted,
                 result_schema_version, params, environment, ops, background, tables, findings,
                 extra, sample_count)
             SELECT 'u' || i, 'overwrite-fsync', strftime('%Y-%m-%dT%H:%M:%SZ', 1800000000 + 60 * i, 'unixepoch'),
                 '2026-11-22T09:00:00Z', 3.0, 0, 1, '{}', '{}', '{}', NULL, '[]', '[]', '{}', 0
             FROM n;",
        )
        .unwrap();
    }
    let store = Store::open(&store).unwrap();
    let ids: Vec<RunId> = (1..=40_000).map(RunId).collect();
    let found = store
        .runs(&RunFilter {
            ids: ids.clone(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(found.iter().map(|r| r.id).collect::<Vec<_>>(), ids);
}

/// Issue 19, item 13: `compare` of runs of different scenarios listed the parameters that differ
/// but never said the scenarios did. It refuses, in one line, unless --across-scenarios, and then
/// says so first.
pub fn compare_of_different_scenarios_says_so_first() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a.json"), tmp.path().join("b.json"));
    result_file(&a, &result("overwrite-fsync", json!({}), 1.0, "2026-11-22T09:00:00Z"));
    result_file(&b, &result("fsync-tps", json!({}), 1.0, "2026-11-22T09:01:00Z"));
    refused(
        &["compare", s(&a), s(&b)],
        "A is overwrite-fsync, B is fsync-tps: runs of different scenarios",
    );
    let (code, out, err) = run(&["compare", s(&a), s(&b), "--across-scenarios"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.lines().next(),
        Some("scenarios differ: A is overwrite-fsync, B is fsync-tps"),
        "{out}"
    );
}
