//! `fsynclab matrix --dry-run`: the plan printed, and nothing run: its axes and cells, what
//! every cell shares, the time and space its runs take, where they go, and their order.

use std::time::Duration;

use anyhow::Result;

use super::tables::settings_line;
use crate::matrix::plan::{self, Plan};
use crate::units::human_size;

/// The plan as `--dry-run` prints it: cells, runs, time and space.
pub(super) fn dry_run(plan: &Plan, slots: &[(u32, usize)]) -> Result<String> {
    let cells = plan.cells();
    let mut out = format!(
        "matrix {}: {} axes, {} cells, {} repetitions: {} runs, round-robin over the cells\n",
        plan.scenario,
        plan.axes.len(),
        cells.len(),
        plan.repeat,
        slots.len()
    );
    for (i, a) in plan.axes.iter().enumerate() {
        out.push_str(&format!(
            "  {}{}: {}\n",
            if i == 0 { "axes      " } else { "          " },
            a.key,
            a.values.join(" | ")
        ));
    }
    out.push_str(&format!("  shared    {}\n", settings_line(plan)));
    if plan.implied_scratch {
        out.push_str(&format!(
            "            (scratch={} because a device, scheduler, mkfs or kernel axis needs a scratch filesystem; --scratch FS chooses another)\n",
            plan::IMPLIED_SCRATCH
        ));
    }
    // Time: what the parameters decide, per run; space: the largest run at a time.
    let (mut known, mut unknown) = (Duration::ZERO, 0usize);
    let (mut files, mut image) = (0u64, 0u64);
    for &(_, c) in slots {
        let planned = plan.planned_for(&cells[c])?;
        match planned.plan.expected_duration() {
            Some(d) => known += d,
            None => unknown += 1,
        }
        files = files.max(planned.plan.space_needed());
        let target = plan.target_for(&cells[c])?;
        if let Some(s) = target.scratch() {
            image = image.max(
                s.size
                    .unwrap_or_else(|| s.spec.default_size(planned.plan.space_needed())),
            );
        }
    }
    out.push_str(&format!(
        "  time      {} measured{}, plus each run's setup (files written before measuring{})\n",
        crate::units::clock(known),
        if unknown > 0 {
            format!(
                " in {} runs, and {unknown} runs as long as the device takes",
                slots.len() - unknown
            )
        } else {
            String::new()
        },
        match (image > 0, plan.boots_kernels()) {
            (true, true) =>
                ", making and removing a scratch filesystem, and booting a VM for each run of another kernel",
            (true, false) => ", and making and removing a scratch filesystem",
            _ => "",
        }
    ));
    let space = if image > 0 {
        format!(
            "one scratch image at a time, up to {} (sparse; files up to {}; a ram device keeps it in memory)",
            human_size(image),
            human_size(files)
        )
    } else {
        format!("up to {} of files at a time", human_size(files))
    };
    out.push_str(&format!(
        "  space     {space}; about 6 bytes a call in the results store\n"
    ));
    if let Some(p) = plan.placement.as_ref().filter(|p| p.engine != "local") {
        let nodes = match p.nodes.as_slice() {
            [] => "any node".to_string(),
            some => format!("any of {}", some.join(",")),
        };
        let spread = if p.per_host {
            "the whole matrix on every node (the host axis)".to_string()
        } else {
            format!("each run on {nodes}")
        };
        out.push_str(&format!(
            "  placement {}: {spread}{}{}\n",
            p.engine,
            p.partition
                .as_ref()
                .map(|x| format!(", partition {x}"))
                .unwrap_or_default(),
            p.parallel.map(|k| format!(", at most {k} at once")).unwrap_or_default()
        ));
    }
    out.push_str("  order     ");
    let shown: Vec<String> = slots
        .iter()
        .take(cells.len().min(4))
        .map(|(rep, c)| {
            let axes: Vec<String> = cells[*c].iter().map(|(_, v)| v.clone()).collect();
            format!("{} #{}", axes.join("/"), rep + 1)
        })
        .collect();
    out.push_str(&shown.join(", "));
    out.push_str(if slots.len() > shown.len() { ", ...\n" } else { "\n" });
    Ok(out)
}
