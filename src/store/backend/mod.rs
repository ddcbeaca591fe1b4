//! The database under the store: an SQLite file or a PostgreSQL database, behind one enum,
//! so that every query of the store ([`super::read`], [`super::write`], [`super::claims`],
//! [`super::schema`]) is written once, in SQLite's spelling, and runs on either.
//!
//! What differs is kept here and in the two files beside it, each of which runs the
//! statements its own way ([`Backend`]):
//! - placeholders: the store writes `?1`, PostgreSQL takes `$1` ([`postgres_sql`]);
//! - `LIKE` is ASCII case-insensitive in SQLite and case-sensitive in PostgreSQL, whose
//!   `ILIKE` is what the store means;
//! - the migrations' column types: SQLite's `INTEGER PRIMARY KEY` gives the run ids, which
//!   PostgreSQL gives with an identity column; `INTEGER` is `BIGINT` there (so that every
//!   integer binds as `i64`) and `BLOB` is `BYTEA` ([`postgres_ddl`]);
//! - an immediate transaction, which takes the write lock at once: `BEGIN IMMEDIATE` in
//!   SQLite, a transaction-scoped advisory lock in PostgreSQL, so that whatever the store
//!   makes in one (a new schema, a claim on a matrix cell, a matrix's number) is made by one
//!   process at a time on either;
//! - whether a table exists (`sqlite_master`, `information_schema.tables`).

mod pg;
mod sqlite;

use std::borrow::Cow;
use std::fmt;

pub(crate) use pg::Pg;
pub(crate) use sqlite::Sqlite;

/// A failure of the database under the store. Its message says all there is (a PostgreSQL
/// error's, the server's message or each cause), so it names no source: printed with its
/// sources (`Error: {:#}`), the server's message came three times.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("{0}")]
    Sqlite(rusqlite::Error),
    #[error("{}", pg::describe(.0))]
    Postgres(postgres::Error),
    /// A column holds another type than the store wrote there.
    #[error("column {column}: {what}")]
    Column { column: usize, what: String },
}

impl From<rusqlite::Error> for DbError {
    fn from(e: rusqlite::Error) -> Self {
        DbError::Sqlite(e)
    }
}

impl From<postgres::Error> for DbError {
    fn from(e: postgres::Error) -> Self {
        DbError::Postgres(e)
    }
}

impl DbError {
    /// SQLite's code, for the retries and the read-only fallbacks that need it.
    pub(crate) fn sqlite_code(&self) -> Option<rusqlite::ErrorCode> {
        match self {
            DbError::Sqlite(e) => e.sqlite_error_code(),
            _ => None,
        }
    }
}

/// A value bound to a placeholder.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Arg<'a> {
    Null,
    Int(i64),
    Real(f64),
    Text(Cow<'a, str>),
    Blob(&'a [u8]),
}

impl From<i64> for Arg<'_> {
    fn from(v: i64) -> Self {
        Arg::Int(v)
    }
}

impl From<f64> for Arg<'_> {
    fn from(v: f64) -> Self {
        Arg::Real(v)
    }
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(v: &'a str) -> Self {
        Arg::Text(Cow::Borrowed(v))
    }
}

impl<'a> From<&'a String> for Arg<'a> {
    fn from(v: &'a String) -> Self {
        Arg::Text(Cow::Borrowed(v))
    }
}

impl From<String> for Arg<'_> {
    fn from(v: String) -> Self {
        Arg::Text(Cow::Owned(v))
    }
}

impl<'a> From<&'a [u8]> for Arg<'a> {
    fn from(v: &'a [u8]) -> Self {
        Arg::Blob(v)
    }
}

impl<'a, T: Into<Arg<'a>>> From<Option<T>> for Arg<'a> {
    fn from(v: Option<T>) -> Self {
        v.map_or(Arg::Null, Into::into)
    }
}

/// `[a, b, c]` as the arguments of a query: `args![id, name]`.
macro_rules! args {
    ($($a:expr),* $(,)?) => {
        &[$($crate::store::backend::Arg::from($a)),*][..]
    };
}
pub(crate) use args;

/// A row of a query's result, read by column number.
pub(crate) trait Row {
    fn int(&self, i: usize) -> Result<i64, DbError>;
    fn opt_int(&self, i: usize) -> Result<Option<i64>, DbError>;
    fn real(&self, i: usize) -> Result<f64, DbError>;
    fn text(&self, i: usize) -> Result<String, DbError>;
    fn opt_text(&self, i: usize) -> Result<Option<String>, DbError>;
    /// A blob, borrowed from the row (SQLite's without a copy).
    fn with_blob(&self, i: usize, f: &mut dyn FnMut(&[u8])) -> Result<(), DbError>;
}

/// What a query does with each row of its result, in order; an error stops the query.
pub(crate) type EachRow<'f> = &'f mut dyn FnMut(&dyn Row) -> Result<(), DbError>;

/// How one kind of database runs the store's statements.
pub(crate) trait Backend {
    /// Runs a statement; the rows it changed.
    fn execute(&self, sql: &str, args: &[Arg<'_>]) -> Result<u64, DbError>;
    /// Runs several statements without arguments (a migration).
    fn execute_batch(&self, sql: &str) -> Result<(), DbError>;
    /// Runs a query, each row of its result to `each`.
    fn query(&self, sql: &str, args: &[Arg<'_>], each: EachRow<'_>) -> Result<(), DbError>;
    /// Begins a transaction, `how` as each database can.
    fn begin(&self, how: Begin) -> Result<(), DbError>;
}

/// How a transaction begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Begin {
    /// Reads see one state of the store; the write lock is taken at the first write.
    Deferred,
    /// The write lock is taken at once: one process at a time.
    Immediate,
    /// Reads only, every one of them of one state of the database: SQLite's deferred
    /// transaction gives that, PostgreSQL's default isolation (read committed) does not —
    /// each statement sees what was committed when it began — so there it is a read-only
    /// repeatable-read transaction.
    Snapshot,
}

/// The database under a store.
pub(crate) enum Db {
    Sqlite(Sqlite),
    Postgres(Pg),
}

impl fmt::Debug for Db {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Db::Sqlite(_) => "Db::Sqlite",
            Db::Postgres(_) => "Db::Postgres",
        })
    }
}

impl Db {
    fn backend(&self) -> &dyn Backend {
        match self {
            Db::Sqlite(db) => db,
            Db::Postgres(db) => db,
        }
    }

    /// Runs a statement; the rows it changed.
    pub(crate) fn execute(&self, sql: &str, args: &[Arg<'_>]) -> Result<u64, DbError> {
        self.backend().execute(sql, args)
    }

    /// Runs several statements without arguments (a migration).
    pub(crate) fn execute_batch(&self, sql: &str) -> Result<(), DbError> {
        self.backend().execute_batch(sql)
    }

    /// Runs a query, `f` making a value of each row, in order.
    pub(crate) fn query_map<T>(
        &self,
        sql: &str,
        args: &[Arg<'_>],
        mut f: impl FnMut(&dyn Row) -> Result<T, DbError>,
    ) -> Result<Vec<T>, DbError> {
        let mut out = Vec::new();
        self.backend().query(sql, args, &mut |row| {
            out.push(f(row)?);
            Ok(())
        })?;
        Ok(out)
    }

    /// The first row's value, if there is a row.
    pub(crate) fn query_opt<T>(
        &self,
        sql: &str,
        args: &[Arg<'_>],
        f: impl FnMut(&dyn Row) -> Result<T, DbError>,
    ) -> Result<Option<T>, DbError> {
        Ok(self.query_map(sql, args, f)?.into_iter().next())
    }

    /// Whether the query finds a row.
    pub(crate) fn exists(&self, sql: &str, args: &[Arg<'_>]) -> Result<bool, DbError> {
        Ok(self.query_opt(sql, args, |_| Ok(()))?.is_some())
    }

    pub(crate) fn begin(&self, how: Begin) -> Result<(), DbError> {
        self.backend().begin(how)
    }

    pub(crate) fn commit(&self) -> Result<(), DbError> {
        self.execute_batch("COMMIT")
    }

    pub(crate) fn rollback(&self) -> Result<(), DbError> {
        self.execute_batch("ROLLBACK")
    }

    /// Runs `f` in a transaction begun `how`: committed when `f` returns `Ok`, rolled back
    /// when it fails (and the failure returned).
    pub(crate) fn transaction<T, E: From<DbError>>(
        &self,
        how: Begin,
        f: impl FnOnce(&Db) -> Result<T, E>,
    ) -> Result<T, E> {
        self.begin(how)?;
        match f(self) {
            Ok(v) => {
                if let Err(e) = self.commit() {
                    // A failed COMMIT may leave the transaction open (SQLite, busy).
                    let _ = self.rollback();
                    return Err(e.into());
                }
                Ok(v)
            }
            Err(e) => {
                let _ = self.rollback();
                Err(e)
            }
        }
    }

    /// Whether `name` is a table of the database.
    pub(crate) fn table_exists(&self, name: &str) -> Result<bool, DbError> {
        let sql = match self {
            Db::Sqlite(_) => "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            Db::Postgres(_) => {
                "SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?1"
            }
        };
        self.exists(sql, args![name])
    }

    /// Whether the database has any table, to tell a new one from someone else's.
    pub(crate) fn any_table(&self) -> Result<bool, DbError> {
        let sql = match self {
            Db::Sqlite(_) => "SELECT 1 FROM sqlite_master WHERE type = 'table' LIMIT 1",
            Db::Postgres(_) => "SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() LIMIT 1",
        };
        self.exists(sql, &[])
    }

    /// A migration's statements as this database takes them.
    pub(crate) fn ddl<'s>(&self, sql: &'s str) -> Cow<'s, str> {
        match self {
            Db::Sqlite(_) => Cow::Borrowed(sql),
            Db::Postgres(_) => Cow::Owned(postgres_ddl(sql)),
        }
    }

    /// Whether the database was opened read-only (an SQLite file that cannot be written).
    pub(crate) fn is_read_only(&self) -> bool {
        match self {
            Db::Sqlite(db) => db.is_read_only(),
            Db::Postgres(_) => false,
        }
    }
}

/// A query in SQLite's spelling as PostgreSQL takes it: `?N` placeholders become `$N` and
/// `LIKE` becomes `ILIKE` (SQLite's LIKE ignores ASCII case), outside quoted text.
pub(crate) fn postgres_sql(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut quoted = false;
    let mut rest = sql;
    while let Some(c) = rest.chars().next() {
        if c == '\'' {
            quoted = !quoted;
        }
        if !quoted && c == '?' && rest[1..].starts_with(|d: char| d.is_ascii_digit()) {
            out.push('$');
            rest = &rest[1..];
            continue;
        }
        if !quoted && starts_word(rest, "LIKE") && !out.ends_with(|p: char| p.is_ascii_alphanumeric() || p == '_') {
            out.push_str("ILIKE");
            rest = &rest[4..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Whether `text` starts with the whole word `word`.
fn starts_word(text: &str, word: &str) -> bool {
    text.starts_with(word) && !text[word.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
}

/// A migration in SQLite's spelling as PostgreSQL takes it: the run id an identity column,
/// `INTEGER` as `BIGINT`, `BLOB` as `BYTEA`.
pub(crate) fn postgres_ddl(sql: &str) -> String {
    let sql = sql.replace(
        "id INTEGER PRIMARY KEY,",
        "id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,",
    );
    let mut out = String::with_capacity(sql.len() + 32);
    let mut rest = sql.as_str();
    while let Some(c) = rest.chars().next() {
        let after_word = out.ends_with(|p: char| p.is_ascii_alphanumeric() || p == '_');
        if !after_word && starts_word(rest, "INTEGER") {
            out.push_str("BIGINT");
            rest = &rest["INTEGER".len()..];
        } else if !after_word && starts_word(rest, "BLOB") {
            out.push_str("BYTEA");
            rest = &rest["BLOB".len()..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_spelled_for_postgres() {
        assert_eq!(
            postgres_sql("SELECT a FROM t WHERE b = ?1 AND c LIKE ?12 ESCAPE '\\' AND d = '?3 LIKE'"),
            "SELECT a FROM t WHERE b = $1 AND c ILIKE $12 ESCAPE '\\' AND d = '?3 LIKE'"
        );
        assert_eq!(postgres_sql("SELECT likes, ALIKE FROM t"), "SELECT likes, ALIKE FROM t");
    }

    #[test]
    fn migrations_are_spelled_for_postgres() {
        assert_eq!(
            postgres_ddl("CREATE TABLE runs (\n    id INTEGER PRIMARY KEY,\n    n INTEGER NOT NULL,\n    data BLOB NOT NULL,\n    points INTEGERS\n);"),
            "CREATE TABLE runs (\n    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,\n    n BIGINT NOT NULL,\n    data BYTEA NOT NULL,\n    points INTEGERS\n);"
        );
        assert_eq!(
            postgres_ddl("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, x TEXT)"),
            "CREATE TABLE schema_version (version BIGINT PRIMARY KEY, x TEXT)"
        );
    }
}
