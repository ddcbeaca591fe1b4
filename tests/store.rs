//! Issue 11: the results store, through the library. A real run's result goes in and comes
//! back identical and schema-valid; listings filter; the sample encoding stays under 16 bytes
//! a sample on fsync-tps-like data.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use fsynclab::compare::{Figure, Metric};
use fsynclab::store::{codec, MatrixPlace, MatrixRecord, RunFilter, RunId, Store};
use serde_json::Value;

use common::{assert_matches_schema, fsynclab, samples_of, Sample, TINY};

common::tests! {
    a_stored_run_comes_back_identical_and_schema_valid,
    runs_are_listed_by_scenario_time_matrix_and_parameter,
    unknown_result_keys_are_kept,
    samples_take_at_most_16_bytes_each,
    a_store_address_of_an_unknown_scheme_is_refused_and_nothing_is_made,
}

fn tiny_run(scenario: &str, extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let out = fsynclab()
        .args(["run", scenario, "--format", "json", "--dir"])
        .arg(dir.path())
        .args(TINY)
        .args(extra)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).expect("result JSON")
}

/// Issue 11: a stored run comes back identical and schema valid.
fn a_stored_run_comes_back_identical_and_schema_valid() {
    let result = tiny_run("overwrite-fsync", &[]);
    let samples = samples_of(&result);
    assert!(samples.len() >= 4, "the tiny run made {} calls", samples.len());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/results.sqlite");
    let id = {
        let mut store = Store::open(&path).unwrap();
        store.record_run(&result, &samples, None).unwrap()
    };
    // Reopened from the file, as a later `fsynclab show` would.
    let store = Store::open(&path).unwrap();
    let back = store.run(id).unwrap();
    let mut json = Vec::new();
    back.write_result_json(&mut json, true).unwrap();
    let back: Value = serde_json::from_slice(&json).unwrap();
    assert_matches_schema(&back);
    assert_eq!(back, result, "the stored run reads back as the result it was");
}

/// Issue 11: runs are listed by scenario time matrix and parameter.
fn runs_are_listed_by_scenario_time_matrix_and_parameter() {
    let base = tiny_run("overwrite-fsync", &[]);
    let mut store = Store::open_in_memory().unwrap();
    let place = MatrixPlace {
        matrix_id: "m-1".into(),
        axes: vec![("sync".into(), "fsync".into())],
        repetition: 0,
    };
    let e = store.record_run(&base, &samples_of(&base), Some(&place)).unwrap_err();
    assert!(e.to_string().contains("matrix m-1 is not in the store"), "{e}");
    store
        .create_matrix(&MatrixRecord {
            id: "m-1".into(),
            scenario: "overwrite-fsync".into(),
            created_at: "2026-01-01T09:00:00Z".into(),
            plan: serde_json::json!({"axes": [["sync", ["fsync", "fdatasync"]]]}),
        })
        .unwrap();
    let mut ids = Vec::new();
    for (i, (scenario, sync, start)) in [
        ("overwrite-fsync", "fsync", "2026-01-01T10:00:00Z"),
        ("overwrite-fsync", "fdatasync", "2026-02-01T10:00:00Z"),
        ("datasync", "fdatasync", "2026-03-01T10:00:00Z"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut r = base.clone();
        r["scenario"] = scenario.into();
        r["started_at"] = start.into();
        r["params"]["sync"] = sync.into();
        let place = (i > 0).then(|| MatrixPlace {
            matrix_id: "m-1".into(),
            axes: vec![("sync".into(), sync.into())],
            repetition: i as u32,
        });
        ids.push(store.record_run(&r, &samples_of(&r), place.as_ref()).unwrap());
    }
    let list = |f: RunFilter| -> Vec<RunId> { store.runs(&f).unwrap().iter().map(|r| r.id).collect() };
    assert_eq!(list(RunFilter::default()), ids);
    let scenario = RunFilter {
        scenario: Some("overwrite-fsync".into()),
        ..Default::default()
    };
    assert_eq!(list(scenario), ids[..2]);
    let since = RunFilter {
        since: Some("2026-02-01".into()),
        ..Default::default()
    };
    assert_eq!(list(since), ids[1..]);
    let matrix = RunFilter {
        matrix_id: Some("m-1".into()),
        ..Default::default()
    };
    assert_eq!(list(matrix), ids[1..]);
    let param = RunFilter {
        params: vec![("sync".into(), "fdatasync".into())],
        ..Default::default()
    };
    assert_eq!(list(param), ids[1..]);
    let text = RunFilter {
        contains: vec!["FDATASYNC".into()],
        scenario: Some("datasync".into()),
        ..Default::default()
    };
    assert_eq!(list(text), ids[2..], "case-insensitive text, and every condition holds");
    let newest = RunFilter {
        limit: Some(2),
        ..Default::default()
    };
    assert_eq!(list(newest), ids[1..]);

    let all = store.runs(&RunFilter::default()).unwrap();
    assert_eq!(all[2].matrix.as_ref().unwrap().cell_label(), "sync=fdatasync");
    assert_eq!(all[0].params["sync"], "fsync");
    // The figures `fsynclab compare` works on come straight from a listing.
    let f = all[0].figures().unwrap();
    assert!(f.values[&Figure::new("fsync", Metric::P99)] > 0.0);
}

/// Issue 11: unknown result keys are kept.
fn unknown_result_keys_are_kept() {
    let mut r = tiny_run("overwrite-fsync", &[]);
    r["timeline"] = serde_json::json!([{"t_ns": 5, "event": "commit"}]);
    let mut store = Store::open_in_memory().unwrap();
    let id = store.record_run(&r, &samples_of(&r), None).unwrap();
    assert_eq!(store.run(id).unwrap().result_value(), r);
    assert!(store.delete_run(id).unwrap());
    assert!(store.run(id).unwrap_err().to_string().contains("fsynclab runs"));
}

/// fsync-tps-like samples: eight threads each writing 4 KiB then fsyncing, calls of 20 to
/// 400 µs with a long tail, merged in start order, about 40,000 calls a second.
fn fsync_tps_like(n: usize) -> Vec<Sample> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut t = 0u64;
    (0..n)
        .map(|i| {
            t += 10_000 + next() % 30_000;
            let tail = if next() % 100 == 0 { 50 } else { 1 };
            let (op, bytes, latency) = if i % 2 == 0 {
                ("write", 4096, 2_000 + next() % 8_000)
            } else {
                ("fsync", 0, (20_000 + next() % 380_000) * tail)
            };
            (t, op.to_string(), latency, bytes, None)
        })
        .collect()
}

/// Issue 11: samples take at most 16 bytes each.
fn samples_take_at_most_16_bytes_each() {
    let samples = fsync_tps_like(200_000);
    let block = codec::encode(&samples);
    let per_sample = block.len() as f64 / samples.len() as f64;
    assert!(per_sample <= 16.0, "{per_sample:.2} bytes a sample");
    // And the store adds little on top: the file after one such run.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    let mut store = Store::open(&path).unwrap();
    let result = serde_json::json!({
        "schema_version": 1, "scenario": "fsync-tps", "started_at": "2026-01-01T00:00:00Z",
        "duration_s": 5.0, "interrupted": false, "params": {}, "environment": {}, "ops": {},
        "background": null
    });
    store.record_run(&result, &samples, None).unwrap();
    drop(store);
    let on_disk: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    let per_sample = on_disk as f64 / samples.len() as f64;
    assert!(per_sample <= 16.0, "{per_sample:.2} bytes a sample on disk");
}

/// Issue 24, item 2: `--store postgress://u@127.0.0.1/db` exited 0, said "stored as run 1 in
/// postgress://...", and had made `./postgress:/u@127.0.0.1/db`, an SQLite file under the
/// working directory. An address of a scheme the store does not speak, in `--store`, in
/// `FSYNCLAB_STORE` or in `store copy`, is refused in one line naming the valid ones (exit
/// status 2), before anything runs, and nothing is made.
fn a_store_address_of_an_unknown_scheme_is_refused_and_nothing_is_made() {
    let cwd = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let refused = |cmd: &mut assert_cmd::Command, given: &str| {
        let out = cmd.current_dir(cwd.path()).assert().code(2).get_output().clone();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(err.trim_end().lines().count(), 1, "{given}: {err}");
        assert!(err.contains(given), "{given}: {err}");
        assert!(err.contains("unknown scheme"), "{given}: {err}");
        assert!(!err.contains("s3cret"), "the password is shown: {err}");
        assert!(err.contains("postgres://USER@HOST/DB"), "{given}: {err}");
        assert!(
            out.stdout.is_empty(),
            "{given}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert_eq!(common::leftovers(cwd.path()), Vec::<String>::new(), "{given}: made");
        assert_eq!(common::leftovers(work.path()), Vec::<String>::new(), "{given}: ran");
    };
    let run = || {
        let mut cmd = fsynclab();
        cmd.args(["run", "overwrite-fsync", "--dir"])
            .arg(work.path())
            .args(TINY);
        cmd
    };
    refused(
        run().args(["--store", "postgress://u@127.0.0.1/db"]),
        "--store postgress://u@127.0.0.1/db: unknown scheme postgress://",
    );
    refused(
        run().env("FSYNCLAB_STORE", "postgress://u:s3cret@127.0.0.1/db"),
        "FSYNCLAB_STORE=postgress://u@127.0.0.1/db: unknown scheme postgress://",
    );
    refused(
        fsynclab().args(["runs", "--store", "sqlite:///tmp/x.sqlite"]),
        "--store sqlite:///tmp/x.sqlite",
    );
    refused(
        fsynclab().args(["store", "copy", "a.sqlite", "postgress://u@127.0.0.1/db"]),
        "store copy: postgress://u@127.0.0.1/db",
    );
}
