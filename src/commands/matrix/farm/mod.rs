//! A farm's scheduler, behind one trait: what `fsynclab matrix` asks of Slurm
//! ([`slurm`]) or Kubernetes ([`k8s`]) when its runs are made by a scheduler's
//! tasks instead of this process. The local engine has no farm; `super::farm_of` picks one.

pub(super) mod k8s;
pub(super) mod slurm;

use anyhow::Result;

use crate::error::Usage;
use crate::matrix::plan::Plan;
use crate::store::{Location, Store};

/// One farm scheduler.
pub(crate) trait Farm {
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

    /// Hands the runs of `slots` to the scheduler (and, where it can, follows them to the end
    /// and prints the tables); the exit status.
    fn submit(&self, plan: &Plan, matrix_id: &str, slots: &[(u32, usize)], store: Store, at: &Location) -> Result<i32>;
}
