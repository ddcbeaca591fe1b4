//! The matrix command's options, read once from its command line into the farm's types:
//! the engine and its farm ([`engine_and_farm`]: a flag of another engine refused, each
//! engine's own options typed, `--stuck-limit` parsed), the placement every farm takes, and
//! how the tables are printed ([`TableOptions`]). Nothing below the command sees clap's
//! `MatrixArgs`.

use crate::cli::{self, MatrixArgs, TableFormat};
use crate::error::Usage;
use crate::farm::k8s::{K8sOptions, Kubernetes};
use crate::farm::placement::{Engine, PlacementOptions};
use crate::farm::slurm::{Slurm, SlurmOptions};
use crate::farm::Farm;
use crate::matrix::plan::Plan;

/// How the tables of a matrix are printed.
pub(super) struct TableOptions {
    /// The figures to print a table of (`--figure`); empty: the scenario's.
    pub(super) figures: Vec<String>,
    /// The axis whose values are the columns (`--columns`).
    pub(super) columns: Option<String>,
    pub(super) format: TableFormat,
    /// No closing note on stderr (`--quiet`).
    pub(super) quiet: bool,
}

impl TableOptions {
    pub(super) fn of(args: &MatrixArgs) -> TableOptions {
        TableOptions {
            figures: args.figure.clone(),
            columns: args.columns.clone(),
            format: args.format,
            quiet: args.quiet,
        }
    }
}

/// The placement every farm takes (`--nodes`, `--per-host`, `--parallel`).
pub(super) fn placement(args: &MatrixArgs) -> PlacementOptions {
    PlacementOptions {
        nodes: args.nodes.clone(),
        per_host: args.per_host,
        parallel: args.parallel,
    }
}

/// The engine of a matrix (as asked, else the `stored` plan's, else local) and its farm,
/// none for the local engine; the flags of other engines refused, and the farm's own options
/// checked unless only the plan is printed.
pub(super) fn engine_and_farm(
    args: &MatrixArgs,
    stored: Option<&Plan>,
) -> Result<(Engine, Option<Box<dyn Farm>>), Usage> {
    let engine = Engine::chosen(args.engine.map(engine_of), stored);
    refuse_other_engines_flags(args, engine)?;
    let farm: Option<Box<dyn Farm>> = match engine {
        Engine::Local => None,
        Engine::Slurm => Some(Box::new(Slurm {
            options: SlurmOptions {
                partition: args.partition.clone(),
                stuck_limit: stuck_limit(args.stuck_limit.as_deref())?,
                log_dir: args.log_dir.clone(),
                quiet: args.quiet,
            },
            placement: placement(args),
        })),
        Engine::K8s => Some(Box::new(Kubernetes {
            options: K8sOptions {
                emit: args.emit.clone(),
                image: args.image.clone(),
            },
        })),
    };
    if let Some(farm) = farm.as_ref().filter(|_| !args.dry_run) {
        farm.check_options(stored)?;
    }
    Ok((engine, farm))
}

/// `--engine` as the farm names it.
fn engine_of(asked: cli::Engine) -> Engine {
    match asked {
        cli::Engine::Local => Engine::Local,
        cli::Engine::Slurm => Engine::Slurm,
        cli::Engine::K8s => Engine::K8s,
    }
}

/// How long a Slurm task found stuck is waited for (`--stuck-limit`), if given.
fn stuck_limit(text: Option<&str>) -> Result<Option<std::time::Duration>, Usage> {
    let Some(text) = text else {
        return Ok(None);
    };
    match crate::units::parse_duration(text) {
        Ok(d) if !d.is_zero() => Ok(Some(d)),
        Ok(_) => Err(Usage(format!("--stuck-limit {text}: expected more than 0s"))),
        Err(e) => Err(Usage(format!("--stuck-limit {text}: {e}"))),
    }
}

/// Refuses farm options that the engine does not take, in one line. What a farm needs of
/// its own options is its [`Farm::check_options`].
fn refuse_other_engines_flags(args: &MatrixArgs, engine: Engine) -> Result<(), Usage> {
    let given = |flag: &'static str, yes: bool| yes.then_some(flag);
    let slurm_only = [
        given("--partition", args.partition.is_some()),
        given("--log-dir", args.log_dir.is_some()),
        given("--stuck-limit", args.stuck_limit.is_some()),
    ];
    let k8s_only = [
        given("--emit", args.emit.is_some()),
        given("--image", args.image.is_some()),
    ];
    let farm_only = [
        given("--nodes", !args.nodes.is_empty()),
        given("--parallel", args.parallel.is_some()),
    ];
    let refuse = |flag: &str, wants: &str| {
        Err(Usage(format!(
            "{flag} is for --engine {wants}; this matrix runs with --engine {}",
            engine.name()
        )))
    };
    if let Some(flag) = slurm_only
        .into_iter()
        .flatten()
        .next()
        .filter(|_| engine != Engine::Slurm)
    {
        return refuse(flag, "slurm");
    }
    if let Some(flag) = k8s_only.into_iter().flatten().next().filter(|_| engine != Engine::K8s) {
        return refuse(flag, "k8s");
    }
    if let Some(flag) = farm_only
        .into_iter()
        .flatten()
        .next()
        .filter(|_| engine == Engine::Local)
    {
        return refuse(flag, "slurm or k8s");
    }
    Ok(())
}
