//! The results store: every run fsynclab makes, kept in one SQLite file with its parameters,
//! environment, summary, tables, findings, background report, its place in a matrix, and
//! every per-call sample in the compact encoding of [`codec`] (6 bytes a sample on a real
//! fsync-tps run, where its result JSON takes 108; `benches/store_cost.rs` measures it).
//!
//! Where it is, first that applies: `--store PATH`; the environment variable
//! `FSYNCLAB_STORE`; `$XDG_DATA_HOME/fsynclab/results.sqlite`;
//! `~/.local/share/fsynclab/results.sqlite` (the XDG Base Directory default).
//!
//! A run goes in as its result's JSON object (the shape of `schema/result-v1.schema.json`)
//! with the samples beside it, and comes back in the same shape: fields the store does not
//! know (a later result version's timeline, attributions) are kept whole in `extra` and
//! returned. The schema is versioned ([`schema`]) and portable to PostgreSQL.

pub mod codec;
pub(crate) mod schema;

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use rusqlite::{params, Connection, OptionalExtension};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

pub use codec::{SampleColumns, SampleRecord, SampleRef};

/// The environment variable that moves the store.
pub const STORE_ENV: &str = "FSYNCLAB_STORE";

/// Samples per stored block: about 1.5 MB each, so no single value comes near SQLite's
/// 1 GB limit however long a run is, and a reader can stream a run block by block.
pub const BLOCK_SAMPLES: usize = 1 << 18;

/// The store file when nothing says otherwise, from the environment as given (tests pass
/// their own). `None` when neither `XDG_DATA_HOME` nor `HOME` is set.
pub fn choose_path(
    flag: Option<&Path>,
    store_env: Option<&str>,
    xdg_data_home: Option<&str>,
    home: Option<&str>,
) -> Option<PathBuf> {
    fn nonempty(v: Option<&str>) -> Option<&str> {
        v.filter(|s| !s.is_empty())
    }
    if let Some(p) = flag {
        return Some(p.to_path_buf());
    }
    if let Some(p) = nonempty(store_env) {
        return Some(PathBuf::from(p));
    }
    // XDG Base Directory Specification: a relative XDG_DATA_HOME is invalid and ignored.
    if let Some(x) = nonempty(xdg_data_home).filter(|x| x.starts_with('/')) {
        return Some(Path::new(x).join("fsynclab").join("results.sqlite"));
    }
    nonempty(home).map(|h| Path::new(h).join(".local/share/fsynclab/results.sqlite"))
}

/// The store file: `--store PATH`, else `FSYNCLAB_STORE`, else the XDG data directory.
pub fn resolve_path(flag: Option<&Path>) -> Result<PathBuf, StoreError> {
    let var = |k| std::env::var(k).ok();
    choose_path(
        flag,
        var(STORE_ENV).as_deref(),
        var("XDG_DATA_HOME").as_deref(),
        var("HOME").as_deref(),
    )
    .ok_or(StoreError::NoLocation)
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no place for the results store: HOME is not set; give --store PATH or set {STORE_ENV}")]
    NoLocation,
    #[error("cannot create the directory of the results store {path}: {source}")]
    CreateDir { path: PathBuf, source: std::io::Error },
    #[error("results store {path}: {source}")]
    Sqlite { path: String, source: rusqlite::Error },
    #[error("results store {path} has schema version {found}, newer than this fsynclab knows ({known}): use a newer fsynclab, or --store another file")]
    NewerSchema { path: String, found: u32, known: u32 },
    #[error("{path} is an SQLite database but not a fsynclab results store: give --store another file")]
    NotAStore { path: String },
    #[error("no run {id} in the results store {path} (`fsynclab runs` lists them)")]
    NoSuchRun { path: String, id: RunId },
    #[error("cannot store the run: matrix {0} is not in the store (record it with create_matrix first)")]
    NoSuchMatrix(String),
    #[error("cannot store the run: the result has no valid '{0}'")]
    BadResult(&'static str),
    #[error("results store {path}, run {id}: {source}")]
    Samples {
        path: String,
        id: RunId,
        source: codec::CodecError,
    },
    #[error("cannot make a run id: {0}")]
    Random(std::io::Error),
}

/// A run's number in its store, as `fsynclab runs` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunId(pub i64);

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for RunId {
    type Err = String;
    fn from_str(s: &str) -> Result<RunId, String> {
        s.parse::<i64>()
            .ok()
            .filter(|&n| n > 0)
            .map(RunId)
            .ok_or_else(|| format!("'{s}' is not a run id: expected a number as `fsynclab runs` lists it"))
    }
}

/// Where a run sits in a matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatrixPlace {
    pub matrix_id: String,
    /// The cell's (axis, value) pairs in the matrix's axis order, e.g.
    /// `[("device", "ram"), ("coordination", "none")]`. Stored as a JSON array of pairs, since
    /// values such as mount options hold `=` and `,`.
    pub axes: Vec<(String, String)>,
    /// 0-based repetition of the cell.
    pub repetition: u32,
}

impl MatrixPlace {
    /// `device=ram coordination=none`, for a listing.
    pub fn cell_label(&self) -> String {
        self.axes
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The stored form of a cell's axes (compact JSON pairs) and back; unreadable text gives no
/// axes rather than failing a listing.
fn axes_to_text(axes: &[(String, String)]) -> String {
    serde_json::to_string(axes).unwrap_or_else(|_| "[]".into())
}

fn axes_from_text(text: Option<String>) -> Vec<(String, String)> {
    text.and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default()
}

/// A matrix as planned: its id, scenario, and the plan (axes, repetitions, order) as JSON.
#[derive(Clone, Debug, PartialEq)]
pub struct MatrixRecord {
    pub id: String,
    pub scenario: String,
    /// RFC 3339 UTC.
    pub created_at: String,
    pub plan: Value,
}

/// Which runs [`Store::runs`] lists; every condition given must hold.
#[derive(Clone, Debug, Default)]
pub struct RunFilter {
    pub scenario: Option<String>,
    /// Runs started at or after this RFC 3339 time or date prefix (`2026-11-22`).
    pub since: Option<String>,
    pub matrix_id: Option<String>,
    /// Parameters with exactly these values.
    pub params: Vec<(String, String)>,
    /// Text found in the parameters or the environment (ASCII case-insensitive).
    pub contains: Vec<String>,
    /// The newest `limit` runs only.
    pub limit: Option<usize>,
}

/// A stored run as `fsynclab runs` lists it: everything but tables, findings and samples.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSummary {
    pub id: RunId,
    pub uid: String,
    pub scenario: String,
    pub started_at: String,
    pub recorded_at: String,
    pub duration_s: f64,
    pub interrupted: bool,
    pub sample_count: u64,
    pub params: BTreeMap<String, String>,
    pub environment: Value,
    pub ops: Value,
    pub background: Option<Value>,
    pub matrix: Option<MatrixPlace>,
}

impl RunSummary {
    /// The run-level figures of the run, for `fsynclab compare`.
    pub fn figures(&self) -> Result<crate::compare::RunFigures, crate::compare::figures::FigureError> {
        let mut head = Map::new();
        head.insert("duration_s".into(), self.duration_s.into());
        head.insert("ops".into(), self.ops.clone());
        if let Some(b) = &self.background {
            head.insert("background".into(), b.clone());
        }
        crate::compare::run_figures(&self.id.to_string(), &Value::Object(head))
    }
}

/// A run read back whole.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredRun {
    pub id: RunId,
    pub uid: String,
    pub recorded_at: String,
    pub matrix: Option<MatrixPlace>,
    /// The result's JSON object without its samples.
    pub result: Map<String, Value>,
    pub samples: SampleColumns,
}

/// The result keys in the order `RunResult` serialises them; `samples` is written in its
/// place, and keys the store does not know come after.
const RESULT_ORDER: [&str; 12] = [
    "schema_version",
    "scenario",
    "started_at",
    "duration_s",
    "interrupted",
    "params",
    "environment",
    "ops",
    "samples",
    "background",
    "tables",
    "findings",
];

/// Serialises [`SampleColumns`] as the result's `samples` array, one object a call, without
/// building them in memory first.
struct SamplesJson<'a>(&'a SampleColumns);

impl Serialize for SamplesJson<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut seq = ser.serialize_seq(Some(self.0.len()))?;
        for s in self.0.iter() {
            seq.serialize_element(&OneSample(s))?;
        }
        seq.end()
    }
}

struct OneSample<'a>(SampleRef<'a>);

impl Serialize for OneSample<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let s = &self.0;
        let mut m = ser.serialize_map(Some(4 + usize::from(s.error.is_some())))?;
        m.serialize_entry("t_ns", &s.t_ns)?;
        m.serialize_entry("op", s.op)?;
        m.serialize_entry("latency_ns", &s.latency_ns)?;
        m.serialize_entry("bytes", &s.bytes)?;
        if let Some(e) = s.error {
            m.serialize_entry("error", e)?;
        }
        m.end()
    }
}

/// A stored run as its result JSON, streamed.
struct ResultJson<'a>(&'a StoredRun);

impl Serialize for ResultJson<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let r = &self.0.result;
        let mut m = ser.serialize_map(None)?;
        for key in RESULT_ORDER {
            if key == "samples" {
                m.serialize_entry(key, &SamplesJson(&self.0.samples))?;
            } else if let Some(v) = r.get(key) {
                m.serialize_entry(key, v)?;
            }
        }
        for (k, v) in r.iter().filter(|(k, _)| !RESULT_ORDER.contains(&k.as_str())) {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl StoredRun {
    /// Writes the run as its result JSON (schema-valid, samples included) to `out`,
    /// streaming the samples; `out` should be buffered.
    pub fn write_result_json<W: Write>(&self, out: W, pretty: bool) -> serde_json::Result<()> {
        if pretty {
            serde_json::to_writer_pretty(out, &ResultJson(self))
        } else {
            serde_json::to_writer(out, &ResultJson(self))
        }
    }

    /// The run as one JSON value with its samples: fine for a few thousand samples; for a
    /// long run prefer [`StoredRun::write_result_json`].
    pub fn result_value(&self) -> Value {
        serde_json::to_value(ResultJson(self)).unwrap_or(Value::Null)
    }
}

/// The results store.
pub struct Store {
    conn: Connection,
    /// For messages.
    path: String,
}

fn random_uid() -> Result<String, StoreError> {
    use std::io::Read;
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(StoreError::Random)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// LIKE pattern matching `text` anywhere, with LIKE's wildcards in it escaped by `\`.
fn like_anywhere(text: &str) -> String {
    let escaped = text.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
    format!("%{escaped}%")
}

/// Parses a JSON column; a damaged one reads as null rather than failing a listing.
fn json_col(text: Option<String>) -> Value {
    text.and_then(|t| serde_json::from_str(&t).ok()).unwrap_or(Value::Null)
}

impl Store {
    /// Opens the store at `path`, creating it (and its directory) if needed, and brings its
    /// schema up to date.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let shown = path.display().to_string();
        let conn = Connection::open(path).map_err(|source| StoreError::Sqlite {
            path: shown.clone(),
            source,
        })?;
        Store::setup(conn, shown)
    }

    /// A store in memory, for tests and for a report of runs not kept.
    pub fn open_in_memory() -> Result<Store, StoreError> {
        let conn = Connection::open_in_memory().map_err(|source| StoreError::Sqlite {
            path: ":memory:".into(),
            source,
        })?;
        Store::setup(conn, ":memory:".into())
    }

    fn setup(mut conn: Connection, path: String) -> Result<Store, StoreError> {
        let sql = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        // WAL: readers (`fsynclab runs` in another terminal) do not block a matrix writing
        // its cells; NORMAL sync is durable at every checkpoint and never corrupts. The busy
        // timeout lets two fsynclab processes share the store.
        conn.busy_timeout(std::time::Duration::from_secs(10)).map_err(sql)?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(sql)?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(sql)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(sql)?;
        let found = schema::version(&conn).map_err(sql)?;
        let known = schema::latest();
        if found > known {
            return Err(StoreError::NewerSchema { path, found, known });
        }
        if found == 0 && schema::any_table(&conn).map_err(sql)? {
            return Err(StoreError::NotAStore { path });
        }
        if found < known {
            schema::migrate(&mut conn, known, &crate::result::now_rfc3339()).map_err(sql)?;
        }
        Ok(Store { conn, path })
    }

    fn sql(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        |source| StoreError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    /// The store's schema version.
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        schema::version(&self.conn).map_err(self.sql())
    }

    /// Records a run: `result` is its result JSON object (a `samples` member, if present,
    /// is ignored: the samples come as `samples`, in the order they should come back),
    /// `matrix` its place in a matrix (made by [`Store::create_matrix`]). One transaction: the run is stored whole or not at all.
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

        // Encode before the transaction, so the database is locked only for the writes.
        let blocks: Vec<(usize, Vec<u8>)> = samples
            .chunks(BLOCK_SAMPLES)
            .map(|c| (c.len(), codec::encode(c)))
            .collect();

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
        {
            let mut insert = tx
                .prepare(
                    "INSERT INTO sample_blocks (run_id, block, sample_count, format, data) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(&sql)?;
            for (i, (count, data)) in blocks.iter().enumerate() {
                insert
                    .execute(params![id, i as i64, *count as i64, i64::from(codec::FORMAT), data])
                    .map_err(&sql)?;
            }
        }
        tx.commit().map_err(&sql)?;
        Ok(RunId(id))
    }

    /// The runs `filter` selects, oldest first.
    pub fn runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        let mut conditions: Vec<String> = Vec::new();
        let mut args: Vec<String> = Vec::new();
        let arg = |args: &mut Vec<String>, v: String| {
            args.push(v);
            format!("?{}", args.len())
        };
        if let Some(s) = &filter.scenario {
            let p = arg(&mut args, s.clone());
            conditions.push(format!("scenario = {p}"));
        }
        if let Some(s) = &filter.since {
            let p = arg(&mut args, s.clone());
            conditions.push(format!("started_at >= {p}"));
        }
        if let Some(m) = &filter.matrix_id {
            let p = arg(&mut args, m.clone());
            conditions.push(format!("matrix_id = {p}"));
        }
        for (k, v) in &filter.params {
            // Parameters are stored as compact JSON: a pair appears as "k":"v".
            let pair = format!("{}:{}", Value::from(k.as_str()), Value::from(v.as_str()));
            let p = arg(&mut args, like_anywhere(&pair));
            conditions.push(format!("params LIKE {p} ESCAPE '\\'"));
        }
        for text in &filter.contains {
            let p = arg(&mut args, like_anywhere(text));
            conditions.push(format!(
                "(params LIKE {p} ESCAPE '\\' OR environment LIKE {p} ESCAPE '\\')"
            ));
        }
        let mut sql = String::from(
            "SELECT id, uid, scenario, started_at, recorded_at, duration_s, interrupted, sample_count,
                    params, environment, ops, background, matrix_id, matrix_cell, matrix_repetition
             FROM runs",
        );
        if !conditions.is_empty() {
            sql.push_str(" WHERE ");
            sql.push_str(&conditions.join(" AND "));
        }
        // The newest `limit`, shown oldest first.
        match filter.limit {
            Some(n) => {
                sql = format!(
                "SELECT * FROM ({sql} ORDER BY started_at DESC, id DESC LIMIT {n}) AS newest ORDER BY started_at, id"
            )
            }
            None => sql.push_str(" ORDER BY started_at, id"),
        }
        let mut stmt = self.conn.prepare(&sql).map_err(self.sql())?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args.iter()), |r| {
                let params: BTreeMap<String, String> =
                    serde_json::from_str(&r.get::<_, String>(8)?).unwrap_or_default();
                let matrix_id: Option<String> = r.get(12)?;
                Ok(RunSummary {
                    id: RunId(r.get(0)?),
                    uid: r.get(1)?,
                    scenario: r.get(2)?,
                    started_at: r.get(3)?,
                    recorded_at: r.get(4)?,
                    duration_s: r.get(5)?,
                    interrupted: r.get::<_, i64>(6)? != 0,
                    sample_count: r.get::<_, i64>(7)? as u64,
                    params,
                    environment: json_col(r.get(9)?),
                    ops: json_col(r.get(10)?),
                    background: r.get::<_, Option<String>>(11)?.map(|t| json_col(Some(t))),
                    matrix: match matrix_id {
                        Some(matrix_id) => Some(MatrixPlace {
                            matrix_id,
                            axes: axes_from_text(r.get(13)?),
                            repetition: r.get::<_, Option<i64>>(14)?.unwrap_or(0) as u32,
                        }),
                        None => None,
                    },
                })
            })
            .map_err(self.sql())?;
        rows.collect::<Result<Vec<_>, _>>().map_err(self.sql())
    }

    /// One run, whole: its result JSON and its samples.
    pub fn run(&self, id: RunId) -> Result<StoredRun, StoreError> {
        type Row = (
            String,
            String,
            Option<String>,
            Option<String>,
            Option<i64>,
            Map<String, Value>,
        );
        let row: Option<Row> = self
            .conn
            .query_row(
                "SELECT uid, recorded_at, matrix_id, matrix_cell, matrix_repetition, scenario, started_at,
                        duration_s, interrupted, result_schema_version, params, environment, ops,
                        background, tables, findings, extra
                 FROM runs WHERE id = ?1",
                [id.0],
                |r| {
                    let mut result = Map::new();
                    result.insert("schema_version".into(), r.get::<_, i64>(9)?.into());
                    result.insert("scenario".into(), r.get::<_, String>(5)?.into());
                    result.insert("started_at".into(), r.get::<_, String>(6)?.into());
                    result.insert("duration_s".into(), r.get::<_, f64>(7)?.into());
                    result.insert("interrupted".into(), (r.get::<_, i64>(8)? != 0).into());
                    result.insert("params".into(), json_col(r.get(10)?));
                    result.insert("environment".into(), json_col(r.get(11)?));
                    result.insert("ops".into(), json_col(r.get(12)?));
                    result.insert("background".into(), json_col(r.get(13)?));
                    result.insert("tables".into(), json_col(r.get(14)?));
                    result.insert("findings".into(), json_col(r.get(15)?));
                    if let Value::Object(extra) = json_col(r.get(16)?) {
                        result.extend(extra);
                    }
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, result))
                },
            )
            .optional()
            .map_err(self.sql())?;
        let (uid, recorded_at, matrix_id, cell, repetition, result) = row.ok_or_else(|| StoreError::NoSuchRun {
            path: self.path.clone(),
            id,
        })?;
        Ok(StoredRun {
            id,
            uid,
            recorded_at,
            matrix: matrix_id.map(|matrix_id| MatrixPlace {
                matrix_id,
                axes: axes_from_text(cell),
                repetition: repetition.unwrap_or(0) as u32,
            }),
            result,
            samples: self.samples(id)?,
        })
    }

    /// The samples of one run, decoded.
    pub fn samples(&self, id: RunId) -> Result<SampleColumns, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT data FROM sample_blocks WHERE run_id = ?1 ORDER BY block")
            .map_err(self.sql())?;
        let mut rows = stmt.query([id.0]).map_err(self.sql())?;
        let mut out = SampleColumns::default();
        while let Some(row) = rows.next().map_err(self.sql())? {
            let data = row
                .get_ref(0)
                .and_then(|v| v.as_blob().map_err(Into::into))
                .map_err(self.sql())?;
            let block = codec::decode(data).map_err(|source| StoreError::Samples {
                path: self.path.clone(),
                id,
                source,
            })?;
            if out.is_empty() {
                out = block;
            } else {
                out.append(block);
            }
        }
        Ok(out)
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

    pub fn matrix(&self, id: &str) -> Result<Option<MatrixRecord>, StoreError> {
        self.conn
            .query_row(
                "SELECT id, scenario, created_at, plan FROM matrices WHERE id = ?1",
                [id],
                |r| {
                    Ok(MatrixRecord {
                        id: r.get(0)?,
                        scenario: r.get(1)?,
                        created_at: r.get(2)?,
                        plan: json_col(r.get(3)?),
                    })
                },
            )
            .optional()
            .map_err(self.sql())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_location_follows_flag_env_xdg_home() {
        let p = |flag: Option<&str>, env: Option<&str>, xdg: Option<&str>, home: Option<&str>| {
            choose_path(flag.map(Path::new), env, xdg, home).map(|p| p.display().to_string())
        };
        assert_eq!(
            p(Some("a.sqlite"), Some("/e"), Some("/x"), Some("/h")).unwrap(),
            "a.sqlite"
        );
        assert_eq!(
            p(None, Some("/e/s.sqlite"), Some("/x"), Some("/h")).unwrap(),
            "/e/s.sqlite"
        );
        assert_eq!(
            p(None, Some(""), Some("/x"), Some("/h")).unwrap(),
            "/x/fsynclab/results.sqlite"
        );
        assert_eq!(
            p(None, None, Some("rel"), Some("/h")).unwrap(),
            "/h/.local/share/fsynclab/results.sqlite"
        );
        assert_eq!(p(None, None, None, None), None);
    }

    #[test]
    fn run_ids_parse_with_a_useful_error() {
        assert_eq!("12".parse::<RunId>(), Ok(RunId(12)));
        assert!("abc".parse::<RunId>().unwrap_err().contains("fsynclab runs"));
        assert!("0".parse::<RunId>().is_err());
    }

    /// A store made by the first schema (before matrices existed) opens with today's code:
    /// migrated in place, its run still there, now outside any matrix.
    #[test]
    fn issue11_store_of_schema_1_is_migrated_and_keeps_its_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.sqlite");
        {
            let mut conn = Connection::open(&path).unwrap();
            assert_eq!(schema::migrate(&mut conn, 1, "2026-01-01T00:00:00Z").unwrap(), 1);
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

    #[test]
    fn like_patterns_escape_wildcards() {
        assert_eq!(like_anywhere("50%_a\\b"), "%50\\%\\_a\\\\b%");
    }
}
