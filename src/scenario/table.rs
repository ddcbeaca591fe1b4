//! A scenario's tables: typed rows, rendered to the cells results keep and exporters print.

use serde::{Deserialize, Serialize};

/// A table as results store and reports print it: typed rows rendered to cells.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Table {
    pub(crate) title: String,
    pub(crate) columns: Vec<String>,
    /// Cells are numbers or strings, one row per line of the table.
    pub(crate) rows: Vec<Vec<serde_json::Value>>,
}

/// A typed table row: its columns' titles, and its cells in that order.
pub(crate) trait Row {
    const COLUMNS: &'static [&'static str];
    fn cells(&self) -> Vec<serde_json::Value>;
}

impl Table {
    /// Renders typed rows under `title`.
    pub(crate) fn of<R: Row>(title: String, rows: &[R]) -> Table {
        Table {
            title,
            columns: R::COLUMNS.iter().map(|c| c.to_string()).collect(),
            rows: rows.iter().map(Row::cells).collect(),
        }
    }
}
