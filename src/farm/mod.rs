//! Where a matrix's runs are made: on this host one after another ([`local`]), or by a
//! farm's scheduler, each run a task on its node (`fsynclab cell ID:INDEX`, which makes it
//! as [`local::make_run`] does) into the shared store. A farm is one [`Farm`]: Slurm's job
//! arrays followed to their end ([`slurm`]), or a Kubernetes Indexed Job written for
//! `kubectl` ([`k8s`]), each with its own options; [`placement`] says which engine, which
//! nodes, and whether every node makes the whole matrix. A new engine is one folder here
//! and one arm where the `matrix` command builds it.
//!
//! Nothing here reads a command line: the command maps its flags into these types, and
//! prints the tables once the runs are made ([`Submitted`] says how they ended).

pub(crate) mod k8s;
pub(crate) mod local;
pub(crate) mod placement;
pub(crate) mod slurm;

use anyhow::Result;

use crate::error::Usage;
use crate::matrix::plan::{Cell, CellPlace, Placement, Plan, HOST_AXIS};
use crate::store::{Location, RunFilter, Store};

/// The runs of a stored matrix to make now: its plan and id, the (repetition, cell) slots
/// still missing, and where its store is (a farm's tasks open it themselves).
#[derive(Clone, Copy)]
pub(crate) struct Runs<'a> {
    pub(crate) plan: &'a Plan,
    pub(crate) matrix_id: &'a str,
    pub(crate) slots: &'a [(u32, usize)],
    pub(crate) at: &'a Location,
}

/// How the runs handed to an engine ended; the tables are the command's to print.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Submitted {
    /// Made, or followed to their end: `failed` runs made none (each one said).
    Followed { failed: usize },
    /// Handed over to be started elsewhere (a manifest for `kubectl`): nothing to follow.
    HandedOver,
    /// Signal N stopped the matrix (said, with how to resume; a farm's tasks cancelled).
    Stopped(i32),
}

/// One farm scheduler.
pub(crate) trait Farm {
    /// What the scheduler keeps of its own options in a new matrix's placement, for
    /// `--resume` (Slurm its partition, Kubernetes its image).
    fn keep(&self, _placement: &mut Placement) {}

    /// Refuses, in one line, the scheduler's own options when they cannot make a matrix:
    /// `stored` is the plan of a matrix resumed, whose placement they may reuse. Not asked
    /// of a `--dry-run`, which makes nothing.
    fn check_options(&self, _stored: Option<&Plan>) -> Result<(), Usage> {
        Ok(())
    }

    /// Refuses, before anything is stored or submitted, to use a scheduler that cannot be
    /// reached from here (its client commands missing).
    fn check(&self) -> Result<(), Usage>;

    /// Refuses a results store the scheduler's tasks cannot share, or says what to mind.
    fn check_store(&self, at: &Location) -> Result<(), Usage>;

    /// The nodes the runs may go to, as the scheduler lists them.
    fn nodes(&self) -> Result<Vec<String>>;

    /// Refuses to resume matrix `matrix_id` while tasks of it still wait or run: they would
    /// make their runs again.
    fn check_none_running(&self, matrix_id: &str) -> Result<()>;

    /// When resuming matrix `matrix_id` hands nothing to the scheduler (`missing` of its
    /// `total` runs not stored yet), what to say before the table of the runs stored.
    fn submits_nothing(&self, _matrix_id: &str, _missing: usize, _total: usize) -> Option<String> {
        None
    }

    /// Hands `runs` to the scheduler and, where it can, follows them to their end in `store`.
    fn submit(&self, runs: &Runs<'_>, store: &Store) -> Result<Submitted>;
}

/// Refuses a matrix whose runs cannot be made where they go: a store `farm`'s tasks cannot
/// share, or, made here, cells of another host or needing a root this process lacks.
pub(crate) fn check_where(farm: Option<&dyn Farm>, plan: &Plan, at: &Location) -> Result<(), Usage> {
    match farm {
        Some(farm) => farm.check_store(at),
        None => {
            local::check_local(plan)?;
            local::refuse_without_root(plan)
        }
    }
}

/// The (repetition, cell) slots of `plan` that have no complete run in the store yet.
pub(crate) fn remaining(store: &Store, matrix_id: &str, plan: &Plan) -> Result<Vec<(u32, usize)>> {
    let done = store.runs(&RunFilter {
        matrix_id: Some(matrix_id.to_string()),
        ..Default::default()
    })?;
    let cells = plan.cells();
    Ok(plan
        .order()
        .into_iter()
        .filter(|(rep, c)| {
            !done.iter().any(|r| {
                !r.interrupted
                    && r.matrix
                        .as_ref()
                        .is_some_and(|m| m.repetition == *rep && m.axes == cells[*c])
            })
        })
        .collect())
}

/// `device=ram coordination=none #2`.
pub(crate) fn slot_label(cell: &Cell, rep: u32) -> String {
    let axes: Vec<String> = cell.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{} #{}", axes.join(" "), rep + 1)
}

/// The plan indices of `slots` (repetition, cell), in order: what a scheduler's task is
/// told to make (`fsynclab cell ID:INDEX`).
fn indices_of(plan: &Plan, slots: &[(u32, usize)]) -> Vec<usize> {
    let order = plan.order();
    let mut indices: Vec<usize> = slots
        .iter()
        .filter_map(|slot| order.iter().position(|o| o == slot))
        .collect();
    indices.sort_unstable();
    indices
}

/// Plan indices by the node they are pinned to (`None`: any node).
type NodeGroups = Vec<(Option<String>, Vec<usize>)>;

/// Whether the runs are pinned to nodes (the plan has a host axis), and `indices` grouped by
/// the node their cell names, in the order first met; unpinned, one group for any node.
fn by_node(plan: &Plan, indices: &[usize]) -> (bool, NodeGroups) {
    let pinned = plan.axes.iter().any(|a| a.key == HOST_AXIS);
    if !pinned {
        return (false, vec![(None, indices.to_vec())]);
    }
    let cells = plan.cells();
    let order = plan.order();
    let mut by_node: NodeGroups = Vec::new();
    for &i in indices {
        let host = cells[order[i].1].host().map(str::to_string);
        match by_node.iter_mut().find(|(n, _)| *n == host) {
            Some((_, list)) => list.push(i),
            None => by_node.push((host, vec![i])),
        }
    }
    (true, by_node)
}
