//! Writing to the store: a run with its samples (one transaction, whole or not at all), a
//! matrix's plan, and removing a run.

use rusqlite::params;
use serde_json::{Map, Value};

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

impl Store {
    /// Records a run: `result` is its result JSON object (a `samples` member, if present,
    /// is ignored: the samples come as `samples`, in the order they should come back),
    /// `matrix` its place in a matrix (made by [`Store::create_matrix`]). One transaction:
    /// the run is stored whole or not at all.
    pub fn record_run<S: SampleRecord>(
        &mut self,
        result: &Value,
        samples: &[S],
        matrix: Option<&MatrixPlace>,
    ) -> Result<RunId, StoreError> {
        let obj = result.as_object().ok_or(StoreError::BadResult("object"))?;
        let text = |key: &'static str| obj.get(key).and_then(Value::as_str).ok_or(StoreError::BadResult(key));
        let scenario = text("scenario")?;
        let started_at = text("started_at")?;
        let duration_s = obj
            .get("duration_s")
            .and_then(Value::as_f64)
            .ok_or(StoreError::BadResult("duration_s"))?;
        let interrupted = obj.get("interrupted").and_then(Value::as_bool).unwrap_or(false);
        let result_version = obj.get("schema_version").and_then(Value::as_u64).unwrap_or(1);
        let json = |key: &'static str, default: Value| obj.get(key).cloned().unwrap_or(default).to_string();
        let params = json("params", Value::Object(Map::new()));
        let environment = json("environment", Value::Object(Map::new()));
        let ops = json("ops", Value::Object(Map::new()));
        let background = obj.get("background").filter(|b| !b.is_null()).map(Value::to_string);
        let tables = json("tables", Value::Array(vec![]));
        let findings = json("findings", Value::Array(vec![]));
        let extra: Map<String, Value> = obj
            .iter()
            .filter(|(k, _)| !RESULT_ORDER.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Some(m) = matrix {
            if self.matrix(&m.matrix_id)?.is_none() {
                return Err(StoreError::NoSuchMatrix(m.matrix_id.clone()));
            }
        }
        let uid = random_uid()?;
        let recorded_at = crate::result::now_rfc3339();

        let path = self.path.clone();
        let sql = move |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(&sql)?;
        tx.execute(
            "INSERT INTO runs (uid, scenario, started_at, recorded_at, duration_s, interrupted,
                 result_schema_version, params, environment, ops, background, tables, findings,
                 extra, sample_count, matrix_id, matrix_cell, matrix_repetition)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
            params![
                uid,
                scenario,
                started_at,
                recorded_at,
                duration_s,
                i64::from(interrupted),
                result_version as i64,
                params,
                environment,
                ops,
                background,
                tables,
                findings,
                Value::Object(extra).to_string(),
                samples.len() as i64,
                matrix.map(|m| m.matrix_id.as_str()),
                matrix.map(|m| axes_to_text(&m.axes)),
                matrix.map(|m| i64::from(m.repetition)),
            ],
        )
        .map_err(&sql)?;
        let id = tx.last_insert_rowid();
        // The run's place is stored: whoever claimed it has what it claimed it for.
        if let Some(m) = matrix {
            tx.execute(
                "DELETE FROM matrix_claims WHERE matrix_id = ?1 AND matrix_cell = ?2 AND matrix_repetition = ?3",
                params![m.matrix_id, axes_to_text(&m.axes), i64::from(m.repetition)],
            )
            .map_err(&sql)?;
        }
        {
            let mut insert = tx
                .prepare(
                    "INSERT INTO sample_blocks (run_id, block, sample_count, format, data) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(&sql)?;
            // One block encoded at a time: what recording adds to memory is one block's
            // bytes (about 1.5 MB), whatever the run's length.
            for (i, chunk) in samples.chunks(BLOCK_SAMPLES).enumerate() {
                let data = codec::encode(chunk);
                insert
                    .execute(params![
                        id,
                        i as i64,
                        chunk.len() as i64,
                        i64::from(codec::FORMAT),
                        data
                    ])
                    .map_err(&sql)?;
            }
        }
        tx.commit().map_err(&sql)?;
        Ok(RunId(id))
    }

    /// Removes a run and its samples; false if there was no such run.
    pub fn delete_run(&mut self, id: RunId) -> Result<bool, StoreError> {
        let path = self.path.clone();
        let sql = move |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(&sql)?;
        tx.execute("DELETE FROM sample_blocks WHERE run_id = ?1", [id.0])
            .map_err(&sql)?;
        let n = tx.execute("DELETE FROM runs WHERE id = ?1", [id.0]).map_err(&sql)?;
        tx.commit().map_err(&sql)?;
        Ok(n > 0)
    }

    /// A matrix id not used yet: `m1`, `m2`... short enough to type after `--resume`.
    pub fn next_matrix_id(&self) -> Result<String, StoreError> {
        let mut n: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM matrices", [], |r| r.get(0))
            .map_err(self.sql())?;
        loop {
            n += 1;
            let id = format!("m{n}");
            if self.matrix(&id)?.is_none() {
                return Ok(id);
            }
        }
    }

    /// The next id `PREFIXn` that no matrix id starts with (`reproduce3` when
    /// `reproduce1-000` and `reproduce2-001-bdi` are taken): the id of a group of matrices
    /// made together, such as one `fsynclab reproduce`'s.
    pub fn next_prefixed_id(&self, prefix: &str) -> Result<String, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM matrices WHERE substr(id, 1, length(?1)) = ?1")
            .map_err(self.sql())?;
        let ids = stmt
            .query_map([prefix], |r| r.get::<_, String>(0))
            .map_err(self.sql())?
            .collect::<Result<Vec<String>, _>>()
            .map_err(self.sql())?;
        let taken = ids
            .iter()
            .filter_map(|id| {
                let digits: String = id[prefix.len()..].chars().take_while(char::is_ascii_digit).collect();
                digits.parse::<u64>().ok()
            })
            .max()
            .unwrap_or(0);
        Ok(format!("{prefix}{}", taken + 1))
    }

    /// Fails unless the store can take a run now, by doing what recording one does — an
    /// immediate transaction inserting a run — and rolling it back: a store on a read-only
    /// filesystem, an immutable file (which SQLite opens read-only without a word, and
    /// which `BEGIN IMMEDIATE` alone let through, issue 19), or a store locked by another
    /// process for longer than the busy timeout, is found before a run rather than after.
    pub fn check_writable(&mut self) -> Result<(), StoreError> {
        if self.conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) {
            return Err(StoreError::ReadOnly {
                path: self.path.clone(),
            });
        }
        let path = self.path.clone();
        let sql = move |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(&sql)?;
        tx.execute(
            "INSERT INTO runs (uid, scenario, started_at, recorded_at, duration_s, interrupted,
                 result_schema_version, params, environment, ops, background, tables, findings,
                 extra, sample_count)
             VALUES ('writability-check', '', '', '', 0, 0, 1, '{}', '{}', '{}', NULL, '[]', '[]', '{}', 0)",
            [],
        )
        .map_err(&sql)?;
        tx.rollback().map_err(&sql)
    }

    /// Records a matrix's plan before its first cell runs (its runs name it).
    pub fn create_matrix(&mut self, m: &MatrixRecord) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO matrices (id, scenario, created_at, plan) VALUES (?1, ?2, ?3, ?4)",
                params![m.id, m.scenario, m.created_at, m.plan.to_string()],
            )
            .map_err(self.sql())?;
        Ok(())
    }
}
