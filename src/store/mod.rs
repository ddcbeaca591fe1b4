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
//! - [`open`]: a store opened to record or to read; [`runs`]: a run as it is named,
//!   placed, filtered, listed and read back

pub(crate) mod backend;
mod claims;
pub mod codec;
mod copy;
mod json;
mod location;
mod open;
mod read;
mod runs;
pub(crate) mod schema;
mod write;

use std::path::PathBuf;

use backend::{Db, DbError};
pub use claims::{Claim, ClaimOwner};
pub use copy::Copied;
use open::db_error;
use runs::{axes_from_text, axes_to_text, head_of};
pub use runs::{MatrixPlace, MatrixRecord, RunFilter, RunId, RunSummary, StoredRun};

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

#[cfg(test)]
mod tests;
