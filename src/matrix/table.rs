//! A stored matrix read back as seed 002's table: its complete runs grouped into the plan's
//! cells, one table per figure ([`crate::compare::table`] builds and prints it), and the
//! run of each cell whose figure is the median, for the HTML page.

use anyhow::Result;
use serde_json::{json, Value};

use super::plan::Plan;
use crate::compare::table::{self, MatrixCell, MatrixTable, TableSpec};
use crate::compare::{Figure, RunFigures, Settings};
use crate::error::Usage;
use crate::store::{MatrixRecord, RunFilter, RunId, RunSummary, Store};

/// A matrix as stored: its plan and its complete (not interrupted) runs.
pub(crate) struct StoredMatrix {
    pub(crate) record: MatrixRecord,
    pub(crate) plan: Plan,
    pub(crate) runs: Vec<RunSummary>,
}

impl StoredMatrix {
    pub(crate) fn load(store: &Store, id: &str) -> Result<StoredMatrix> {
        let record = store.matrix(id)?.ok_or_else(|| {
            Usage(format!(
                "no matrix {id} in the results store (`fsynclab runs` shows the matrices of the stored runs)"
            ))
        })?;
        let plan: Plan = serde_json::from_value(record.plan.clone())
            .map_err(|e| anyhow::anyhow!("matrix {id}: a plan this fsynclab cannot read ({e})"))?;
        let runs = store
            .runs(&RunFilter {
                matrix_id: Some(id.to_string()),
                ..Default::default()
            })?
            .into_iter()
            .filter(|r| !r.interrupted)
            .collect();
        Ok(StoredMatrix { record, plan, runs })
    }

    /// The plan's cells in order, each with the figures of its runs.
    pub(crate) fn cells(&self) -> Vec<(MatrixCell, Vec<RunId>)> {
        self.plan
            .cells()
            .into_iter()
            .map(|axes| {
                let mine: Vec<&RunSummary> = self
                    .runs
                    .iter()
                    .filter(|r| r.matrix.as_ref().is_some_and(|m| m.axes == axes))
                    .collect();
                let runs: Vec<RunFigures> = mine.iter().filter_map(|r| r.figures().ok()).collect();
                let ids = mine.iter().map(|r| r.id).collect();
                (MatrixCell { axes, runs }, ids)
            })
            .collect()
    }

    /// The figures the tables show: those asked for, else the plan's, else the main
    /// figure of the first run.
    pub(crate) fn figures(&self, asked: &[String]) -> Result<Vec<Figure>> {
        let names = if asked.is_empty() { &self.plan.figures } else { asked };
        if names.is_empty() {
            let first = self
                .runs
                .iter()
                .find_map(|r| r.figures().ok().and_then(|f| f.main_figure()));
            return Ok(first.into_iter().collect());
        }
        names
            .iter()
            .map(|n| {
                Figure::parse(n).ok_or_else(|| {
                    Usage(format!(
                        "--figure {n}: expected KIND.METRIC, e.g. commit.tps, fsync.p99, write.ops/s"
                    ))
                    .into()
                })
            })
            .collect()
    }

    /// One table of `figure`, columns from `columns` (else the plan's, else the last axis).
    pub(crate) fn table(&self, figure: &Figure, columns: Option<&str>) -> Result<MatrixTable> {
        let column_axis = columns
            .map(str::to_string)
            .or_else(|| self.plan.columns.clone())
            .or_else(|| self.plan.axes.last().map(|a| a.key.clone()))
            .unwrap_or_default();
        let cells: Vec<MatrixCell> = self.cells().into_iter().map(|(c, _)| c).collect();
        let spec = TableSpec {
            column_axis,
            figure: figure.clone(),
            reference: None,
            settings: Settings::default(),
        };
        table::build(&cells, &spec).map_err(|e| Usage(format!("matrix {}: {e}", self.record.id)).into())
    }

    /// For each cell with runs, the run whose `figure` is the median (the lower middle of an
    /// even count), with the cell's label.
    pub(crate) fn median_runs(&self, figure: &Figure) -> Vec<(String, RunId)> {
        self.cells()
            .into_iter()
            .filter_map(|(cell, ids)| {
                let mut valued: Vec<(f64, RunId)> = cell
                    .runs
                    .iter()
                    .zip(&ids)
                    .filter_map(|(f, id)| f.values.get(figure).map(|v| (*v, *id)))
                    .collect();
                valued.sort_by(|a, b| a.0.total_cmp(&b.0));
                let label = cell
                    .axes
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ");
                valued.get((valued.len().max(1) - 1) / 2).map(|(_, id)| (label, *id))
            })
            .collect()
    }
}

/// The table as `format` prints it.
pub(crate) fn render(t: &MatrixTable, format: TableFormat, terminal: bool) -> String {
    match format {
        TableFormat::Text => table::render_text(t, terminal),
        TableFormat::Markdown => table::render_markdown(t),
        TableFormat::Json => serde_json::to_string_pretty(&as_json(t)).unwrap_or_default() + "\n",
    }
}

fn as_json(t: &MatrixTable) -> Value {
    json!({
        "figure": t.figure.to_string(),
        "unit": t.figure.unit(),
        "column_axis": t.column_axis,
        "row_axes": t.row_axes,
        "columns": t.columns,
        "reference": t.reference,
        "rows": t.rows.iter().map(|r| json!({
            "key": r.key,
            "cells": r.cells.iter().map(|c| c.as_ref().map(|c| json!({
                "median": t.figure.in_unit(c.median),
                "runs": c.runs,
                "best": c.best,
                "lost_acknowledged": c.lost_acknowledged,
                "significant": c.significant(),
                "versus_reference": c.versus_reference.as_ref().map(|v| json!({
                    "verdict": v.verdict.to_string(),
                    "ratio": v.ratio.map(|r| r.ratio),
                    "p_adjusted": v.p_adjusted,
                })),
            }))).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// How `--format` prints a matrix's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TableFormat {
    /// Aligned text, the best of a row in bold on a terminal and in [brackets] elsewhere
    Text,
    /// A GitHub markdown table, the best of a row in **bold**
    Markdown,
    /// The table's cells with their medians, run counts and comparisons
    Json,
}
