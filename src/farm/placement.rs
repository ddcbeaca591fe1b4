//! Where a matrix's runs are made: the engine (this host one run after another, a Slurm job
//! array, a Kubernetes Indexed Job), the nodes, and the host axis. By default each run goes
//! to any node (the host is recorded with the run either way); `--per-host` makes the whole
//! matrix on every node, host becoming the first axis, so that the table has a row per host
//! as seed 002's did. Repetitions stay round-robin over the cells in either case, so that
//! a cell's repeats are spread in time (and, by default, over the nodes).

use anyhow::Result;

use super::Farm;
use crate::environment::this_host;
use crate::error::Usage;
use crate::matrix::plan::{Axis, Placement, Plan, HOST_AXIS};

/// Where a matrix's runs are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Engine {
    /// This host, one run after another.
    Local,
    /// A Slurm job array, a task per run.
    Slurm,
    /// A Kubernetes Indexed Job, a completion per run.
    K8s,
}

impl Engine {
    const ALL: [Engine; 3] = [Engine::Local, Engine::Slurm, Engine::K8s];

    /// The engine's name, as `--engine` takes it and a plan keeps it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Engine::Local => "local",
            Engine::Slurm => "slurm",
            Engine::K8s => "k8s",
        }
    }

    fn from_name(name: &str) -> Option<Engine> {
        Engine::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The engine of a matrix: as `asked`, else the `stored` plan's, else local.
    pub(crate) fn chosen(asked: Option<Engine>, stored: Option<&Plan>) -> Engine {
        asked
            .or_else(|| {
                stored
                    .and_then(|p| p.placement.as_ref())
                    .and_then(|p| Engine::from_name(&p.engine))
            })
            .unwrap_or(Engine::Local)
    }
}

/// The placement every farm takes, as asked.
#[derive(Clone, Debug, Default)]
pub(crate) struct PlacementOptions {
    /// The nodes to run on (`--nodes`); empty: the scheduler's.
    pub(crate) nodes: Vec<String>,
    /// The whole matrix on every node, host becoming an axis (`--per-host`).
    pub(crate) per_host: bool,
    /// Tasks at a time (`--parallel`).
    pub(crate) parallel: Option<u32>,
}

/// The placement a new matrix keeps in its plan, with the host axis `--per-host` adds (the
/// nodes given, else `farm`'s; this host without a farm, for the local engine).
pub(crate) fn place(plan: &mut Plan, engine: Engine, asked: &PlacementOptions, farm: Option<&dyn Farm>) -> Result<()> {
    let mut placement = Placement {
        engine: engine.name().to_string(),
        nodes: asked.nodes.clone(),
        per_host: asked.per_host,
        parallel: asked.parallel,
        ..Placement::default()
    };
    if let Some(farm) = farm {
        farm.keep(&mut placement);
    }
    plan.placement = Some(placement);
    if !asked.per_host {
        return Ok(());
    }
    if plan.axes.iter().any(|a| a.key == HOST_AXIS) {
        return Err(Usage("--per-host makes the host axis: give it, or --axis host=..., not both".into()).into());
    }
    let hosts = match farm {
        None => vec![this_host().name],
        Some(_) if !asked.nodes.is_empty() => asked.nodes.clone(),
        // The scheduler's (Slurm lists them; a Kubernetes manifest needs them named).
        Some(farm) => farm.nodes()?,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_is_asked_else_the_stored_matrix_s_else_local() {
        for e in Engine::ALL {
            assert_eq!(Engine::from_name(e.name()), Some(e));
        }
        assert_eq!(Engine::chosen(None, None), Engine::Local);
        assert_eq!(Engine::chosen(Some(Engine::K8s), None), Engine::K8s);
    }
}
