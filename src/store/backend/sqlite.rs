//! The store in an SQLite file: statements prepared once and cached (a run's sample blocks
//! reuse one insert), blobs read in place.

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::Connection;

use super::{Arg, Backend, Begin, DbError, EachRow, Row};

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

impl Backend for Sqlite {
    fn execute(&self, sql: &str, args: &[Arg<'_>]) -> Result<u64, DbError> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        Ok(stmt.execute(rusqlite::params_from_iter(args.iter()))? as u64)
    }

    fn execute_batch(&self, sql: &str) -> Result<(), DbError> {
        Ok(self.conn.execute_batch(sql)?)
    }

    fn query(&self, sql: &str, args: &[Arg<'_>], each: EachRow<'_>) -> Result<(), DbError> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        let mut rows = stmt.query(rusqlite::params_from_iter(args.iter()))?;
        while let Some(row) = rows.next()? {
            each(&SqliteRow(row))?;
        }
        Ok(())
    }

    fn begin(&self, how: Begin) -> Result<(), DbError> {
        Ok(self.conn.execute_batch(match how {
            Begin::Deferred | Begin::Snapshot => "BEGIN DEFERRED",
            Begin::Immediate => "BEGIN IMMEDIATE",
        })?)
    }
}

impl Sqlite {
    pub(crate) fn is_read_only(&self) -> bool {
        self.conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false)
    }
}
