//! The store's schema and its migrations: numbered steps, each applied once (those a store
//! lacks, together in one transaction) and recorded in `schema_version`, so a store made by any earlier fsynclab is
//! brought up to date when opened, and one made by a later fsynclab is refused.
//!
//! The same migrations make an SQLite store and a PostgreSQL one: plain column types (TEXT,
//! INTEGER, BIGINT, DOUBLE PRECISION, BLOB; [`super::backend::postgres_ddl`] spells the
//! run id, INTEGER and BLOB as PostgreSQL takes them), ids as integers or text, timestamps as
//! RFC 3339 UTC text (which sorts as time), JSON documents as TEXT, booleans as 0/1, and no
//! SQLite-only syntax. Whether a table exists is asked of the backend.

use super::backend::{args, Begin, Db, DbError};

pub(crate) struct Migration {
    pub version: u32,
    pub what: &'static str,
    pub sql: &'static str,
}

/// Every migration, in order. Never edit one that has shipped: add the next.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        what: "runs and their samples",
        sql: "
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    uid TEXT NOT NULL UNIQUE,
    scenario TEXT NOT NULL,
    started_at TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    duration_s DOUBLE PRECISION NOT NULL,
    interrupted INTEGER NOT NULL,
    result_schema_version INTEGER NOT NULL,
    params TEXT NOT NULL,
    environment TEXT NOT NULL,
    ops TEXT NOT NULL,
    background TEXT,
    tables TEXT NOT NULL,
    findings TEXT NOT NULL,
    extra TEXT NOT NULL,
    sample_count BIGINT NOT NULL
);
CREATE INDEX runs_by_start ON runs (started_at);
CREATE INDEX runs_by_scenario ON runs (scenario, started_at);
CREATE TABLE sample_blocks (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    block INTEGER NOT NULL,
    sample_count INTEGER NOT NULL,
    format INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (run_id, block)
);
",
    },
    Migration {
        version: 2,
        what: "matrices, and the place of a run in one",
        sql: "
CREATE TABLE matrices (
    id TEXT PRIMARY KEY,
    scenario TEXT NOT NULL,
    created_at TEXT NOT NULL,
    plan TEXT NOT NULL
);
ALTER TABLE runs ADD COLUMN matrix_id TEXT REFERENCES matrices (id);
ALTER TABLE runs ADD COLUMN matrix_cell TEXT;
ALTER TABLE runs ADD COLUMN matrix_repetition INTEGER;
CREATE INDEX runs_by_matrix ON runs (matrix_id, matrix_cell, matrix_repetition);
",
    },
    Migration {
        version: 3,
        what: "claims on matrix cells, so that two processes never make the same run",
        sql: "
CREATE TABLE matrix_claims (
    matrix_id TEXT NOT NULL REFERENCES matrices (id),
    matrix_cell TEXT NOT NULL,
    matrix_repetition INTEGER NOT NULL,
    host TEXT NOT NULL,
    boot_id TEXT NOT NULL,
    pid BIGINT NOT NULL,
    pid_start BIGINT,
    claimed_at TEXT NOT NULL,
    PRIMARY KEY (matrix_id, matrix_cell, matrix_repetition)
);
",
    },
    Migration {
        version: 4,
        what: "the host that made each run, and the scheduler's job that holds a claim",
        sql: "
ALTER TABLE runs ADD COLUMN host TEXT;
CREATE INDEX runs_by_host ON runs (host, started_at);
ALTER TABLE matrix_claims ADD COLUMN job TEXT;
",
    },
];

/// The oldest schema the reading queries work on (matrices came in 2; 3 added only what
/// writers use), so that a store of 2 on a read-only mount still reads.
pub(crate) const READS_FROM: u32 = 2;

/// The newest schema this build knows.
pub(crate) fn latest() -> u32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// The first schema with the runs' hosts: reads of an older store (read-only, not migrated)
/// find none.
pub(crate) const HOSTS_FROM: u32 = 4;

/// The schema version of the store: 0 for a new, empty database.
pub(crate) fn version(db: &Db) -> Result<u32, DbError> {
    if !db.table_exists("schema_version")? {
        return Ok(0);
    }
    let v = db.query_opt("SELECT COALESCE(MAX(version), 0) FROM schema_version", &[], |r| {
        r.int(0)
    })?;
    Ok(v.unwrap_or(0).clamp(0, i64::from(u32::MAX)) as u32)
}

/// Applies every migration above the store's version up to `target`, all in one immediate
/// transaction with a row each in `schema_version`: a process that opens a new store while
/// another makes it waits for the whole schema, then finds it made (issue 19: made step by
/// step, four runs started at once on a new store lost runs to `table schema_version
/// already exists` and to a half-made schema taken for another program's database).
/// `None`, changing nothing, when the database has tables but no `schema_version`: not a
/// store.
pub(crate) fn migrate(db: &Db, target: u32, now: &str) -> Result<Option<u32>, DbError> {
    db.transaction(Begin::Immediate, |db| {
        let from = version(db)?;
        if from == 0 && db.any_table()? {
            return Ok(None);
        }
        if !db.table_exists("schema_version")? {
            db.execute_batch(&db.ddl(
                "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL, what TEXT NOT NULL);",
            ))?;
        }
        let mut at = from;
        for m in MIGRATIONS.iter().filter(|m| m.version > from && m.version <= target) {
            db.execute_batch(&db.ddl(m.sql))?;
            db.execute(
                "INSERT INTO schema_version (version, applied_at, what) VALUES (?1, ?2, ?3)",
                args![i64::from(m.version), now, m.what],
            )?;
            at = m.version;
        }
        Ok(Some(at))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_numbered_in_order() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version as usize, i + 1, "{}", m.what);
        }
    }

    #[test]
    fn migrating_twice_changes_nothing() {
        let c = Db::Sqlite(crate::store::backend::Sqlite {
            conn: rusqlite::Connection::open_in_memory().unwrap(),
        });
        assert_eq!(version(&c).unwrap(), 0);
        assert_eq!(migrate(&c, latest(), "2026-01-01T00:00:00Z").unwrap(), Some(latest()));
        assert_eq!(migrate(&c, latest(), "2026-01-02T00:00:00Z").unwrap(), Some(latest()));
        let n = c
            .query_opt("SELECT COUNT(*) FROM schema_version", &[], |r| r.int(0))
            .unwrap();
        assert_eq!(n, Some(i64::from(latest())));
    }
}
