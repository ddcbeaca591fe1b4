//! Matrix cells into a table: columns and rows in the plan's order, each cell's median, the
//! best of each row, and every cell tested against its row's reference.

use super::{MatrixCell, MatrixRow, MatrixTable, TableCell, TableError, TableSpec};
use crate::compare::figures::{Direction, Metric};
use crate::compare::{compare_pairs, stats, FigureComparison};

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
    let mut lost = vec![vec![false; columns.len()]; row_keys.len()];
    for (r, c, cell) in &placed {
        let v = values(cell);
        if !v.is_empty() {
            grid[*r][*c] = Some(v);
        }
        lost[*r][*c] = cell.runs.iter().any(|run| {
            run.values
                .iter()
                .any(|(f, v)| matches!(f.metric, Metric::Lost | Metric::Torn) && *v > 0.0)
        });
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
            // A configuration that loses acknowledged writes is never "best".
            let best = medians
                .iter()
                .zip(&lost[r])
                .filter(|(_, lost)| !**lost)
                .filter_map(|(m, _)| *m)
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
                        best: Some(median) == best && !lost[r][c],
                        lost_acknowledged: lost[r][c],
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

#[cfg(test)]
mod tests {
    use super::super::render_markdown;
    use super::super::test_data::{cells, spec};
    use super::*;
    use crate::compare::Figure;

    #[test]
    /// Issue 11.
    fn table_marks_the_best_per_row_and_significant_cells() {
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

    /// Issue 18: a configuration that loses acknowledged writes is marked and never best,
    /// however fast it is.
    #[test]
    /// Issue 18.
    fn a_cell_that_lost_acknowledged_writes_is_never_best() {
        let mut c = cells(5);
        // hdd-7200/wal, the fastest of its row, lost writes at a power cut in one run.
        c[4].runs[2].values.insert(Figure::new("acked", Metric::Lost), 3.0);
        let t = build(&c, &spec()).unwrap();
        let hdd = &t.rows[1];
        let wal = hdd.cells[1].as_ref().unwrap();
        assert!(wal.lost_acknowledged && !wal.best);
        assert!(hdd.cells[2].as_ref().unwrap().best, "the fastest that kept every write");
        let md = render_markdown(&t);
        assert!(md.contains("142 !"), "{md}");
        assert!(
            md.contains("! = lost acknowledged writes at a power cut (never best)"),
            "{md}"
        );
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
