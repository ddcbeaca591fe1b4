//! The store in an SQLite file: statements prepared once and cached (a run's sample blocks
//! reuse one insert), blobs read in place.

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::Connection;

use super::{Arg, Begin, DbError, Row};

pub(crate) struct Sqlite {
    pub(crate) conn: Connection,
}

impl rusqlite::ToSql for Arg<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Arg::Null => ValueRef::Null,
            Arg::Int(v) => ValueRef::Integer(*v),
            Arg::Real(v) => ValueRef::Real(*v),
            Arg::Text(v) => ValueRef::Text(v.as_bytes()),
            Arg::Blob(v) => ValueRef::Blob(v),
        }))
    }
}

struct SqliteRow<'r, 's>(&'r rusqlite::Row<'s>);

impl Row for SqliteRow<'_, '_> {
    fn int(&self, i: usize) -> Result<i64, DbError> {
        Ok(self.0.get(i)?)
    }
    fn opt_int(&self, i: usize) -> Result<Option<i64>, DbError> {
        Ok(self.0.get(i)?)
    }
    fn real(&self, i: usize) -> Result<f64, DbError> {
        Ok(self.0.get(i)?)
    }
    fn text(&self, i: usize) -> Result<String, DbError> {
        Ok(self.0.get(i)?)
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>, DbError> {
        Ok(self.0.get(i)?)
    }
    fn with_blob(&self, i: usize, f: &mut dyn FnMut(&[u8])) -> Result<(), DbError> {
        let data = self.0.get_ref(i)?.as_blob().map_err(rusqlite::Error::from)?;
        f(data);
        Ok(())
    }
}

impl Sqlite {
    pub(crate) fn execute(&self, sql: &str, args: &[Arg<'_>]) -> Result<u64, DbError> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        Ok(stmt.execute(rusqlite::params_from_iter(args.iter()))? as u64)
    }

    pub(crate) fn execute_batch(&self, sql: &str) -> Result<(), DbError> {
        Ok(self.conn.execute_batch(sql)?)
    }

    pub(crate) fn query_map<T>(
        &self,
        sql: &str,
        args: &[Arg<'_>],
        f: &mut dyn FnMut(&dyn Row) -> Result<T, DbError>,
    ) -> Result<Vec<T>, DbError> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        let mut rows = stmt.query(rusqlite::params_from_iter(args.iter()))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(f(&SqliteRow(row))?);
        }
        Ok(out)
    }

    pub(crate) fn begin(&self, how: Begin) -> Result<(), DbError> {
        Ok(self.conn.execute_batch(match how {
            Begin::Deferred | Begin::Snapshot => "BEGIN DEFERRED",
            Begin::Immediate => "BEGIN IMMEDIATE",
        })?)
    }

    pub(crate) fn is_read_only(&self) -> bool {
        self.conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false)
    }
}
