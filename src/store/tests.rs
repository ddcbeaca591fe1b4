//! The tests of the results store: runs written and read back, filters, claims, schema.

use rusqlite::Connection;

use super::backend::Sqlite;
use super::*;

#[test]
fn run_ids_parse_with_a_useful_error() {
    assert_eq!("12".parse::<RunId>(), Ok(RunId(12)));
    assert!("abc".parse::<RunId>().unwrap_err().contains("fsynclab runs"));
    assert!("0".parse::<RunId>().is_err());
}

/// A store made by the first schema (before matrices existed) opens with today's code:
/// migrated in place, its run still there, now outside any matrix.
#[test]
/// Issue 11.
fn store_of_schema_1_is_migrated_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.sqlite");
    {
        let conn = Connection::open(&path).unwrap();
        let db = Db::Sqlite(Sqlite { conn });
        assert_eq!(schema::migrate(&db, 1, "2026-01-01T00:00:00Z").unwrap(), Some(1));
        let Db::Sqlite(Sqlite { conn }) = db else {
            unreachable!()
        };
        let block = codec::encode(&[(5u64, "fsync", 1000u64, 0u64, None::<&str>)]);
        conn.execute(
            "INSERT INTO runs (uid, scenario, started_at, recorded_at, duration_s, interrupted,
                result_schema_version, params, environment, ops, background, tables, findings,
                extra, sample_count)
             VALUES ('u1', 'overwrite-fsync', '2026-01-01T00:00:00Z', '2026-01-01T00:00:01Z',
                1.5, 0, 1, '{\"sync\":\"fsync\"}', '{}', '{}', NULL, '[]', '[]', '{}', 1)",
            [],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO sample_blocks (run_id, block, sample_count, format, data) VALUES (1, 0, 1, 1, ?1)",
            [&block],
        )
        .unwrap();
    }
    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), schema::latest());
    let runs = store.runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(
        (runs[0].scenario.as_str(), runs[0].matrix.clone()),
        ("overwrite-fsync", None)
    );
    assert_eq!(store.samples(RunId(1)).unwrap().get(0).latency_ns, 1000);
    // And the new schema's features work on it.
    store
        .create_matrix(&MatrixRecord {
            id: "m1".into(),
            scenario: "fsync-tps".into(),
            created_at: "2026-01-02T00:00:00Z".into(),
            plan: serde_json::json!({"axes": []}),
        })
        .unwrap();
    assert_eq!(store.matrix("m1").unwrap().unwrap().scenario, "fsync-tps");
}

/// A store of schema 2 reads read-only as it is (schema 3 added only what writers use),
/// and is brought up to date when opened to record.
#[test]
fn a_store_of_schema_2_reads_unchanged_and_is_migrated_to_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.sqlite");
    {
        let db = Db::Sqlite(Sqlite {
            conn: Connection::open(&path).unwrap(),
        });
        assert_eq!(schema::migrate(&db, 2, "2026-01-01T00:00:00Z").unwrap(), Some(2));
    }
    let store = Store::open_read_only(&path).unwrap();
    assert!(store.runs(&RunFilter::default()).unwrap().is_empty());
    assert_eq!(store.schema_version().unwrap(), 2);
    drop(store);
    assert_eq!(Store::open(&path).unwrap().schema_version().unwrap(), schema::latest());
}

#[test]
fn a_newer_store_or_a_foreign_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let newer = dir.path().join("newer.sqlite");
    drop(Store::open(&newer).unwrap());
    Connection::open(&newer)
        .unwrap()
        .execute(
            "INSERT INTO schema_version (version, applied_at, what) VALUES (99, 'x', 'future')",
            [],
        )
        .unwrap();
    let e = Store::open(&newer).err().unwrap().to_string();
    assert!(
        e.contains("schema version 99") && e.contains("use a newer fsynclab"),
        "{e}"
    );

    let foreign = dir.path().join("foreign.sqlite");
    Connection::open(&foreign)
        .unwrap()
        .execute("CREATE TABLE t (x INTEGER)", [])
        .unwrap();
    let e = Store::open(&foreign).err().unwrap().to_string();
    assert!(e.contains("not a fsynclab results store"), "{e}");
}
