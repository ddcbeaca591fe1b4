//! `reproduce --show ID`: a reproduction read back from the store and judged again on its
//! stored runs, with the runs a configuration it has (not what `--quick` makes today).

use std::path::Path;

use anyhow::Result;

use super::experiment::{CellRuns, Experiment, Measured, Run, Size};
use super::{kernels, sidebyside, ReproduceFormat, Reproduction, SeedReport, ID_PREFIX};
use crate::error::Usage;
use crate::matrix::plan::Plan;
use crate::recording;

/// `--show ID`: a stored reproduction's rows, judged again on its stored runs (the seeds
/// `experiments` names, of those it has).
pub(super) fn show(
    id: &str,
    experiments: &[&'static dyn Experiment],
    store: Option<&Path>,
    format: ReproduceFormat,
) -> Result<i32> {
    let (store, path) = recording::open_for_reading(store)?;
    let matrices = store.matrices_with_prefix(&format!("{id}-"))?;
    if matrices.is_empty() {
        return Err(Usage(format!(
            "--show {id}: no reproduction {id} in {} (`fsynclab runs --grep {ID_PREFIX}` lists the stored runs of every one)",
            recording::shown_store(&path)
        ))
        .into());
    }
    let mut size = Size::Quick;
    let mut seeds: Vec<SeedReport> = Vec::new();
    let mut runs = 0;
    let mut machine = String::new();
    let mut kernels: Vec<String> = Vec::new();
    let mut guest_line = false;
    let mut per_cell: Option<(usize, usize)> = None;
    for e in experiments {
        let mut m = Measured::default();
        let mut ids = Vec::new();
        for record in &matrices {
            let Some(rest) = record.id.strip_prefix(&format!("{id}-{}", e.seed())) else {
                continue;
            };
            let plan: Plan = serde_json::from_value(record.plan.clone())
                .map_err(|err| anyhow::anyhow!("matrix {}: a plan this fsynclab cannot read ({err})", record.id))?;
            size = plan.origin.as_deref().and_then(Size::of_origin).unwrap_or(size);
            for k in plan
                .axes
                .iter()
                .filter(|a| a.key == crate::matrix::plan::KERNEL_AXIS)
                .flat_map(|a| &a.values)
            {
                if !kernels.contains(k) {
                    kernels.push(k.clone());
                }
            }
            let name = rest.trim_start_matches('-');
            let Some(group) = e.groups(size).into_iter().find(|g| g.name == name) else {
                continue;
            };
            ids.push(record.id.clone());
            let filter = crate::store::RunFilter {
                matrix_id: Some(record.id.clone()),
                ..Default::default()
            };
            for summary in store.runs(&filter)?.into_iter().filter(|r| !r.interrupted) {
                let (Some(place), Ok(result)) = (summary.matrix.clone(), summary.head.clone()) else {
                    continue;
                };
                runs += 1;
                // The host's machine line: a guest's run only when every run is a guest's.
                if machine.is_empty() || (guest_line && result.environment.vm.is_none()) {
                    guest_line = result.environment.vm.is_some();
                    machine = result.environment.machine_line();
                }
                let run = Run {
                    id: Some(summary.id.0),
                    result,
                };
                match m
                    .cells
                    .iter_mut()
                    .find(|c| c.group == group.name && c.axes == place.axes)
                {
                    Some(c) => c.runs.push(run),
                    None => m.cells.push(CellRuns {
                        group: group.name,
                        axes: place.axes,
                        runs: vec![run],
                    }),
                }
            }
        }
        if ids.is_empty() {
            continue;
        }
        for c in &m.cells {
            let n = c.runs.len();
            per_cell = Some(per_cell.map_or((n, n), |(lo, hi)| (lo.min(n), hi.max(n))));
        }
        seeds.push(kernels::seed_report(*e, size, &m, ids, &kernels));
    }
    let reproduction = Reproduction {
        stored_runs_a_configuration: per_cell,
        id: id.to_string(),
        size,
        machine,
        store: recording::shown_store(&path),
        started_at: matrices.iter().map(|m| m.created_at.clone()).min().unwrap_or_default(),
        duration_s: None,
        runs,
        interrupted: false,
        kernels,
        seeds,
    };
    crate::report::print(&sidebyside::render(&reproduction, format)?)
}
