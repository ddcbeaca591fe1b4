//! The matrix command's options, read once from its command line: where the runs go
//! ([`FarmOptions`], the placement the schedulers take) and how the tables are printed
//! ([`TableOptions`]). The schedulers ([`super::farm::slurm`], [`super::farm::k8s`]) and
//! the placement ([`super::placement`]) take these, never clap's `MatrixArgs`.

use std::path::PathBuf;

use crate::cli::{Engine, MatrixArgs, TableFormat};
use crate::error::Usage;

/// Where and how the runs are made, as asked.
pub(crate) struct FarmOptions {
    /// `--engine`, when given (a resumed matrix otherwise keeps its own).
    pub(crate) engine: Option<Engine>,
    /// Slurm's partition (`--partition`).
    pub(crate) partition: Option<String>,
    /// How long a Slurm task that looks stuck is waited for (`--stuck-limit`), as written.
    pub(crate) stuck_limit: Option<String>,
    /// Where Slurm's tasks write their logs (`--log-dir`).
    pub(crate) log_dir: Option<PathBuf>,
    /// The Kubernetes manifest to write (`--emit`).
    pub(crate) emit: Option<PathBuf>,
    /// The container image of the pods (`--image`).
    pub(crate) image: Option<String>,
    /// The nodes to run on (`--nodes`); empty: the scheduler's.
    pub(crate) nodes: Vec<String>,
    /// The whole matrix on every node, host becoming an axis (`--per-host`).
    pub(crate) per_host: bool,
    /// Tasks at a time (`--parallel`).
    pub(crate) parallel: Option<u32>,
    /// Only the plan is printed (`--dry-run`).
    pub(crate) dry_run: bool,
    pub(crate) quiet: bool,
    pub(crate) table: TableOptions,
}

/// How the tables of a matrix are printed.
pub(crate) struct TableOptions {
    /// The figures to print a table of (`--figure`); empty: the scenario's.
    pub(crate) figures: Vec<String>,
    /// The axis whose values are the columns (`--columns`).
    pub(crate) columns: Option<String>,
    pub(crate) format: TableFormat,
}

impl FarmOptions {
    /// How long a Slurm task found stuck is waited for (`--stuck-limit`), if given.
    pub(crate) fn stuck_limit(&self) -> Result<Option<std::time::Duration>, Usage> {
        let Some(text) = &self.stuck_limit else {
            return Ok(None);
        };
        match crate::units::parse_duration(text) {
            Ok(d) if !d.is_zero() => Ok(Some(d)),
            Ok(_) => Err(Usage(format!("--stuck-limit {text}: expected more than 0s"))),
            Err(e) => Err(Usage(format!("--stuck-limit {text}: {e}"))),
        }
    }

    pub(crate) fn of(args: &MatrixArgs) -> FarmOptions {
        FarmOptions {
            engine: args.engine,
            partition: args.partition.clone(),
            stuck_limit: args.stuck_limit.clone(),
            log_dir: args.log_dir.clone(),
            emit: args.emit.clone(),
            image: args.image.clone(),
            nodes: args.nodes.clone(),
            per_host: args.per_host,
            parallel: args.parallel,
            dry_run: args.dry_run,
            quiet: args.quiet,
            table: TableOptions {
                figures: args.figure.clone(),
                columns: args.columns.clone(),
                format: args.format,
            },
        }
    }
}
