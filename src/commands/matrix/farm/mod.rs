//! A farm's scheduler, behind one trait: what `fsynclab matrix` asks of Slurm
//! ([`slurm`]) or Kubernetes ([`k8s`]) when its runs are made by a scheduler's
//! tasks instead of this process. The local engine has no farm; `super::farm_of` picks one.

pub(super) mod k8s;
pub(super) mod slurm;

use anyhow::Result;

use crate::error::Usage;
use crate::matrix::plan::{CellPlace, Plan, HOST_AXIS};
use crate::store::{Location, Store};

/// One farm scheduler.
pub(crate) trait Farm {
    /// Refuses, in one line, the scheduler's own options when they cannot make a matrix:
    /// `stored` is the plan of a matrix resumed, whose placement they may reuse.
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

    /// Hands the runs of `slots` to the scheduler (and, where it can, follows them to the end
    /// and prints the tables); the exit status.
    fn submit(&self, plan: &Plan, matrix_id: &str, slots: &[(u32, usize)], store: Store, at: &Location) -> Result<i32>;
}

/// The plan indices of `slots` (repetition, cell), in order: what a scheduler's task is
/// told to make (`fsynclab cell ID:INDEX`).
pub(super) fn indices_of(plan: &Plan, slots: &[(u32, usize)]) -> Vec<usize> {
    let order = plan.order();
    let mut indices: Vec<usize> = slots
        .iter()
        .filter_map(|slot| order.iter().position(|o| o == slot))
        .collect();
    indices.sort_unstable();
    indices
}

/// Plan indices by the node they are pinned to (`None`: any node).
pub(super) type NodeGroups = Vec<(Option<String>, Vec<usize>)>;

/// Whether the runs are pinned to nodes (the plan has a host axis), and `indices` grouped by
/// the node their cell names, in the order first met; unpinned, one group for any node.
pub(super) fn by_node(plan: &Plan, indices: &[usize]) -> (bool, NodeGroups) {
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
