//! The store in a PostgreSQL database, through the `postgres` crate (synchronous, no TLS):
//! `postgres://USER[:PASSWORD]@HOST[:PORT]/DB`, the password from `PGPASSWORD` when the
//! address has none (as `psql` takes it).

use std::cell::RefCell;
use std::error::Error as _;

use postgres::types::{IsNull, ToSql, Type};
use postgres::{Client, Config, NoTls};

use super::{postgres_sql, Arg, Backend, Begin, DbError, EachRow, Row};

/// The advisory lock an immediate transaction holds (any number of the database's own would
/// do; this one spells "fsynclab" in ASCII), so that one process at a time makes a schema,
/// claims a cell or numbers a matrix, as `BEGIN IMMEDIATE` does in SQLite.
const WRITE_LOCK: i64 = 0x6673_796e_636c_6162;

/// How long connecting may take before the store says the server does not answer.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

pub(crate) struct Pg {
    /// In a cell, so that the store reads through `&self` as it does SQLite (whose
    /// connection needs no `&mut`); never borrowed across a call.
    client: RefCell<Client>,
}

/// A PostgreSQL error in one line: the server's message, else what failed and why.
pub(crate) fn describe(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{}: {}", db.severity(), db.message());
    }
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

impl ToSql for Arg<'_> {
    fn to_sql(&self, ty: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Arg::Null => Ok(IsNull::Yes),
            Arg::Int(v) if *ty == Type::INT4 => i32::try_from(*v)?.to_sql(ty, out),
            Arg::Int(v) if *ty == Type::INT2 => i16::try_from(*v)?.to_sql(ty, out),
            Arg::Int(v) => v.to_sql(ty, out),
            Arg::Real(v) => v.to_sql(ty, out),
            Arg::Text(v) => v.as_ref().to_sql(ty, out),
            Arg::Blob(v) => v.to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    fn to_sql_checked(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        let fits = match self {
            Arg::Null => true,
            Arg::Int(_) => [Type::INT2, Type::INT4, Type::INT8].contains(ty),
            Arg::Real(_) => <f64 as ToSql>::accepts(ty),
            Arg::Text(_) => <&str as ToSql>::accepts(ty),
            Arg::Blob(_) => <&[u8] as ToSql>::accepts(ty),
        };
        if !fits {
            return Err(format!("a {self:?} cannot be stored as {ty}").into());
        }
        self.to_sql(ty, out)
    }
}

struct PgRow<'r>(&'r postgres::Row);

impl PgRow<'_> {
    fn get<T: for<'a> postgres::types::FromSql<'a>>(&self, i: usize) -> Result<T, DbError> {
        Ok(self.0.try_get(i)?)
    }
}

impl Row for PgRow<'_> {
    fn int(&self, i: usize) -> Result<i64, DbError> {
        self.opt_int(i)?.ok_or(DbError::Column {
            column: i,
            what: "NULL where a number belongs".into(),
        })
    }
    fn opt_int(&self, i: usize) -> Result<Option<i64>, DbError> {
        let ty = self.0.columns().get(i).map(|c| c.type_().clone());
        match ty {
            Some(Type::INT2) => Ok(self.get::<Option<i16>>(i)?.map(i64::from)),
            Some(Type::INT4) => Ok(self.get::<Option<i32>>(i)?.map(i64::from)),
            _ => self.get(i),
        }
    }
    fn real(&self, i: usize) -> Result<f64, DbError> {
        self.get(i)
    }
    fn text(&self, i: usize) -> Result<String, DbError> {
        self.get(i)
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>, DbError> {
        self.get(i)
    }
    fn with_blob(&self, i: usize, f: &mut dyn FnMut(&[u8])) -> Result<(), DbError> {
        f(self.0.try_get::<_, &[u8]>(i)?);
        Ok(())
    }
}

impl Pg {
    /// Connects to the database `url` names.
    pub(crate) fn connect(url: &str) -> Result<Pg, DbError> {
        let mut config: Config = url.parse()?;
        if config.get_password().is_none() {
            if let Some(pw) = std::env::var_os("PGPASSWORD") {
                use std::os::unix::ffi::OsStrExt;
                config.password(pw.as_bytes());
            }
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.application_name("fsynclab");
        let mut client = config.connect(NoTls)?;
        // Notices (a table that exists already...) are not the user's concern.
        client.batch_execute("SET client_min_messages = warning")?;
        Ok(Pg {
            client: RefCell::new(client),
        })
    }

    fn bind<'a>(args: &'a [Arg<'_>]) -> Vec<&'a (dyn ToSql + Sync)> {
        args.iter().map(|a| a as &(dyn ToSql + Sync)).collect()
    }
}

impl Backend for Pg {
    fn execute(&self, sql: &str, args: &[Arg<'_>]) -> Result<u64, DbError> {
        Ok(self
            .client
            .borrow_mut()
            .execute(postgres_sql(sql).as_str(), &Pg::bind(args))?)
    }

    fn execute_batch(&self, sql: &str) -> Result<(), DbError> {
        Ok(self.client.borrow_mut().batch_execute(sql)?)
    }

    fn query(&self, sql: &str, args: &[Arg<'_>], each: EachRow<'_>) -> Result<(), DbError> {
        let rows = self
            .client
            .borrow_mut()
            .query(postgres_sql(sql).as_str(), &Pg::bind(args))?;
        rows.iter().try_for_each(|r| each(&PgRow(r)))
    }

    fn begin(&self, how: Begin) -> Result<(), DbError> {
        self.client.borrow_mut().batch_execute(match how {
            Begin::Snapshot => "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
            Begin::Deferred | Begin::Immediate => "BEGIN",
        })?;
        if how == Begin::Immediate {
            let locked = self
                .client
                .borrow_mut()
                .execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK]);
            if let Err(e) = locked {
                let _ = self.client.borrow_mut().batch_execute("ROLLBACK");
                return Err(e.into());
            }
        }
        Ok(())
    }
}
