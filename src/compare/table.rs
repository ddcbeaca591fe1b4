//! The matrix table, in the shape of seed 002's spreadsheet: one column per value of the
//! compared axis, one row per combination of the other axes (held constant along the row),
//! the median of one figure in each cell, the best of each row in bold, and a marker where a
//! cell differs significantly from the row's reference column.
//!
//! [`build`] turns matrix cells (axis values and the figures of their runs) into a
//! [`MatrixTable`]; [`render_markdown`] and [`render_text`] print it. All three are pure
//! functions of their input.

use std::fmt::Write as _;

use super::figures::{Direction, Figure, RunFigures};
use super::{compare_pairs, stats, FigureComparison, Settings};

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
    /// The best median of its row (ties are all best).
    pub best: bool,
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

fn axes_text(axes: &[(String, String)]) -> String {
    axes.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Builds the table of `spec.figure`, comparing every cell with the reference cell of its
/// row (Mann–Whitney U on the runs' figures; p-values adjusted by Benjamini–Hochberg over
/// the whole table, as one family; see [`super`] for the verdict rule).
pub fn build(cells: &[MatrixCell], spec: &TableSpec) -> Result<MatrixTable, TableError> {
    let Some(first) = cells.first() else {
        return Err(TableError::NoSuchAxis(spec.column_axis.clone()));
    };
    let names: Vec<&String> = first.axes.iter().map(|(k, _)| k).collect();
    for c in cells {
        let these: Vec<&String> = c.axes.iter().map(|(k, _)| k).collect();
        if these != names {
            return Err(TableError::MixedAxes(axes_text(&first.axes), axes_text(&c.axes)));
        }
    }
    let col_index = names
        .iter()
        .position(|k| **k == spec.column_axis)
        .ok_or_else(|| TableError::NoSuchAxis(spec.column_axis.clone()))?;
    let row_axes: Vec<String> = names
        .iter()
        .filter(|k| ***k != spec.column_axis)
        .map(|k| k.to_string())
        .collect();

    // Columns and rows in the order the cells first name them (the matrix plan's order).
    let mut columns: Vec<String> = Vec::new();
    let mut row_keys: Vec<Vec<String>> = Vec::new();
    let mut placed: Vec<(usize, usize, &MatrixCell)> = Vec::new();
    for c in cells {
        let col_value = &c.axes[col_index].1;
        let key: Vec<String> = c
            .axes
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != col_index)
            .map(|(_, (_, v))| v.clone())
            .collect();
        let ci = columns.iter().position(|v| v == col_value).unwrap_or_else(|| {
            columns.push(col_value.clone());
            columns.len() - 1
        });
        let ri = row_keys.iter().position(|k| *k == key).unwrap_or_else(|| {
            row_keys.push(key);
            row_keys.len() - 1
        });
        if placed.iter().any(|(r, c2, _)| (*r, *c2) == (ri, ci)) {
            return Err(TableError::DuplicateCell(axes_text(&c.axes)));
        }
        placed.push((ri, ci, c));
    }
    let reference = spec.reference.clone().unwrap_or_else(|| columns[0].clone());
    let ref_col = columns
        .iter()
        .position(|v| *v == reference)
        .ok_or_else(|| TableError::NoSuchReference {
            reference: reference.clone(),
            axis: spec.column_axis.clone(),
            values: columns.join(", "),
        })?;

    // The figure's values per placed cell.
    let values = |c: &MatrixCell| -> Vec<f64> {
        c.runs
            .iter()
            .filter_map(|r| r.values.get(&spec.figure).copied())
            .collect()
    };
    let mut grid: Vec<Vec<Option<Vec<f64>>>> = vec![vec![None; columns.len()]; row_keys.len()];
    for (r, c, cell) in &placed {
        let v = values(cell);
        if !v.is_empty() {
            grid[*r][*c] = Some(v);
        }
    }

    // Every non-reference cell against its row's reference cell, as one family.
    let mut pairs = Vec::new();
    let mut pair_at = Vec::new();
    for (r, row) in grid.iter().enumerate() {
        let Some(reference_values) = &row[ref_col] else {
            continue;
        };
        for (c, cell) in row.iter().enumerate() {
            if let (true, Some(v)) = (c != ref_col, cell) {
                pairs.push((reference_values.clone(), v.clone()));
                pair_at.push((r, c));
            }
        }
    }
    let mut versus = compare_pairs(&spec.figure, &pairs, &spec.settings).into_iter();
    let mut comparisons: Vec<Vec<Option<FigureComparison>>> = vec![vec![None; columns.len()]; row_keys.len()];
    for (r, c) in pair_at {
        comparisons[r][c] = versus.next();
    }

    let rows = row_keys
        .into_iter()
        .enumerate()
        .map(|(r, key)| {
            let medians: Vec<Option<f64>> = grid[r].iter().map(|v| v.as_deref().and_then(stats::median)).collect();
            let best = medians
                .iter()
                .flatten()
                .copied()
                .reduce(|x, y| match spec.figure.direction() {
                    Direction::HigherIsBetter => x.max(y),
                    Direction::LowerIsBetter => x.min(y),
                });
            let cells = medians
                .iter()
                .enumerate()
                .map(|(c, m)| {
                    m.map(|median| TableCell {
                        median,
                        runs: grid[r][c].as_ref().map_or(0, Vec::len),
                        best: Some(median) == best,
                        versus_reference: comparisons[r][c].take(),
                    })
                })
                .collect();
            MatrixRow { key, cells }
        })
        .collect();
    Ok(MatrixTable {
        figure: spec.figure.clone(),
        column_axis: spec.column_axis.clone(),
        row_axes,
        columns,
        reference,
        rows,
        alpha: spec.settings.alpha,
    })
}

/// The header cells, then one line of cells per row; `cell` renders a value cell.
fn cell_grid(t: &MatrixTable, cell: impl Fn(&TableCell) -> String) -> Vec<Vec<String>> {
    let mut out = Vec::with_capacity(t.rows.len() + 1);
    let mut header = t.row_axes.clone();
    header.extend(t.columns.iter().map(|v| format!("{}={v}", t.column_axis)));
    out.push(header);
    for row in &t.rows {
        let mut line = row.key.clone();
        line.extend(row.cells.iter().map(|c| c.as_ref().map_or("-".to_string(), &cell)));
        out.push(line);
    }
    out
}

/// What the table shows and what its marks mean, under it.
pub(crate) fn legend(t: &MatrixTable, best: &str, marker: &str) -> String {
    let runs: Vec<usize> = t
        .rows
        .iter()
        .flat_map(|r| r.cells.iter().flatten().map(|c| c.runs))
        .collect();
    let (lo, hi) = (
        runs.iter().min().copied().unwrap_or(0),
        runs.iter().max().copied().unwrap_or(0),
    );
    let n = if lo == hi {
        format!("{lo}")
    } else {
        format!("{lo} to {hi}")
    };
    let better = match t.figure.direction() {
        Direction::HigherIsBetter => "higher is better",
        Direction::LowerIsBetter => "lower is better",
    };
    let mut s = format!(
        "{} in {} ({better}), median of {n} runs a cell; {best} = best in its row; {marker} = significantly different from {}={} (two-sided Mann-Whitney U over runs, Benjamini-Hochberg adjusted over the table, p < {}, and more than ±5%)",
        t.figure,
        t.figure.unit(),
        t.column_axis,
        t.reference,
        t.alpha
    );
    let tested: Vec<&FigureComparison> = t
        .rows
        .iter()
        .flat_map(|r| r.cells.iter().flatten().filter_map(|c| c.versus_reference.as_ref()))
        .collect();
    if let Some(c) = tested.iter().find(|c| c.test.is_some()) {
        let floor = stats::smallest_p_value(c.runs_a, c.runs_b);
        if floor >= t.alpha {
            let _ = write!(
                s,
                "; with {} runs a cell no difference can be significant (the smallest p-value is {floor:.2}): repeat at least 5 times",
                c.runs_a.min(c.runs_b)
            );
        }
    } else if !tested.is_empty() {
        let _ = write!(
            s,
            "; fewer than {} runs a cell: no significance tested",
            super::MIN_RUNS
        );
    }
    s
}

/// The table in GitHub-flavoured markdown: the best of each row in `**bold**`, `\*` after a
/// significant difference, the legend below.
pub fn render_markdown(t: &MatrixTable) -> String {
    let grid = cell_grid(t, |c| {
        let v = t.figure.format(c.median);
        let v = if c.best { format!("**{v}**") } else { v };
        if c.significant() {
            format!("{v}\\*")
        } else {
            v
        }
    });
    let mut out = String::new();
    for (i, line) in grid.iter().enumerate() {
        out.push_str("| ");
        out.push_str(
            &line
                .iter()
                .map(|c| c.replace('|', "\\|"))
                .collect::<Vec<_>>()
                .join(" | "),
        );
        out.push_str(" |\n");
        if i == 0 {
            let aligns: Vec<&str> = (0..line.len())
                .map(|j| if j < t.row_axes.len() { "---" } else { "---:" })
                .collect();
            out.push_str(&format!("| {} |\n", aligns.join(" | ")));
        }
    }
    out.push('\n');
    out.push_str(&legend(t, "**bold**", "\\*"));
    out.push('\n');
    out
}

/// The table as aligned text. With `ansi_bold` (a terminal) the best of each row is in bold;
/// without it (a pipe, a file) it is in `[brackets]`. `*` marks a significant difference.
pub fn render_text(t: &MatrixTable, ansi_bold: bool) -> String {
    // Cells as (visible text, printed text): escapes take no width.
    let grid = cell_grid(t, |c| {
        let v = t.figure.format(c.median);
        let mark = if c.significant() { "*" } else { " " };
        match (c.best, ansi_bold) {
            (true, true) => format!("\u{1b}[1m{v}\u{1b}[0m{mark}"),
            (true, false) => format!("[{v}]{mark}"),
            (false, _) => format!("{v}{mark}"),
        }
    });
    let visible = |s: &str| s.replace("\u{1b}[1m", "").replace("\u{1b}[0m", "").chars().count();
    let ncols = grid[0].len();
    let widths: Vec<usize> = (0..ncols)
        .map(|j| grid.iter().map(|l| visible(&l[j])).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for line in &grid {
        let mut text = String::new();
        for (j, cell) in line.iter().enumerate() {
            let pad = " ".repeat(widths[j] - visible(cell));
            if j < t.row_axes.len() {
                text.push_str(&format!("{cell}{pad}  "));
            } else {
                // Numbers right-aligned on their last digit; the mark column sits after it.
                text.push_str(&format!("{pad}{cell}  "));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&legend(t, if ansi_bold { "bold" } else { "[x]" }, "*"));
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::figures::Metric;

    fn runs(cell: &str, values: &[f64]) -> Vec<RunFigures> {
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
    fn cells(repeat: usize) -> Vec<MatrixCell> {
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

    fn spec() -> TableSpec {
        TableSpec {
            column_axis: "coordination".into(),
            figure: Figure::new("fsync", Metric::OpsPerSec),
            reference: None,
            settings: Settings::default(),
        }
    }

    #[test]
    fn issue11_table_marks_the_best_per_row_and_significant_cells() {
        let t = build(&cells(5), &spec()).unwrap();
        assert_eq!(t.columns, ["none", "wal", "delay"]);
        assert_eq!(t.row_axes, ["device"]);
        let ram = &t.rows[0];
        assert!(
            ram.cells[0].as_ref().unwrap().best,
            "no coordination wins on a fast flush"
        );
        assert!(ram.cells[1].as_ref().unwrap().significant());
        assert!(
            !ram.cells[2].as_ref().unwrap().significant(),
            "within 5% of the reference"
        );
        let hdd = &t.rows[1];
        assert!(hdd.cells[1].as_ref().unwrap().best, "coordination wins on a slow flush");
    }

    #[test]
    fn issue11_markdown_golden() {
        let t = build(&cells(5), &spec()).unwrap();
        let want = "\
| device | coordination=none | coordination=wal | coordination=delay |
| --- | ---: | ---: | ---: |
| ram | **5200** | 3100\\* | 5150 |
| hdd-7200 | 61.0 | **142**\\* | 118\\* |

fsync.ops/s in ops/s (higher is better), median of 5 runs a cell; **bold** = best in its row; \\* = significantly different from coordination=none (two-sided Mann-Whitney U over runs, Benjamini-Hochberg adjusted over the table, p < 0.05, and more than ±5%)
";
        assert_eq!(render_markdown(&t), want);
    }

    #[test]
    fn issue11_text_golden_plain_and_ansi() {
        let t = build(&cells(3), &spec()).unwrap();
        let want = "\
device    coordination=none  coordination=wal  coordination=delay
ram                 [5200]              3100                5150
hdd-7200              61.0             [142]                 118

fsync.ops/s in ops/s (higher is better), median of 3 runs a cell; [x] = best in its row; * = significantly different from coordination=none (two-sided Mann-Whitney U over runs, Benjamini-Hochberg adjusted over the table, p < 0.05, and more than ±5%); with 3 runs a cell no difference can be significant (the smallest p-value is 0.10): repeat at least 5 times
";
        assert_eq!(render_text(&t, false), want);
        // On a terminal, bold instead of brackets; the escapes take no width.
        let ansi = render_text(&t, true);
        let want_rows = "\
device    coordination=none  coordination=wal  coordination=delay
ram                   \u{1b}[1m5200\u{1b}[0m              3100                5150
hdd-7200              61.0               \u{1b}[1m142\u{1b}[0m                 118
";
        assert!(ansi.starts_with(want_rows), "{ansi}");
    }

    #[test]
    fn missing_cells_and_bad_specs() {
        let mut c = cells(5);
        c.remove(5);
        let t = build(&c, &spec()).unwrap();
        assert_eq!(t.rows[1].cells[2], None);
        assert!(render_markdown(&t).contains("| hdd-7200 | 61.0 | **142**\\* | - |"));
        let mut s = spec();
        s.reference = Some("jbd2".into());
        assert!(matches!(build(&c, &s), Err(TableError::NoSuchReference { .. })));
        s.column_axis = "scheduler".into();
        assert_eq!(build(&c, &s), Err(TableError::NoSuchAxis("scheduler".into())));
        let mut dup = cells(3);
        dup.push(dup[0].clone());
        assert!(matches!(build(&dup, &spec()), Err(TableError::DuplicateCell(_))));
    }
}
