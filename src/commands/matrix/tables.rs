//! The tables of a stored matrix printed: one per figure, under a title saying what every
//! cell shares; once its runs are made, a closing line on how to draw it and list its runs.

use std::io::IsTerminal;

use anyhow::Result;

use super::options::TableOptions;
use crate::cli::TableFormat;
use crate::matrix::plan::Plan;
use crate::matrix::table::{self, StoredMatrix};
use crate::store::Store;

/// The tables of matrix `id` once its runs are made, then (unless `--quiet`) how to draw it
/// and list its runs, `with_hosts` when a farm's nodes made them.
pub(super) fn print_tables_and_close(store: &Store, id: &str, options: &TableOptions, with_hosts: bool) -> Result<()> {
    print_tables(store, id, options)?;
    if !options.quiet {
        note!(
            "fsynclab matrix {id}: `fsynclab report --matrix {id} -o {id}.html` draws it; `fsynclab runs --matrix {id}` lists its runs{}",
            if with_hosts { " with their hosts" } else { "" }
        );
    }
    Ok(())
}

pub(super) fn print_tables(store: &Store, id: &str, options: &TableOptions) -> Result<()> {
    let stored = StoredMatrix::load(store, id)?;
    let terminal = std::io::stdout().is_terminal();
    let mut out = String::new();
    for (i, figure) in stored.figures(&options.figures)?.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let t = stored.table(figure, options.columns.as_deref())?;
        if options.format != TableFormat::Json {
            out.push_str(&format!(
                "matrix {id}: {} ({})\n\n",
                stored.plan.scenario,
                settings_line(&stored.plan)
            ));
        }
        out.push_str(&table::render(&t, options.format, terminal));
    }
    crate::report::print(&out)?;
    Ok(())
}

/// What every cell shares, for the table's title.
pub(super) fn settings_line(plan: &Plan) -> String {
    let mut parts: Vec<String> = plan.target.iter().map(|(k, v)| format!("{k}={v}")).collect();
    parts.extend(plan.sets.iter().cloned());
    parts.push(format!("{} runs a cell", plan.repeat));
    parts.join(" ")
}
