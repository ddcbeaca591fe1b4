//! A matrix table printed: markdown with `**bold**`, or aligned text with ANSI bold on a
//! terminal and `[brackets]` elsewhere, and the legend that says what the marks mean.

use std::fmt::Write as _;

use super::{MatrixTable, TableCell};
use crate::compare::figures::Direction;
use crate::compare::{stats, FigureComparison};

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
    let lost = t
        .rows
        .iter()
        .any(|r| r.cells.iter().flatten().any(|c| c.lost_acknowledged));
    let lost = if lost {
        "; ! = lost acknowledged writes at a power cut (never best)"
    } else {
        ""
    };
    let mut s = format!(
        "{} in {} ({better}), median of {n} runs a cell; {best} = best in its row{lost}; {marker} = significantly different from {}={} (two-sided Mann-Whitney U over runs, Benjamini-Hochberg adjusted over the table, p < {}, and more than ±5%)",
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
            crate::compare::MIN_RUNS
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
        let v = if c.lost_acknowledged { format!("{v} !") } else { v };
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
        let v = if c.lost_acknowledged { format!("{v} !") } else { v };
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
    use super::super::{
        build,
        test_data::{cells, spec},
    };
    use super::*;

    #[test]
    /// Issue 11.
    fn markdown_golden() {
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
    /// Issue 11.
    fn text_golden_plain_and_ansi() {
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
}
