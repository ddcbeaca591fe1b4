//! Where a matrix's runs are made: the engine (this host one run after another, a Slurm job
//! array, a Kubernetes Indexed Job), the nodes, and the host axis. By default each run goes
//! to any node (the host is recorded with the run either way); `--per-host` makes the whole
//! matrix on every node, host becoming the first axis, so that the table has a row per host
//! as seed 002's did. Repetitions stay round-robin over the cells in either case, so that
//! a cell's repeats are spread in time (and, by default, over the nodes).

use anyhow::Result;

use super::options::FarmOptions;
use crate::cli::Engine;
use crate::environment::this_host;
use crate::error::Usage;
use crate::matrix::plan::{Axis, Cell, CellPlace, Placement, Plan, HOST_AXIS};

/// The engine of a matrix: as asked, else the stored plan's, else local.
pub(crate) fn engine(options: &FarmOptions, stored: Option<&Plan>) -> Engine {
    options
        .engine
        .or_else(|| {
            stored
                .and_then(|p| p.placement.as_ref())
                .and_then(|p| Engine::from_name(&p.engine))
        })
        .unwrap_or(Engine::Local)
}

/// Refuses farm options that the engine does not take, in one line. What a farm needs of
/// its own options is its [`super::farm::Farm::check_options`].
pub(crate) fn check_options(args: &FarmOptions, engine: Engine) -> Result<(), Usage> {
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

/// The placement a new matrix keeps in its plan, with the host axis `--per-host` adds (the
/// nodes given, else `nodes`, the farm's; this host for the local engine).
pub(crate) fn place(
    plan: &mut Plan,
    args: &FarmOptions,
    engine: Engine,
    nodes: impl FnOnce() -> Result<Vec<String>>,
) -> Result<()> {
    plan.placement = Some(Placement {
        engine: engine.name().to_string(),
        partition: args.partition.clone(),
        nodes: args.nodes.clone(),
        per_host: args.per_host,
        parallel: args.parallel,
        image: args.image.clone(),
    });
    if !args.per_host {
        return Ok(());
    }
    if plan.axes.iter().any(|a| a.key == HOST_AXIS) {
        return Err(Usage("--per-host makes the host axis: give it, or --axis host=..., not both".into()).into());
    }
    let hosts = match engine {
        Engine::Local => vec![this_host().name],
        _ if !args.nodes.is_empty() => args.nodes.clone(),
        // The scheduler's (Slurm lists them; a Kubernetes manifest needs them named).
        _ => nodes()?,
    };
    plan.axes.insert(
        0,
        Axis {
            key: HOST_AXIS.to_string(),
            values: hosts,
        },
    );
    Ok(())
}

/// Refuses, on the local engine, a host axis naming another host: its cells could never run.
pub(crate) fn check_local(plan: &Plan) -> Result<(), Usage> {
    let here = this_host().name;
    match plan.axes.iter().find(|a| a.key == HOST_AXIS) {
        Some(axis) if axis.values.iter().any(|h| *h != here) => Err(Usage(format!(
            "--axis host={}: this host is {here}, and --engine local makes runs here only; use --engine slurm or k8s for other hosts",
            axis.values.join(",")
        ))),
        _ => Ok(()),
    }
}

/// Refuses to make a run of a cell that belongs to another host.
pub(crate) fn check_here(cell: &Cell) -> Result<(), Usage> {
    match cell.host() {
        Some(host) => {
            let here = this_host().name;
            if host == here {
                Ok(())
            } else {
                Err(Usage(format!(
                    "this cell runs on host {host}, and this is {here}: its task was placed on the wrong node"
                )))
            }
        }
        None => Ok(()),
    }
}
