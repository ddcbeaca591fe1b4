//! Issue 17: the PostgreSQL results store. A run stored there reads back identical, a store
//! copied SQLite to PostgreSQL to SQLite keeps every run, and eight runs make one new store
//! at once.

use std::collections::BTreeSet;
use std::process::{Command as Process, Stdio};

use serde_json::Value;

use crate::common;
use crate::setup::{differing_keys, exports_by_uid, runs_by_uid, stderr, stdout, Farm, TINY_TPS};

/// Issue 17: a run stored in PostgreSQL reads back identical.
pub fn a_run_stored_in_postgres_reads_back_identical() {
    let farm = Farm::up(&["--postgres"]);
    let pg = farm.database("readback");
    let out = farm
        .fsynclab()
        .args(["run", "fsync-tps", "--dir", "."])
        .args(TINY_TPS)
        .args(["--output", "made.json", "--store", &pg])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("stored as run 1"), "{}", stderr(&out));
    let printed = stdout(&out);
    let made: Value = serde_json::from_slice(&std::fs::read(farm.work().join("made.json")).unwrap()).unwrap();
    let read = |args: &[&str]| {
        let out = farm.fsynclab().args(args).args(["--store", &pg]).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    // The whole result, every call's sample included, as the run wrote it (the file also
    // says where it was stored).
    let mut made = made;
    let stored = made.as_object_mut().unwrap().remove("stored").unwrap();
    assert_eq!(stored["run"], 1);
    assert!(made["samples"].as_array().is_some_and(|s| !s.is_empty()));
    for args in [&["show", "1", "--format", "json"][..], &["export", "1"]] {
        let back: Value = serde_json::from_str(&read(args)).unwrap();
        assert_eq!(differing_keys(&made, &back), Vec::<String>::new(), "{args:?}");
    }
    // The summary as the run printed it.
    assert_eq!(read(&["show", "1"]), printed);
    // Listed with the host that made it, and found by it.
    let host = made["environment"]["host"]["name"].as_str().unwrap();
    let listed: Vec<Value> = serde_json::from_str(&read(&["runs", "--format", "json"])).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["host"], host);
    assert_eq!(listed[0]["uid"], stored["uid"]);
    let by_host: Vec<Value> = serde_json::from_str(&read(&["runs", "--host", host, "--format", "json"])).unwrap();
    assert_eq!(by_host.len(), 1);
    let elsewhere: Vec<Value> =
        serde_json::from_str(&read(&["runs", "--host", "no-such-host", "--format", "json"])).unwrap();
    assert!(elsewhere.is_empty(), "{elsewhere:?}");
}

/// Issue 17: store copy round trip SQLite, PostgreSQL, SQLite keeps every run.
pub fn store_copy_round_trip_sqlite_postgres_sqlite_keeps_every_run() {
    let farm = Farm::up(&["--postgres"]);
    let work = farm.work();
    let a = work.join("laptop.sqlite").display().to_string();
    let c = work.join("back.sqlite").display().to_string();
    for _ in 0..2 {
        farm.fsynclab()
            .args(["run", "fsync-tps", "--quiet", "--dir", "."])
            .args(TINY_TPS)
            .args(["--store", &a])
            .assert()
            .success();
    }
    farm.tiny_matrix(1).args(["--quiet", "--store", &a]).assert().success();
    let pg = farm.database("roundtrip");
    let copy = |from: &str, to: &str| {
        let out = farm.fsynclab().args(["store", "copy", from, to]).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let said = copy(&a, &pg);
    assert!(said.contains("copied 4 runs and 1 matrix"), "{said}");
    assert!(!said.contains(&farm.env["FARM_STORE"]), "the password is shown: {said}");
    // Copying again copies nothing twice.
    assert!(copy(&a, &pg).contains("copied 0 runs and 0 matrices"));
    assert!(copy(&pg, &c).contains("copied 4 runs and 1 matrix"));
    // Every run, figure, host and place in the matrix, and every sample, is the same.
    let before = runs_by_uid(&farm, &a);
    assert_eq!(before.len(), 4);
    assert_eq!(before, runs_by_uid(&farm, &pg));
    assert_eq!(before, runs_by_uid(&farm, &c));
    let exported = exports_by_uid(&farm, &a);
    for other in [&pg, &c] {
        let theirs = exports_by_uid(&farm, other);
        assert_eq!(exported.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>());
        for (uid, text) in &exported {
            let (mine, back): (Value, Value) = (
                serde_json::from_str(text).unwrap(),
                serde_json::from_str(&theirs[uid]).unwrap(),
            );
            assert_eq!(
                differing_keys(&mine, &back),
                Vec::<String>::new(),
                "run {uid} in {other}"
            );
            assert!(*text == theirs[uid], "run {uid} in {other}: exported differently");
        }
    }
    for text in exported.values() {
        let run: Value = serde_json::from_str(text).unwrap();
        assert!(run["samples"].as_array().is_some_and(|s| !s.is_empty()));
        assert!(
            run["environment"]["host"]["name"].is_string(),
            "the run records its host"
        );
    }
    let table = |store: &str| {
        let out = farm
            .fsynclab()
            .args([
                "matrix", "--resume", "m1", "--format", "json", "--quiet", "--store", store,
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    assert_eq!(table(&a), table(&c));
    assert_eq!(table(&a), table(&pg));
}

/// Issue 17: eight runs write one new postgres store at once.
pub fn eight_runs_write_one_new_postgres_store_at_once() {
    let farm = Farm::up(&["--postgres"]);
    // A database without a store yet: the first runs also make its schema, at once.
    let pg = farm.database("eight");
    let children: Vec<_> = (0..8)
        .map(|_| {
            Process::new(common::bin())
                .current_dir(farm.work())
                .args(["run", "fsync-tps", "--quiet", "--dir", "."])
                .args(TINY_TPS)
                .args(["--store", &pg])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut said = BTreeSet::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert!(out.status.success(), "{err}");
        said.insert(
            err.lines()
                .find(|l| l.starts_with("stored as run "))
                .unwrap_or_else(|| panic!("{err}"))
                .to_string(),
        );
    }
    assert_eq!(said.len(), 8, "each run stored under its own id: {said:?}");
    let runs = runs_by_uid(&farm, &pg);
    assert_eq!(runs.len(), 8, "every run is stored");
    let out = farm
        .fsynclab()
        .args(["runs", "--format", "json", "--store", &pg])
        .output()
        .unwrap();
    let ids: BTreeSet<i64> = serde_json::from_slice::<Vec<Value>>(&out.stdout)
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, (1..=8).collect(), "ids from the database, none used up");
    // Four copies of those runs into another new store at once: each succeeds, and each
    // run is stored once.
    let file = farm.work().join("eight.sqlite").display().to_string();
    farm.fsynclab().args(["store", "copy", &pg, &file]).assert().success();
    let again = farm.database("copies");
    let copies: Vec<_> = (0..4)
        .map(|_| {
            Process::new(common::bin())
                .current_dir(farm.work())
                .args(["store", "copy", &file, &again])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in copies {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert_eq!(runs_by_uid(&farm, &again), runs);
}
