//! `fsynclab cell ID:INDEX` (hidden): one run of a stored matrix, the one at INDEX of
//! its plan's order, made on this host exactly as `fsynclab matrix` makes each of its runs
//! ([`crate::farm::local::make_run`]: claimed, measured and recorded at its place as
//! [`crate::run::cell`] makes every run).
//! It is what a scheduler's task runs (Slurm's array tasks, a Kubernetes Indexed Job's
//! completions), with the store in `FSYNCLAB_STORE` or `--store`. Root, when the cell needs
//! it, comes from the scheduler: the task refuses rather than escalate.
//!
//! Exit status: 0 when the run is stored (by this task, or already by another), 1 when it
//! failed, 2 for a bad id or index, 128+N when signal N stopped it.

use anyhow::Result;

use crate::cli::CellArgs;
use crate::error::Usage;
use crate::farm::local::{made_line, make_run, refuse_without_root};
use crate::matrix::table::StoredMatrix;
use crate::recording::{self, Recording};
use crate::run::cell::Made;
use crate::run::Progress;

/// `m3:5` as (matrix id, index).
fn parse(spec: &str) -> Result<(String, usize), Usage> {
    let bad = || {
        Usage(format!(
            "cell {spec}: expected ID:INDEX, a stored matrix's id and a run's index in its plan (m3:5)"
        ))
    };
    let (id, index) = spec.rsplit_once(':').ok_or_else(bad)?;
    let index = index.trim().parse::<usize>().map_err(|_| bad())?;
    if id.is_empty() {
        return Err(bad());
    }
    Ok((id.to_string(), index))
}

pub(crate) fn cell(args: &CellArgs) -> Result<i32> {
    let spec = &args.cell;
    let (id, index) = parse(spec)?;
    let path = super::store_at(args.store.store.as_deref())?;
    let store = recording::open_for_writing(&path)?;
    let stored = StoredMatrix::load(&store, &id)?;
    let order = stored.plan.order();
    let Some(&(rep, c)) = order.get(index) else {
        return Err(Usage(format!(
            "cell {spec}: matrix {id} has {} runs, indices 0 to {}",
            order.len(),
            order.len().saturating_sub(1)
        ))
        .into());
    };
    refuse_without_root(&stored.plan)?;
    let cell = &stored.plan.cells()[c];
    let mut recording = Recording::into(store, path);
    let mut progress = Progress::new(1, 0, args.quiet);
    let made = make_run(&stored.plan, &id, rep, cell, &mut recording, &progress);
    if let Some(store) = recording.store_mut() {
        store.release_claims(&id, &crate::matrix::claim::this_process())?;
    }
    match made? {
        Made::Run(made) => {
            progress.finished(made_line(&made, cell, rep));
            progress.clear();
            Ok(made.late_signal.map_or(0, |sig| 128 + sig))
        }
        Made::LeftToOther(why) => {
            progress.say(&why);
            Ok(0)
        }
        Made::Interrupted(sig) => {
            progress.clear();
            Ok(128 + sig)
        }
        // make_run gives a failure as an error.
        Made::Failed(_) => Ok(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_is_named_by_matrix_and_index() {
        assert_eq!(parse("m3:5").unwrap(), ("m3".to_string(), 5));
        for bad in ["m3", "m3:", ":5", "m3:-1", "m3:x"] {
            assert!(
                parse(bad).unwrap_err().to_string().contains("expected ID:INDEX"),
                "{bad}"
            );
        }
    }
}
