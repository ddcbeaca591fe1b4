//! Opening a store: a file or a PostgreSQL database to record runs in (made and brought up
//! to date if needed), or an existing store read without changing it; a database that is
//! not a fsynclab store is refused before anything in it changes. And waiting out a busy
//! SQLite store.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::backend::{Begin, Db, DbError, Pg, Sqlite};
use super::{schema, Location, Store, StoreError};

/// How long a process waits for another that holds the store's write lock.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs `f` again while the store is busy (another process holds a lock SQLite does not
/// wait for through the busy timeout, e.g. while a journal mode changes), for up to
/// [`BUSY_TIMEOUT`].
fn retry_busy<T, E: IsBusy>(mut f: impl FnMut() -> Result<T, E>) -> Result<T, E> {
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
trait IsBusy {
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
}

/// A PostgreSQL server that cannot be reached or refuses the user: said with what to check.
pub(super) fn connect_error(path: &str, source: DbError) -> StoreError {
    StoreError::Connect {
        path: path.to_string(),
        source,
    }
}

pub(super) fn db_error(path: &str, source: impl Into<DbError>) -> StoreError {
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
