//! A scenario's tables: typed rows, rendered to the cells results keep and exporters print.

use serde::{Deserialize, Serialize};

/// A table as results store and reports print it: typed rows rendered to cells.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Table {
    pub(crate) title: String,
    pub(crate) columns: Vec<String>,
    /// One row per line of the table.
    pub(crate) rows: Vec<Vec<Cell>>,
}

/// A typed table row: its columns' titles, and its cells in that order.
pub(crate) trait Row {
    const COLUMNS: &'static [&'static str];
    fn cells(&self) -> Vec<Cell>;
}

/// One cell of a [`Table`], stored as a JSON string or number (`"wal"`, `4096`, `812.5`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Cell {
    /// A name: a coordination, a sync method, a case.
    Text(String),
    /// A whole number: a count of calls, a size in KiB.
    Count(u64),
    /// A measured figure (a rate, a latency); always finite.
    Figure(f64),
    /// Any other JSON a result holds there, kept as it was: `null` where a figure was not a
    /// number (JSON has no NaN), a later version's kinds of cell.
    Other(serde_json::Value),
}

impl From<&str> for Cell {
    fn from(text: &str) -> Cell {
        Cell::Text(text.to_string())
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell::Text(text)
    }
}

impl From<u64> for Cell {
    fn from(n: u64) -> Cell {
        Cell::Count(n)
    }
}

impl From<f64> for Cell {
    /// A figure; a non-finite one becomes `null`, as JSON has it.
    fn from(x: f64) -> Cell {
        if x.is_finite() {
            Cell::Figure(x)
        } else {
            Cell::Other(serde_json::Value::Null)
        }
    }
}

impl Serialize for Cell {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        match self {
            Cell::Text(s) => ser.serialize_str(s),
            Cell::Count(n) => ser.serialize_u64(*n),
            Cell::Figure(x) => ser.serialize_f64(*x),
            Cell::Other(v) => v.serialize(ser),
        }
    }
}

impl<'de> Deserialize<'de> for Cell {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Cell, D::Error> {
        use serde_json::Value;
        Ok(match Value::deserialize(de)? {
            Value::String(s) => Cell::Text(s),
            Value::Number(n) => match (n.as_u64(), n.as_f64()) {
                (Some(count), _) => Cell::Count(count),
                (None, Some(x)) if n.is_f64() => Cell::Figure(x),
                _ => Cell::Other(Value::Number(n)),
            },
            other => Cell::Other(other),
        })
    }
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
