//! The runs made on this host: the local engine's loop, each run on a freshly made testbed,
//! round-robin over the cells, recorded in the store as soon as it ends (so an interruption
//! loses at most the run under way), with a progress bar (or a line per run off a terminal)
//! and an ETA from the runs made so far. [`make_run`] is the one way a run of a matrix is
//! made: by this loop, and by a scheduler's task (`fsynclab cell`) on a farm's node.

use anyhow::Result;

use super::{remaining, slot_label, Runs, Submitted};
use crate::compare::run_figures;
use crate::environment::this_host;
use crate::error::Usage;
use crate::matrix::claim;
use crate::matrix::plan::{Cell, CellPlace, Plan, HOST_AXIS, IMPLIED_SCRATCH};
use crate::recording::Recording;
use crate::run::cell::{Failure, Made, Recorded};
use crate::run::{self, Progress};
use crate::store::MatrixPlace;
use crate::units::clock;

/// Makes `runs` here, one after another, each recorded in `recording` at its place; the
/// claims this process holds and did not use are released at the end. A signal stops it
/// (said, with how to resume); a failed run is an error.
pub(crate) fn make_here(runs: &Runs<'_>, recording: &mut Recording, quiet: bool) -> Result<Submitted> {
    let id = runs.matrix_id;
    let ended = execute(runs, recording, quiet);
    // What this process claimed and did not make is free for the next (a run recorded
    // ends its own claim); a process killed before this is found dead by the next.
    if let Some(store) = recording.store_mut() {
        store.release_claims(id, &claim::this_process())?;
    }
    if let Some(sig) = ended? {
        note!("fsynclab: matrix {id} stopped by signal {sig}; `fsynclab matrix --resume {id}` makes the runs left");
        return Ok(Submitted::Stopped(sig));
    }
    let store = recording
        .store()
        .ok_or_else(|| anyhow::anyhow!("the matrix's store was closed"))?;
    let elsewhere = remaining(store, id, runs.plan)?.len();
    if elsewhere > 0 {
        note!("fsynclab matrix {id}: {elsewhere} runs are still being made by another fsynclab; the table shows the runs stored (`fsynclab matrix --resume {id}` prints it whole once they are)");
    }
    Ok(Submitted::Followed { failed: 0 })
}

/// Makes the runs, recording each in `recording` at its place in the matrix; the signal that
/// stopped them, if one did.
fn execute(runs: &Runs<'_>, recording: &mut Recording, quiet: bool) -> Result<Option<i32>> {
    let Runs {
        plan, matrix_id, slots, ..
    } = *runs;
    let cells = plan.cells();
    let total = plan.order().len();
    let mut progress = Progress::new(total, total - slots.len(), quiet);
    for &(rep, c) in slots {
        match make_run(plan, matrix_id, rep, &cells[c], recording, &progress) {
            Ok(Made::Run(made)) => {
                progress.finished(made_line(&made, &cells[c], rep));
                if let Some(sig) = made.late_signal {
                    progress.clear();
                    return Ok(Some(sig));
                }
            }
            Ok(Made::LeftToOther(why)) => progress.say(&why),
            Ok(Made::Interrupted(sig)) => {
                progress.clear();
                return Ok(Some(sig));
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
    Ok(None)
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
    check_here(cell)?;
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
fn main_figure(result: &crate::result::RunResult) -> String {
    run_figures("", result)
        .ok()
        .and_then(|f| f.main_figure_text())
        .map(|text| format!(", {text}"))
        .unwrap_or_default()
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
fn check_here(cell: &Cell) -> Result<(), Usage> {
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

/// Refuses to make here the runs of a plan whose cells need root, without it: a scheduler's
/// task refuses too, rather than escalate.
pub(crate) fn refuse_without_root(plan: &Plan) -> Result<(), Usage> {
    if plan.needs_root() && !crate::sys::is_root() {
        let why = if plan.implied_scratch {
            format!(
                "its cells run on scratch filesystems (a scratch {IMPLIED_SCRATCH} is implied by the {} axis)",
                plan.implying_axis().unwrap_or("device")
            )
        } else {
            "its cells make scratch filesystems or set vm sysctls".to_string()
        };
        return Err(Usage(format!(
            "fsynclab matrix: {why}, which needs root: run it as root (--dry-run shows the plan without)"
        )));
    }
    Ok(())
}
