//! Runs another process disturbed: a row whose runs had their writeback sysctls changed
//! by someone else while they ran says so in its reason.

use super::experiment::{Measured, Row};

/// `row` with a warning in its reason for every run behind it whose writeback sysctls
/// another process changed while it ran: its figures are not those of the configuration the
/// row states (the result's own finding says which and how).
pub(super) fn with_disturbances(mut row: Row, m: &Measured) -> Row {
    for run in m.cells.iter().flat_map(|c| &c.runs) {
        let Some(id) = run.id.filter(|id| row.runs.contains(id)) else {
            continue;
        };
        for finding in &run.result.findings {
            if let crate::result::Finding::SysctlsChanged(changed) = finding {
                let what: Vec<String> = changed
                    .0
                    .iter()
                    .map(|c| format!("vm.{} {} -> {}", c.name, c.was, c.now))
                    .collect();
                row.judgement.why = format!(
                    "{}; CAUTION: another process changed run {id}'s sysctls while it ran ({}): its figures are not this configuration's",
                    row.judgement.why,
                    what.join(", ")
                );
            }
        }
    }
    row
}
