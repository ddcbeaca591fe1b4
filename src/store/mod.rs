//! The results store: every run fsynclab makes, kept in one SQLite file (or one PostgreSQL
//! database, which a farm of hosts shares) with its parameters, environment, the host that
//! made it, summary, tables, findings, background summary, its place in a matrix, and
//! every per-call sample in the compact encoding of [`codec`] (6 bytes a sample on a real
//! fsync-tps run, where its result JSON takes 108; `benches/store_cost.rs` measures it).
//!
//! Where it is, first that applies: `--store PATH` (or `--store postgres://USER@HOST/DB`);
//! the environment variable `FSYNCLAB_STORE`; `$XDG_DATA_HOME/fsynclab/results.sqlite`;
//! `~/.local/share/fsynclab/results.sqlite` (the XDG Base Directory default).
//!
//! A run goes in as its result's JSON object (the shape of `schema/result-v1.schema.json`)
//! with the samples beside it, and comes back in the same shape: fields the store does not
//! know (a later result version's timeline, attributions) are kept whole in `extra` and
//! returned. The schema is versioned ([`schema`]) and the same on both databases: every
//! query is written once, and [`backend`] runs it on SQLite or PostgreSQL.
//!
//! - [`location`]: where the store is
//! - [`write`] records runs and matrices; [`read`] lists and reads them back; [`claims`]:
//!   which process makes which run of a matrix
//! - [`json`]: a stored run streamed out as its result JSON
//! - [`codec`]: the samples' compact encoding; [`schema`]: tables and migrations
//! - [`backend`]: the database under it; [`copy`]: runs moved from one store to another

pub(crate) mod backend;
mod claims;
pub mod codec;
mod copy;
mod json;
mod location;
mod read;
pub(crate) mod schema;
mod write;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use rusqlite::{Connection, OpenFlags};
use serde_json::{Map, Value};

use crate::result::RunResult;
use backend::{Begin, Db, DbError, Pg, Sqlite};
pub use claims::{Claim, ClaimOwner};
pub use copy::Copied;

pub use codec::{SampleColumns, SampleRecord, SampleRef};
pub use location::{choose_path, resolve, Location, STORE_ENV};

/// Samples per stored block: about 1.5 MB each, so no single value comes near SQLite's
/// 1 GB limit however long a run is, and a reader can stream a run block by block.
pub const BLOCK_SAMPLES: usize = 1 << 18;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no place for the results store: HOME is not set; give --store PATH or set {STORE_ENV}")]
    NoLocation,
    #[error("{given}: unknown scheme {scheme}://; a results store is a file path or postgres://USER@HOST/DB (postgresql:// too)")]
    UnknownScheme { given: String, scheme: String },
    #[error("cannot create the directory of the results store {path}: {source}")]
    CreateDir { path: PathBuf, source: std::io::Error },
    #[error("results store {path}: {source}")]
    Database { path: String, source: DbError },
    #[error("results store {path}: {source}; check that PostgreSQL runs there and has this database, user and password (the password in the address or PGPASSWORD)")]
    Connect { path: String, source: DbError },
    #[error("results store {path} has schema version {found}, newer than this fsynclab knows ({known}): use a newer fsynclab, or --store another file")]
    NewerSchema { path: String, found: u32, known: u32 },
    #[error("results store {path} cannot be written: it opens read-only only (on a read-only mount, immutable: `lsattr` shows i, or a file this user may not write)")]
    ReadOnly { path: String },
    #[error("{path} is {kind} but not a fsynclab results store: give --store another file or database")]
    NotAStore { path: String, kind: &'static str },
    #[error("no results store in {path} yet: the database has no fsynclab tables (`fsynclab run`, `suite` and `matrix` make them)")]
    NoStoreYet { path: String },
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

/// How long a process waits for another that holds the store's write lock.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs `f` again while the store is busy (another process holds a lock SQLite does not
/// wait for through the busy timeout, e.g. while a journal mode changes), for up to
/// [`BUSY_TIMEOUT`].
pub(crate) fn retry_busy<T, E: IsBusy>(mut f: impl FnMut() -> Result<T, E>) -> Result<T, E> {
    let started = std::time::Instant::now();
    loop {
        match f() {
            Err(e) if e.is_busy() && started.elapsed() < BUSY_TIMEOUT => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            r => return r,
        }
    }
}

/// An error that may say the SQLite store is busy.
pub(crate) trait IsBusy {
    fn is_busy(&self) -> bool;
}

impl IsBusy for rusqlite::Error {
    fn is_busy(&self) -> bool {
        matches!(
            self.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        )
    }
}

impl IsBusy for DbError {
    fn is_busy(&self) -> bool {
        matches!(
            self.sqlite_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        )
    }
}

/// Whether SQLite failed to open a file read-only for want of write access around it (a
/// WAL store's -shm file it cannot make on a read-only mount or in another's directory).
fn cannot_open_read_only(e: &DbError) -> bool {
    matches!(
        e.sqlite_code(),
        Some(rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::ReadOnly)
    )
}

/// `file:/abs/path?immutable=1`, the path percent-encoded as RFC 3986 asks.
fn immutable_uri(path: &Path) -> std::io::Result<String> {
    use std::os::unix::ffi::OsStrExt;
    let abs = std::path::absolute(path)?;
    let mut uri = String::from("file:");
    for &b in abs.as_os_str().as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'.' | b'_' | b'~' => uri.push(b as char),
            _ => uri.push_str(&format!("%{b:02X}")),
        }
    }
    uri.push_str("?immutable=1");
    Ok(uri)
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
pub(crate) fn axes_to_text(axes: &[(String, String)]) -> String {
    serde_json::to_string(axes).unwrap_or_else(|_| "[]".into())
}

pub(crate) fn axes_from_text(text: Option<String>) -> Vec<(String, String)> {
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
    /// These runs only (with `ranges`; neither: any). Any number: the store queries them in
    /// groups that stay under SQLite's limit of variables.
    pub ids: Vec<RunId>,
    /// And the runs of these inclusive ranges of ids, never expanded (`1-999999` is one
    /// condition, not a million).
    pub ranges: Vec<(RunId, RunId)>,
    pub scenario: Option<String>,
    /// Runs started at or after this RFC 3339 time or date prefix (`2026-11-22`).
    pub since: Option<String>,
    pub matrix_id: Option<String>,
    /// Runs made on this host (its name as the run recorded it: the scheduler's node name,
    /// else the hostname).
    pub host: Option<String>,
    /// Parameters with exactly these values.
    pub params: Vec<(String, String)>,
    /// Text found in the parameters or the environment (ASCII case-insensitive).
    pub contains: Vec<String>,
    /// The newest `limit` runs only.
    pub limit: Option<usize>,
}

/// A stored run as `fsynclab runs` lists it: the store's columns, and the result without
/// its samples.
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
    pub matrix: Option<MatrixPlace>,
    /// The host that made the run (none for runs recorded before hosts were).
    pub host: Option<String>,
    /// The run's result without its samples (its head), or why this version cannot read it
    /// (a later version's kind of run): the columns above still list such a run.
    pub(crate) head: Result<RunResult, String>,
}

impl RunSummary {
    /// The run-level figures of the run, for `fsynclab compare`.
    pub fn figures(&self) -> Result<crate::compare::RunFigures, crate::compare::figures::FigureError> {
        let run = self.id.to_string();
        match &self.head {
            Ok(head) => crate::compare::run_figures(&run, head),
            Err(reason) => Err(crate::compare::figures::FigureError::Unreadable {
                run,
                reason: reason.clone(),
            }),
        }
    }
}

/// A run read back whole.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredRun {
    pub id: RunId,
    pub uid: String,
    pub recorded_at: String,
    pub matrix: Option<MatrixPlace>,
    /// The host that made the run (none for runs recorded before hosts were).
    pub host: Option<String>,
    /// The result's JSON object without its samples, as stored (`export` writes it out).
    pub result: Map<String, Value>,
    pub samples: SampleColumns,
}

impl StoredRun {
    /// The result without its samples, typed, or why this version cannot read it.
    pub(crate) fn head(&self) -> Result<RunResult, String> {
        head_of(self.result.clone())
    }
}

/// A stored result's JSON object as the result it is (`samples` empty).
fn head_of(object: Map<String, Value>) -> Result<RunResult, String> {
    RunResult::from_object(object).map_err(|e| e.to_string())
}

/// The results store.
pub struct Store {
    db: Db,
    /// For messages: the file, or the database's address without its password.
    path: String,
    /// The schema version the store had when opened (a store read where it cannot be
    /// written keeps an older one), so that reads ask only for the columns it has.
    version: u32,
}

impl Store {
    /// Opens the store at `at` (a file, or `postgres://...`) to record runs, creating it
    /// (and a file's directory) if needed, and brings its schema up to date. A database
    /// that is not a fsynclab store is refused before anything in it changes (issue 19):
    /// no journal switch, no table, no write.
    pub fn open(at: impl Into<Location>) -> Result<Store, StoreError> {
        let at = at.into();
        let shown = at.to_string();
        let db = match &at {
            Location::File(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                        path: dir.to_path_buf(),
                        source,
                    })?;
                }
                // No SQLITE_OPEN_URI: a store named `file:...` is a file of that name.
                let flags =
                    OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
                let conn = Connection::open_with_flags(path, flags).map_err(|e| db_error(&shown, e))?;
                Db::Sqlite(Sqlite { conn })
            }
            Location::Postgres(url) => Db::Postgres(Pg::connect(url.full()).map_err(|e| connect_error(&shown, e))?),
        };
        Store::setup(db, shown)
    }

    /// Opens an existing store to read it, changing nothing and needing no write access
    /// (issue 19): a store on a read-only mount, or another user's 0444 file, reads. When
    /// SQLite cannot open it read-only (a WAL store whose -shm file it cannot make), it is
    /// read as immutable, which nobody can be writing to where nobody may write. A store
    /// older than the reading queries ([`schema::READS_FROM`]) is brought up to date first,
    /// which needs write access once. A PostgreSQL database without a store is refused.
    pub fn open_read_only(at: impl Into<Location>) -> Result<Store, StoreError> {
        let at = at.into();
        let shown = at.to_string();
        let path = match &at {
            Location::File(path) => path,
            Location::Postgres(url) => {
                let db = Db::Postgres(Pg::connect(url.full()).map_err(|e| connect_error(&shown, e))?);
                let version = Store::identify(&db, &shown)?;
                if version == 0 {
                    return Err(StoreError::NoStoreYet { path: shown });
                }
                if version < schema::READS_FROM {
                    return Store::open(at);
                }
                return Ok(Store {
                    db,
                    path: shown,
                    version,
                });
            }
        };
        let sql = |e| db_error(&shown, e);
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let read = |conn: Connection| -> Result<(Db, u32), StoreError> {
            conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
            let db = Db::Sqlite(Sqlite { conn });
            let version = Store::identify(&db, &shown)?;
            Ok((db, version))
        };
        let (db, version) = match Connection::open_with_flags(path, flags).map_err(sql).and_then(read) {
            Ok(opened) => opened,
            Err(StoreError::Database { source, .. }) if cannot_open_read_only(&source) => {
                let uri = immutable_uri(path).map_err(|e| StoreError::CreateDir {
                    path: path.to_path_buf(),
                    source: e,
                })?;
                Connection::open_with_flags(uri, flags | OpenFlags::SQLITE_OPEN_URI)
                    .map_err(sql)
                    .and_then(read)
                    .map_err(|_| StoreError::Database {
                        path: shown.clone(),
                        source,
                    })?
            }
            Err(e) => return Err(e),
        };
        if version < schema::READS_FROM {
            drop(db);
            return Store::open(at);
        }
        db.execute_batch("PRAGMA foreign_keys = ON")
            .map_err(|e| db_error(&shown, e))?;
        Ok(Store {
            db,
            path: shown,
            version,
        })
    }

    /// A store in memory, for tests and for a report of runs not kept.
    pub fn open_in_memory() -> Result<Store, StoreError> {
        let conn = Connection::open_in_memory().map_err(|e| db_error(":memory:", e))?;
        Store::setup(Db::Sqlite(Sqlite { conn }), ":memory:".into())
    }

    /// Refuses a database that is not a store this fsynclab can use, by reading it only;
    /// its schema version (0: an empty database).
    fn identify(db: &Db, path: &str) -> Result<u32, StoreError> {
        // One snapshot, so that both reads see one state of the database: read one by one, a
        // store made by another process between them looked foreign (issue 19; on
        // PostgreSQL, whose reads in one transaction each see the latest commit, issue 17's
        // 8 runs making one new store at once).
        let (found, foreign) = db
            .transaction(Begin::Snapshot, |db| {
                let found = schema::version(db)?;
                Ok::<_, DbError>((found, found == 0 && db.any_table()?))
            })
            .map_err(|e| db_error(path, e))?;
        let known = schema::latest();
        if found > known {
            return Err(StoreError::NewerSchema {
                path: path.to_string(),
                found,
                known,
            });
        }
        if foreign {
            return Err(StoreError::NotAStore {
                path: path.to_string(),
                kind: db.kind(),
            });
        }
        Ok(found)
    }

    fn setup(db: Db, path: String) -> Result<Store, StoreError> {
        let sql = |e: rusqlite::Error| db_error(&path, e);
        if let Db::Sqlite(s) = &db {
            // The busy timeout lets fsynclab processes share the store.
            s.conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
        }
        // What the database is, read before anything is changed in it.
        let found = Store::identify(&db, &path)?;
        if let Db::Sqlite(s) = &db {
            let conn = &s.conn;
            // WAL: readers (`fsynclab runs` in another terminal) do not block a matrix
            // writing its cells; NORMAL sync is durable at every checkpoint and never
            // corrupts.
            retry_busy(|| {
                let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
                if !mode.eq_ignore_ascii_case("wal") {
                    conn.pragma_update(None, "journal_mode", "WAL")?;
                }
                Ok(())
            })
            .map_err(sql)?;
            conn.pragma_update(None, "synchronous", "NORMAL").map_err(sql)?;
            conn.pragma_update(None, "foreign_keys", "ON").map_err(sql)?;
        }
        let mut version = found;
        if found < schema::latest() {
            // Several processes may make a new store at once (a matrix and runs started
            // together, or a farm's first tasks): the schema is made in one immediate
            // transaction, which the others wait for, then find done (issue 19).
            let now = crate::result::now_rfc3339();
            let migrated =
                retry_busy(|| schema::migrate(&db, schema::latest(), &now)).map_err(|e| db_error(&path, e))?;
            match migrated {
                Some(v) => version = v,
                None => return Err(StoreError::NotAStore { path, kind: db.kind() }),
            }
        }
        Ok(Store { db, path, version })
    }

    pub(crate) fn sql(&self) -> impl Fn(DbError) -> StoreError + '_ {
        |source| StoreError::Database {
            path: self.path.clone(),
            source,
        }
    }

    /// The store's schema version.
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        let path = self.path.clone();
        schema::version(&self.db).map_err(|e| db_error(&path, e))
    }

    /// The store as messages name it: its file, or its database's address without the
    /// password.
    pub fn shown(&self) -> &str {
        &self.path
    }

    /// Whether the store is a PostgreSQL database.
    pub fn is_postgres(&self) -> bool {
        matches!(self.db, Db::Postgres(_))
    }
}

/// A PostgreSQL server that cannot be reached or refuses the user: said with what to check.
fn connect_error(path: &str, source: DbError) -> StoreError {
    StoreError::Connect {
        path: path.to_string(),
        source,
    }
}

fn db_error(path: &str, source: impl Into<DbError>) -> StoreError {
    StoreError::Database {
        path: path.to_string(),
        source: source.into(),
    }
}

impl Db {
    /// What kind of database this is, for messages.
    fn kind(&self) -> &'static str {
        match self {
            Db::Sqlite(_) => "an SQLite database",
            Db::Postgres(_) => "a PostgreSQL database with other tables",
        }
    }
}

#[cfg(test)]
mod tests;
