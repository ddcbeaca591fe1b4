//! Writing to the store: a run with its samples (one transaction, whole or not at all, its
//! id given by the database), a matrix's plan, and removing a run.

use serde_json::{Map, Value};

use super::backend::{args, Arg, Begin, Db, DbError};
use super::json::RESULT_ORDER;
use super::{axes_to_text, codec, MatrixPlace, MatrixRecord, RunId, SampleRecord, Store, StoreError, BLOCK_SAMPLES};

fn random_uid() -> Result<String, StoreError> {
    use std::io::Read;
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(StoreError::Random)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// A run's columns, from its result's JSON object.
pub(super) struct RunRow {
    scenario: String,
    started_at: String,
    duration_s: f64,
    interrupted: bool,
    result_version: i64,
    params: String,
    environment: String,
    ops: String,
    background: Option<String>,
    tables: String,
    findings: String,
    extra: String,
    /// `environment.host.name`, kept in a column of its own to filter by.
    host: Option<String>,
}

impl RunRow {
    pub(super) fn of(result: &Value) -> Result<RunRow, StoreError> {
        let obj = result.as_object().ok_or(StoreError::BadResult("object"))?;
        let text = |key: &'static str| {
            obj.get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or(StoreError::BadResult(key))
        };
        let json = |key: &'static str, default: Value| obj.get(key).cloned().unwrap_or(default).to_string();
        let extra: Map<String, Value> = obj
            .iter()
            .filter(|(k, _)| !RESULT_ORDER.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(RunRow {
            scenario: text("scenario")?,
            started_at: text("started_at")?,
            duration_s: obj
                .get("duration_s")
                .and_then(Value::as_f64)
                .ok_or(StoreError::BadResult("duration_s"))?,
            interrupted: obj.get("interrupted").and_then(Value::as_bool).unwrap_or(false),
            result_version: obj.get("schema_version").and_then(Value::as_u64).unwrap_or(1) as i64,
            params: json("params", Value::Object(Map::new())),
            environment: json("environment", Value::Object(Map::new())),
            ops: json("ops", Value::Object(Map::new())),
            background: obj.get("background").filter(|b| !b.is_null()).map(Value::to_string),
            tables: json("tables", Value::Array(vec![])),
            findings: json("findings", Value::Array(vec![])),
            extra: Value::Object(extra).to_string(),
            host: obj
                .get("environment")
                .and_then(|e| e.get("host"))
                .and_then(|h| h.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }
}

/// A sample block as stored: its number, sample count, format and bytes.
pub(super) struct Block<'a> {
    pub(super) number: i64,
    pub(super) samples: i64,
    pub(super) format: i64,
    pub(super) data: &'a [u8],
}

/// Inserts a run and its place, inside the caller's transaction; its id.
pub(super) fn insert_run(
    db: &Db,
    row: &RunRow,
    uid: &str,
    recorded_at: &str,
    sample_count: i64,
    matrix: Option<&MatrixPlace>,
) -> Result<RunId, DbError> {
    let id = db
        .query_opt(
            "INSERT INTO runs (uid, scenario, started_at, recorded_at, duration_s, interrupted,
                 result_schema_version, params, environment, ops, background, tables, findings,
                 extra, sample_count, matrix_id, matrix_cell, matrix_repetition, host)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)
             RETURNING id",
            args![
                uid,
                &row.scenario,
                &row.started_at,
                recorded_at,
                row.duration_s,
                i64::from(row.interrupted),
                row.result_version,
                &row.params,
                &row.environment,
                &row.ops,
                row.background.as_ref(),
                &row.tables,
                &row.findings,
                &row.extra,
                sample_count,
                matrix.map(|m| m.matrix_id.as_str()),
                matrix.map(|m| axes_to_text(&m.axes)),
                matrix.map(|m| i64::from(m.repetition)),
                row.host.as_ref(),
            ],
            |r| r.int(0),
        )?
        .ok_or(DbError::Column {
            column: 0,
            what: "the insert gave no run id".into(),
        })?;
    // The run's place is stored: whoever claimed it has what it claimed it for.
    if let Some(m) = matrix {
        db.execute(
            "DELETE FROM matrix_claims WHERE matrix_id = ?1 AND matrix_cell = ?2 AND matrix_repetition = ?3",
            args![m.matrix_id.as_str(), axes_to_text(&m.axes), i64::from(m.repetition)],
        )?;
    }
    Ok(RunId(id))
}

pub(super) fn insert_block(db: &Db, run: RunId, b: &Block<'_>) -> Result<(), DbError> {
    db.execute(
        "INSERT INTO sample_blocks (run_id, block, sample_count, format, data) VALUES (?1, ?2, ?3, ?4, ?5)",
        &[
            Arg::Int(run.0),
            Arg::Int(b.number),
            Arg::Int(b.samples),
            Arg::Int(b.format),
            Arg::Blob(b.data),
        ],
    )?;
    Ok(())
}

impl Store {
    /// Records a run: `result` is its result JSON object (a `samples` member, if present,
    /// is ignored: the samples come as `samples`, in the order they should come back),
    /// `matrix` its place in a matrix (made by [`Store::create_matrix`]). One transaction:
    /// the run is stored whole or not at all; its id is the database's.
    pub fn record_run<S: SampleRecord>(
        &mut self,
        result: &Value,
        samples: &[S],
        matrix: Option<&MatrixPlace>,
    ) -> Result<RunId, StoreError> {
        let row = RunRow::of(result)?;
        if let Some(m) = matrix {
            if self.matrix(&m.matrix_id)?.is_none() {
                return Err(StoreError::NoSuchMatrix(m.matrix_id.clone()));
            }
        }
        let uid = random_uid()?;
        let recorded_at = crate::result::now_rfc3339();
        let path = self.path.clone();
        self.db
            .transaction(Begin::Deferred, |db| {
                let id = insert_run(db, &row, &uid, &recorded_at, samples.len() as i64, matrix)?;
                // One block encoded at a time: what recording adds to memory is one
                // block's bytes (about 1.5 MB), whatever the run's length.
                for (i, chunk) in samples.chunks(BLOCK_SAMPLES).enumerate() {
                    let data = codec::encode(chunk);
                    let block = Block {
                        number: i as i64,
                        samples: chunk.len() as i64,
                        format: i64::from(codec::FORMAT),
                        data: &data,
                    };
                    insert_block(db, id, &block)?;
                }
                Ok(id)
            })
            .map_err(|source| StoreError::Database { path, source })
    }

    /// Removes a run and its samples; false if there was no such run.
    pub fn delete_run(&mut self, id: RunId) -> Result<bool, StoreError> {
        let path = self.path.clone();
        self.db
            .transaction(Begin::Deferred, |db| {
                db.execute("DELETE FROM sample_blocks WHERE run_id = ?1", args![id.0])?;
                db.execute("DELETE FROM runs WHERE id = ?1", args![id.0])
            })
            .map(|n| n > 0)
            .map_err(|source| StoreError::Database { path, source })
    }

    /// A matrix id not used yet: `m1`, `m2`... short enough to type after `--resume`.
    pub fn next_matrix_id(&self) -> Result<String, StoreError> {
        next_matrix_id(&self.db).map_err(self.sql())
    }

    /// The next id `PREFIXn` that no matrix id starts with (`reproduce3` when
    /// `reproduce1-000` and `reproduce2-001-bdi` are taken): the id of a group of matrices
    /// made together, such as one `fsynclab reproduce`'s.
    pub fn next_prefixed_id(&self, prefix: &str) -> Result<String, StoreError> {
        let ids = self
            .db
            .query_map(
                "SELECT id FROM matrices WHERE substr(id, 1, ?2) = ?1",
                args![prefix, super::read::chars(prefix)],
                |r| r.text(0),
            )
            .map_err(self.sql())?;
        let taken = ids
            .iter()
            .filter_map(|id| {
                let digits: String = id
                    .get(prefix.len()..)?
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                digits.parse::<u64>().ok()
            })
            .max()
            .unwrap_or(0);
        Ok(format!("{prefix}{}", taken + 1))
    }

    /// Fails unless the store can take a run now, by doing what recording one does — a
    /// transaction inserting a run, here an immediate one — and rolling it back: a store
    /// on a read-only filesystem, an immutable file (which SQLite opens read-only without
    /// a word, and which `BEGIN IMMEDIATE` alone let through, issue 19), a PostgreSQL user
    /// without the right to insert, or a store locked by another process for longer than
    /// the busy timeout, is found before a run rather than after. The probe names its id
    /// (-1), so that it uses up no number of a PostgreSQL identity.
    pub fn check_writable(&mut self) -> Result<(), StoreError> {
        if self.db.is_read_only() {
            return Err(StoreError::ReadOnly {
                path: self.path.clone(),
            });
        }
        let sql = self.sql();
        self.db.begin(Begin::Immediate).map_err(&sql)?;
        let probe = self.db.execute(
            "INSERT INTO runs (id, uid, scenario, started_at, recorded_at, duration_s, interrupted,
                 result_schema_version, params, environment, ops, background, tables, findings,
                 extra, sample_count)
             VALUES (-1, 'writability-check', '', '', '', 0, 0, 1, '{}', '{}', '{}', NULL, '[]', '[]', '{}', 0)",
            &[],
        );
        let rolled_back = self.db.rollback();
        probe.map_err(&sql)?;
        rolled_back.map_err(&sql)
    }

    /// Records a matrix's plan before its first cell runs (its runs name it).
    pub fn create_matrix(&mut self, m: &MatrixRecord) -> Result<(), StoreError> {
        insert_matrix(&self.db, m).map_err(self.sql())
    }

    /// Records a matrix's plan under the next free id (`m1`, `m2`...), chosen and taken in
    /// one immediate transaction, so that matrices started at once on many hosts never get
    /// one id; the id.
    pub fn create_numbered_matrix(
        &mut self,
        scenario: &str,
        created_at: &str,
        plan: &Value,
    ) -> Result<String, StoreError> {
        let path = self.path.clone();
        self.db
            .transaction(Begin::Immediate, |db| {
                let id = next_matrix_id(db)?;
                insert_matrix(
                    db,
                    &MatrixRecord {
                        id: id.clone(),
                        scenario: scenario.to_string(),
                        created_at: created_at.to_string(),
                        plan: plan.clone(),
                    },
                )?;
                Ok(id)
            })
            .map_err(|source| StoreError::Database { path, source })
    }
}

fn next_matrix_id(db: &Db) -> Result<String, DbError> {
    let mut n = db
        .query_opt("SELECT COUNT(*) FROM matrices", &[], |r| r.int(0))?
        .unwrap_or(0);
    loop {
        n += 1;
        let id = format!("m{n}");
        if !db.exists("SELECT 1 FROM matrices WHERE id = ?1", args![id.as_str()])? {
            return Ok(id);
        }
    }
}

pub(super) fn insert_matrix(db: &Db, m: &MatrixRecord) -> Result<(), DbError> {
    db.execute(
        "INSERT INTO matrices (id, scenario, created_at, plan) VALUES (?1, ?2, ?3, ?4)",
        args![
            m.id.as_str(),
            m.scenario.as_str(),
            m.created_at.as_str(),
            m.plan.to_string()
        ],
    )?;
    Ok(())
}
