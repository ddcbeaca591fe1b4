//! The matrix table, in the shape of seed 002's spreadsheet: one column per value of the
//! compared axis, one row per combination of the other axes (held constant along the row),
//! the median of one figure in each cell, the best of each row in bold, and a marker where a
//! cell differs significantly from the row's reference column.
//!
//! [`build`] turns matrix cells (axis values and the figures of their runs) into a
//! [`MatrixTable`]; [`render_markdown`] and [`render_text`] print it. All three are pure
//! functions of their input.

mod build;
mod render;

pub use build::build;
pub(crate) use render::legend;
pub use render::{render_markdown, render_text};

use super::figures::{Figure, RunFigures};
use super::{FigureComparison, Settings};

/// One cell of a matrix: the value of every axis, and the runs made with them.
#[derive(Clone, Debug, PartialEq)]
pub struct MatrixCell {
    /// (axis, value) in the matrix's axis order, e.g. `[("device", "ram"), ("coordination", "none")]`.
    pub axes: Vec<(String, String)>,
    pub runs: Vec<RunFigures>,
}

/// Groups runs into matrix cells by their axis values, cells in the order their first run
/// comes (a matrix's runs listed oldest first give the plan's order).
pub fn group_cells(runs: impl IntoIterator<Item = (Vec<(String, String)>, RunFigures)>) -> Vec<MatrixCell> {
    let mut cells: Vec<MatrixCell> = Vec::new();
    for (axes, figures) in runs {
        match cells.iter_mut().find(|c| c.axes == axes) {
            Some(c) => c.runs.push(figures),
            None => cells.push(MatrixCell {
                axes,
                runs: vec![figures],
            }),
        }
    }
    cells
}

/// What the table shows.
#[derive(Clone, Debug)]
pub struct TableSpec {
    /// The axis whose values become columns.
    pub column_axis: String,
    pub figure: Figure,
    /// The column every other is tested against; the first column when `None`.
    pub reference: Option<String>,
    pub settings: Settings,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MatrixTable {
    pub figure: Figure,
    pub column_axis: String,
    /// The other axes, in matrix order: one header cell each.
    pub row_axes: Vec<String>,
    /// The column axis's values, in the order the cells first name them.
    pub columns: Vec<String>,
    pub reference: String,
    pub rows: Vec<MatrixRow>,
    pub alpha: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MatrixRow {
    /// The value of each of [`MatrixTable::row_axes`].
    pub key: Vec<String>,
    /// One per column; `None` where the matrix has no such cell or no run of it has the figure.
    pub cells: Vec<Option<TableCell>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TableCell {
    pub median: f64,
    pub runs: usize,
    /// The best median of its row (ties are all best); never a cell that lost writes.
    pub best: bool,
    /// A run of the cell lost or tore acknowledged records at a power cut (powercut's
    /// `acked.lost`, `acked.torn`): whatever its speed, it is marked, and never best.
    pub lost_acknowledged: bool,
    /// This cell against the row's reference cell; `None` in the reference column.
    pub versus_reference: Option<FigureComparison>,
}

impl TableCell {
    pub fn significant(&self) -> bool {
        self.versus_reference
            .as_ref()
            .is_some_and(|c| c.verdict.is_significant())
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TableError {
    #[error("no matrix cell has the axis '{0}'")]
    NoSuchAxis(String),
    #[error("the reference '{reference}' is not a value of axis '{axis}' (values: {values})")]
    NoSuchReference {
        reference: String,
        axis: String,
        values: String,
    },
    #[error("matrix cells name different axes: {0} and {1}")]
    MixedAxes(String, String),
    #[error("two matrix cells have the same axis values: {0}")]
    DuplicateCell(String),
}

#[cfg(test)]
pub(crate) mod test_data {
    use super::*;
    use crate::compare::figures::Metric;

    pub(crate) fn runs(cell: &str, values: &[f64]) -> Vec<RunFigures> {
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| RunFigures {
                run: format!("{cell}#{i}"),
                values: [(Figure::new("fsync", Metric::OpsPerSec), v)].into_iter().collect(),
            })
            .collect()
    }

    /// Seed 002's finding on emulated disks: coordination loses on a fast flush, wins on a
    /// slow one.
    pub(crate) fn cells(repeat: usize) -> Vec<MatrixCell> {
        let cell = |device: &str, coordination: &str, base: f64| MatrixCell {
            axes: vec![
                ("device".into(), device.into()),
                ("coordination".into(), coordination.into()),
            ],
            runs: runs(
                &format!("{device}/{coordination}"),
                &[base, base * 1.02, base * 0.99, base * 1.01, base * 0.98][..repeat],
            ),
        };
        vec![
            cell("ram", "none", 5200.0),
            cell("ram", "wal", 3100.0),
            cell("ram", "delay", 5150.0),
            cell("hdd-7200", "none", 61.0),
            cell("hdd-7200", "wal", 142.0),
            cell("hdd-7200", "delay", 118.0),
        ]
    }

    pub(crate) fn spec() -> TableSpec {
        TableSpec {
            column_axis: "coordination".into(),
            figure: Figure::new("fsync", Metric::OpsPerSec),
            reference: None,
            settings: Settings::default(),
        }
    }
}
