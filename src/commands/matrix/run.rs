//! Making a matrix's runs: each one on a freshly made testbed, round-robin over the cells,
//! recorded in the store as soon as it ends (so an interruption loses at most the run under
//! way), with a progress bar (or a line per run off a terminal) and an ETA from the runs
//! made so far. [`make_run`] is the one way a run of a matrix is made: by this loop, and by
//! a scheduler's task (`fsynclab cell`) on a farm's node.

use anyhow::Result;

use crate::compare::run_figures;
use crate::matrix::plan::{Cell, CellPlace, Plan};
use crate::recording::Recording;
use crate::run::cell::{Failure, Made, Recorded};
use crate::run::{self, Progress};
use crate::store::{MatrixPlace, RunFilter, Store};
use crate::units::clock;

/// How the matrix ended.
pub(crate) enum Ended {
    /// Every run is in the store.
    Complete,
    /// A signal stopped it; the run under way was not kept.
    Interrupted(i32),
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

/// Makes the run of `cell`'s repetition `rep` of matrix `matrix_id`: claimed in the store,
/// measured on a freshly made testbed, recorded at its place ([`crate::run::cell`]).
pub(crate) fn make_run(
    plan: &Plan,
    matrix_id: &str,
    rep: u32,
    cell: &Cell,
    recording: &mut Recording,
    progress: &Progress,
) -> Result<Made> {
    let label = slot_label(cell, rep);
    let place = MatrixPlace {
        matrix_id: matrix_id.to_string(),
        axes: cell.clone(),
        repetition: rep,
    };
    // A cell of another host is not this host's to make.
    super::placement::check_here(cell)?;
    progress.starting(&label);
    let planned = plan.planned_for(cell)?;
    let request = plan.target_for(cell)?;
    let kernel = plan
        .kernel_for(cell)?
        .map(|(kernel, args, limit)| run::cell::OnKernel { kernel, args, limit });
    let made = run::cell::make(
        &run::cell::Cell {
            planned: &planned,
            request: &request,
            label: &label,
            place: Some(&place),
            claim: true,
            who: &format!("fsynclab: matrix {matrix_id}"),
            kernel: kernel.as_ref(),
        },
        recording,
    )?;
    match made {
        Made::Failed(Failure::Prepare(e)) => {
            Err(e.context(format!("matrix {matrix_id}, {label}: cannot prepare the testbed")))
        }
        Made::Failed(Failure::Measure(e)) => Err(e.context(format!("matrix {matrix_id}, {label}"))),
        made => Ok(made),
    }
}

/// The line that says a run of the matrix was made: where it ran (a scheduler's task,
/// unless host is an axis, which says it) and its main figure.
pub(crate) fn made_line(made: &Recorded, cell: &Cell, rep: u32) -> String {
    let result = &made.finished.result;
    let host = match &result.environment.host {
        Some(h) if h.job.is_some() && cell.host().is_none() => format!(" on {}", h.name),
        _ => String::new(),
    };
    made.line(&slot_label(cell, rep), &format!("{host}{}", main_figure(result)))
}

/// `, commit.tps 1070 tps`: the run's main figure for a progress line.
pub(crate) fn main_figure(result: &crate::result::RunResult) -> String {
    run_figures("", result)
        .ok()
        .and_then(|f| f.main_figure_text())
        .map(|text| format!(", {text}"))
        .unwrap_or_default()
}

/// Makes the runs of `slots`, recording each in `recording` at its place in `matrix_id`.
pub(crate) fn execute(
    plan: &Plan,
    matrix_id: &str,
    slots: &[(u32, usize)],
    recording: &mut Recording,
    quiet: bool,
) -> Result<Ended> {
    let cells = plan.cells();
    let total = plan.order().len();
    let mut progress = Progress::new(total, total - slots.len(), quiet);
    for &(rep, c) in slots {
        match make_run(plan, matrix_id, rep, &cells[c], recording, &progress) {
            Ok(Made::Run(made)) => {
                progress.finished(made_line(&made, &cells[c], rep));
                if let Some(sig) = made.late_signal {
                    progress.clear();
                    return Ok(Ended::Interrupted(sig));
                }
            }
            Ok(Made::LeftToOther(why)) => progress.say(&why),
            Ok(Made::Interrupted(sig)) => {
                progress.clear();
                return Ok(Ended::Interrupted(sig));
            }
            // make_run gives a failure as an error.
            Ok(Made::Failed(_)) => {}
            Err(e) => {
                progress.clear();
                return Err(e);
            }
        }
    }
    progress.clear();
    if !quiet {
        let (made, took) = progress.made();
        progress.say(&format!("matrix {matrix_id}: {made} runs made in {}", clock(took)));
    }
    Ok(Ended::Complete)
}
