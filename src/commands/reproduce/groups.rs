//! The groups of the seeds' experiments planned as matrices (each cell's parameters and
//! testbed checked as `run` would check them), and one run of one made and recorded through
//! [`crate::run::cell`].

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use super::experiment::{Experiment, Size};
use super::SMOKE_SETS;
use crate::explain::run::ExplainOptions;
use crate::matrix::plan::Plan;
use crate::recording::Recording;
use crate::run::cell::{self, Made};
use crate::run::engine::Planned;
use crate::store::MatrixPlace;
use crate::units::human_size;

/// One group of a seed, planned: its matrix id and plan.
pub(super) struct PlannedGroup {
    pub(super) experiment: &'static dyn Experiment,
    pub(super) name: &'static str,
    pub(super) matrix_id: String,
    pub(super) plan: Plan,
    pub(super) explain_over_ms: Option<u64>,
}

/// What of the seeds' groups to run, and how often.
#[derive(Clone, Debug, Default)]
pub(super) struct Choice {
    /// `(seed, group)`: only these groups of these seeds (`004:datasync`); a seed not listed
    /// runs every group.
    pub(super) only: Vec<(&'static str, String)>,
    /// Runs of every configuration (`--runs`), else the size's.
    pub(super) runs: Option<u32>,
}

impl Choice {
    fn wants(&self, seed: &str, group: &super::experiment::Group) -> bool {
        let named: Vec<&String> = self.only.iter().filter(|(s, _)| *s == seed).map(|(_, g)| g).collect();
        named.is_empty() || named.iter().any(|g| **g == group.name || **g == group.scenario)
    }
}

/// Every group of every experiment (those `choice` keeps) as a matrix plan with its id,
/// each cell's parameters and testbed checked as `run` would check them.
pub(super) fn plan_groups(
    experiments: &[&'static dyn Experiment],
    size: Size,
    id: &str,
    backing: Option<&PathBuf>,
    choice: &Choice,
) -> Result<Vec<PlannedGroup>> {
    let mut out = Vec::new();
    for e in experiments {
        for group in e.groups(size).into_iter().filter(|g| choice.wants(e.seed(), g)) {
            let mut plan = group.plan(size);
            if let Some(runs) = choice.runs {
                plan.repeat = runs;
            }
            if size == Size::Smoke {
                let smoke = SMOKE_SETS
                    .iter()
                    .filter(|(s, _)| *s == group.scenario)
                    .flat_map(|(_, sets)| *sets);
                plan.sets.extend(smoke.map(|s| s.to_string()));
            }
            if let Some(dir) = backing {
                plan.target.push(("backing".into(), dir.display().to_string()));
            }
            for cell in plan.cells() {
                plan.planned_for(&cell)?;
                plan.target_for(&cell)?;
            }
            let matrix_id = match group.name {
                "" => format!("{id}-{}", e.seed()),
                name => format!("{id}-{}-{name}", e.seed()),
            };
            out.push(PlannedGroup {
                experiment: *e,
                name: group.name,
                matrix_id,
                plan,
                explain_over_ms: group.explain_over_ms,
            });
        }
    }
    Ok(out)
}

/// `--full`: how long the runs measure and how much memory their largest emulated disk
/// takes, said before anything runs.
pub(super) fn say_full_plan(groups: &[PlannedGroup], total: usize) -> Result<()> {
    let (mut measuring, mut image) = (Duration::ZERO, 0u64);
    for g in groups {
        for (_, c) in g.plan.order() {
            let cell = &g.plan.cells()[c];
            let planned = g.plan.planned_for(cell)?;
            measuring += planned.plan.expected_duration().unwrap_or_default();
            if let Some(s) = g.plan.target_for(cell)?.scratch() {
                image = image.max(
                    s.size
                        .unwrap_or_else(|| s.spec.default_size(planned.plan.space_needed())),
                );
            }
        }
    }
    note!(
        "fsynclab reproduce --full: {total} runs measuring about {} in all, plus each run's setup (mkfs, files written before measuring: about as long again); one emulated disk at a time, whose image takes up to {} of memory",
        crate::units::clock(measuring),
        human_size(image)
    );
    Ok(())
}

/// `reproduce3-001 device=ram #2`: how lines name run `rep` of `cell` of group `g`.
pub(super) fn label_of(g: &PlannedGroup, cell: &crate::matrix::plan::Cell, rep: u32) -> String {
    let axes: Vec<String> = cell.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let what = if axes.is_empty() {
        g.plan.scenario.clone()
    } else {
        axes.join(" ")
    };
    format!("{} {what} #{}", g.matrix_id, rep + 1)
}

/// Makes run `rep` of `cell` of group `g` on a freshly made testbed, and records it at its
/// place ([`crate::run::cell`]).
pub(super) fn run_one(
    g: &PlannedGroup,
    cell: &crate::matrix::plan::Cell,
    rep: u32,
    label: &str,
    mut explain: ExplainOptions,
    recording: &mut Recording,
) -> Result<Made> {
    let mut planned: Planned = g.plan.planned_for(cell)?;
    if let Some(ms) = g.explain_over_ms {
        explain.threshold.over_ns = ms * 1_000_000;
    }
    let on = g.plan.kernel_for(cell)?.map(|(kernel, args, limit)| cell::OnKernel {
        kernel,
        args: super::kernels::guest_args(args, &explain),
        limit,
    });
    planned.explain = explain;
    let request = g.plan.target_for(cell)?;
    let place = MatrixPlace {
        matrix_id: g.matrix_id.clone(),
        axes: cell.clone(),
        repetition: rep,
    };
    cell::make(
        &cell::Cell {
            planned: &planned,
            request: &request,
            label,
            place: Some(&place),
            claim: false,
            who: "fsynclab reproduce",
            kernel: on.as_ref(),
        },
        recording,
    )
}
