//! Where the I/O goes. For now a directory the user names with `--dir`: fsynclab works only
//! inside a new subdirectory of it ([`WorkDir`]) and removes that afterwards.
//!
//! [`prepare`] turns the target options into a directory to run in, holding whatever must
//! be undone afterwards (nothing, for a plain directory) until the [`Prepared`] is dropped.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::cli::TargetArgs;

pub mod workdir;

pub use workdir::WorkDir;

/// A target ready for runs: the directory to run in, and what must be undone afterwards.
pub struct Prepared {
    dir: PathBuf,
}

impl Prepared {
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Prepares the target the options name.
pub fn prepare(args: &TargetArgs) -> Result<Prepared> {
    Ok(Prepared { dir: args.dir.clone() })
}
