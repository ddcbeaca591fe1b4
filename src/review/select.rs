//! What names a set of runs on the command line, for `compare` and `report`:
//!
//! - `42`: a stored run; `3-7`: stored runs 3 to 7; `3,5,9-11`: a list of them;
//! - `m3:device=ram,coordination=none`: the runs of one cell of stored matrix m3 (the axes
//!   given must pick out exactly one cell; values may hold `,` and `=`, since the split is
//!   made only before a name of the matrix's axes);
//! - `a.json,b.json`: result files (`--output`, a suite's results directory).
//!
//! Interrupted runs are left out of a matrix cell: a run cut short is not a repetition.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::compare::{run_figures, RunFigures};
use crate::error::Usage;
use crate::result::RunResult;
use crate::store::{RunFilter, RunId, RunSummary, Store};

/// One run a set names.
pub(crate) enum Picked {
    Stored(Box<RunSummary>),
    File(PathBuf),
}

impl Picked {
    /// How the run is named in tables: `run 42`, or the file name.
    pub(crate) fn label(&self) -> String {
        match self {
            Picked::Stored(r) => format!("run {}", r.id),
            Picked::File(p) => p.display().to_string(),
        }
    }

    /// The run's figures (a file is read without building its samples).
    pub(crate) fn figures(&self) -> Result<RunFigures> {
        match self {
            Picked::Stored(r) => Ok(r.figures()?),
            Picked::File(p) => Ok(run_figures(&p.display().to_string(), &RunResult::load_head(p)?)?),
        }
    }

    /// The testbed the run had (`ext4 hdd-7200`), for saying how two sets differ.
    pub(crate) fn testbed(&self) -> Result<String> {
        match self {
            Picked::Stored(r) => Ok(super::listing::testbed(r.head.as_ref().ok().map(|h| &h.environment))),
            Picked::File(p) => Ok(super::listing::testbed(Some(&RunResult::load_head(p)?.environment))),
        }
    }

    /// The parameters of the run, for saying how two sets differ.
    pub(crate) fn params(&self) -> Result<BTreeMap<String, String>> {
        match self {
            Picked::Stored(r) => Ok(r.params.clone()),
            Picked::File(p) => Ok(RunResult::load_head(p)?.params),
        }
    }
}

/// The runs `text` names. `store` is needed only for stored runs and matrix cells.
pub(crate) fn pick(text: &str, store: &mut dyn FnMut() -> Result<Store>) -> Result<Vec<Picked>> {
    let text = text.trim();
    if Path::new(text).is_file() {
        return Ok(vec![Picked::File(PathBuf::from(text))]);
    }
    if let Some((matrix, cell)) = text.split_once(':').filter(|(m, _)| is_matrix_id(m)) {
        return matrix_cell(&store()?, matrix, cell);
    }
    let mut ids = Vec::new();
    let mut files = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if Path::new(item).is_file() {
            files.push(Picked::File(PathBuf::from(item)));
        } else if let Some((lo, hi)) = item.split_once('-') {
            let (lo, hi) = (id(lo, text)?, id(hi, text)?);
            if lo > hi {
                return Err(Usage(format!("'{item}': a range goes from the lower id to the higher")).into());
            }
            ids.extend((lo.0..=hi.0).map(RunId));
        } else {
            ids.push(id(item, text)?);
        }
    }
    let mut out = files;
    if !ids.is_empty() {
        let found = store()?.runs(&RunFilter {
            ids: ids.clone(),
            ..Default::default()
        })?;
        if let Some(missing) = ids.iter().find(|i| !found.iter().any(|r| r.id == **i)) {
            return Err(Usage(format!(
                "'{text}': no run {missing} in the results store (`fsynclab runs` lists them)"
            ))
            .into());
        }
        out.extend(found.into_iter().map(|r| Picked::Stored(Box::new(r))));
    }
    if out.is_empty() {
        return Err(Usage(format!("'{text}' names no runs")).into());
    }
    Ok(out)
}

fn id(text: &str, whole: &str) -> Result<RunId, Usage> {
    text.trim().parse::<RunId>().map_err(|_| {
        Usage(format!(
            "'{whole}': '{text}' is neither a file nor a run id; give ids (42), ranges (3-7), lists (3,5,9), result files, or a matrix cell (m3:device=ram)"
        ))
    })
}

/// `m3`: the form of matrix ids the store gives out.
pub(crate) fn is_matrix_id(text: &str) -> bool {
    text.strip_prefix('m')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Splits `device=flush=5ms,write=80M,coordination=wal` into (axis, value) pairs, cutting
/// only before a name of `axes` followed by `=`.
pub(crate) fn split_cell(text: &str, axes: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut starts = vec![0];
    for (i, _) in text.match_indices(',') {
        let rest = &text[i + 1..];
        if axes.iter().any(|a| rest.starts_with(&format!("{a}="))) {
            starts.push(i + 1);
        }
    }
    starts.push(text.len() + 1);
    let mut out = Vec::new();
    for w in starts.windows(2) {
        let part = &text[w[0]..w[1] - 1];
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("'{part}' is not AXIS=VALUE"))?;
        if !axes.iter().any(|a| a == k) {
            return Err(format!("the matrix has no axis '{k}' (its axes: {})", axes.join(", ")));
        }
        out.push((k.to_string(), v.to_string()));
    }
    Ok(out)
}

/// The complete runs of the one cell of `matrix` that `cell` picks out.
fn matrix_cell(store: &Store, matrix: &str, cell: &str) -> Result<Vec<Picked>> {
    if store.matrix(matrix)?.is_none() {
        return Err(Usage(format!("no matrix {matrix} in the results store")).into());
    }
    let runs: Vec<RunSummary> = store
        .runs(&RunFilter {
            matrix_id: Some(matrix.to_string()),
            ..Default::default()
        })?
        .into_iter()
        .filter(|r| !r.interrupted)
        .collect();
    let axes: Vec<String> = runs
        .first()
        .and_then(|r| r.matrix.as_ref())
        .map(|m| m.axes.iter().map(|(k, _)| k.clone()).collect())
        .unwrap_or_default();
    let wanted = split_cell(cell, &axes).map_err(|e| Usage(format!("{matrix}:{cell}: {e}")))?;
    let chosen: Vec<RunSummary> = runs
        .into_iter()
        .filter(|r| {
            r.matrix
                .as_ref()
                .is_some_and(|m| wanted.iter().all(|w| m.axes.contains(w)))
        })
        .collect();
    let mut cells: Vec<String> = chosen
        .iter()
        .filter_map(|r| r.matrix.as_ref().map(|m| m.cell_label()))
        .collect();
    cells.sort();
    cells.dedup();
    match cells.len() {
        0 => Err(Usage(format!(
            "{matrix}:{cell}: no complete run of the matrix has these values"
        ))
        .into()),
        1 => Ok(chosen.into_iter().map(|r| Picked::Stored(Box::new(r))).collect()),
        _ => Err(Usage(format!(
            "{matrix}:{cell} matches {} cells ({}): name the other axes too, so that one configuration is compared",
            cells.len(),
            cells.join("; ")
        ))
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_split_before_axis_names_only() {
        let axes = vec!["device".to_string(), "coordination".to_string()];
        assert_eq!(
            split_cell("device=flush=5ms,write=80M,coordination=wal", &axes).unwrap(),
            vec![
                ("device".to_string(), "flush=5ms,write=80M".to_string()),
                ("coordination".to_string(), "wal".to_string())
            ]
        );
        assert!(split_cell("sync=fsync", &axes).unwrap_err().contains("no axis 'sync'"));
        assert!(split_cell("device", &axes).is_err());
    }

    #[test]
    fn matrix_ids_look_like_m_and_a_number() {
        assert!(is_matrix_id("m3") && is_matrix_id("m12"));
        assert!(!is_matrix_id("m") && !is_matrix_id("3") && !is_matrix_id("./m3"));
    }
}
