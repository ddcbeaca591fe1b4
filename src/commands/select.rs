//! What names a set of runs on the command line, for `compare` and `report`:
//!
//! - `42`: a stored run; `3-7`: stored runs 3 to 7; `3,5,9-11`: a list of them;
//! - `m3:device=ram,coordination=none`: the runs of one cell of stored matrix m3 (the axes
//!   given must pick out exactly one cell; values may hold `,` and `=`, since the split is
//!   made only before a name of the matrix's axes); `host=NAME` picks the runs one host
//!   made, whether or not host is an axis of the matrix;
//! - `a.json,b.json`: result files (`--output`, a suite's results directory).
//!
//! Interrupted runs are left out of a matrix cell: a run cut short is not a repetition.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::compare::{run_figures, RunFigures};
use crate::error::Usage;
use crate::matrix::is_matrix_id;
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
            Picked::Stored(r) => Ok(super::runs::testbed(r.head.as_ref().ok().map(|h| &h.environment))),
            Picked::File(p) => Ok(super::runs::testbed(Some(&RunResult::load_head(p)?.environment))),
        }
    }

    /// The kernel the run was made on, as `runs` shows it: `6.1.0-56-amd64 vm/tcg` for a
    /// run in a guest.
    pub(crate) fn kernel(&self) -> Result<String> {
        match self {
            Picked::Stored(r) => Ok(super::runs::kernel(r.head.as_ref().ok().map(|h| &h.environment))),
            Picked::File(p) => Ok(super::runs::kernel(Some(&RunResult::load_head(p)?.environment))),
        }
    }

    /// The scenario the run was made by.
    pub(crate) fn scenario(&self) -> Result<String> {
        match self {
            Picked::Stored(r) => Ok(r.scenario.clone()),
            Picked::File(p) => Ok(RunResult::load_head(p)?.scenario),
        }
    }

    /// What makes the run this run, whether it is named by id or as a file (its own, or a
    /// copy, or an export of a stored run): its scenario, start, length and call figures.
    fn identity(&self) -> Result<String> {
        let head;
        let (scenario, started, duration, ops) = match self {
            Picked::Stored(r) => {
                let ops = match &r.head {
                    Ok(h) => serde_json::to_value(&h.ops)?,
                    Err(_) => serde_json::Value::Null,
                };
                (r.scenario.as_str(), r.started_at.as_str(), r.duration_s, ops)
            }
            Picked::File(p) => {
                head = RunResult::load_head(p)?;
                (
                    head.scenario.as_str(),
                    head.started_at.as_str(),
                    head.duration_s,
                    serde_json::to_value(&head.ops)?,
                )
            }
        };
        Ok(serde_json::json!([scenario, started, duration, ops]).to_string())
    }

    /// The host that made the run, when it was recorded.
    pub(crate) fn host(&self) -> Result<Option<String>> {
        match self {
            Picked::Stored(r) => Ok(r.host.clone()),
            Picked::File(p) => Ok(RunResult::load_head(p)?.environment.host.map(|h| h.name)),
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

/// `set` with each run once, however often it was named (a file given five times, a file
/// and its copy, a stored run and its export): issue 19, `compare` counted one file given
/// five times as five runs and found a significant difference. Also the number left out.
pub(crate) fn fold(set: Vec<Picked>) -> Result<(Vec<Picked>, usize)> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    let mut folded = 0;
    for p in set {
        if seen.insert(p.identity()?) {
            out.push(p);
        } else {
            folded += 1;
        }
    }
    Ok((out, folded))
}

/// `set` without the runs another host than `host` made (all of it without `host`); refused
/// when nothing is left, naming the set as `what`.
pub(crate) fn only_host(set: Vec<Picked>, host: Option<&str>, what: &str) -> Result<Vec<Picked>> {
    let Some(host) = host else { return Ok(set) };
    let mut kept = Vec::new();
    for p in set {
        if p.host()?.as_deref() == Some(host) {
            kept.push(p);
        }
    }
    if kept.is_empty() {
        return Err(Usage(format!(
            "{what}: no run of host {host} (`fsynclab runs` shows the hosts of the stored runs)"
        ))
        .into());
    }
    Ok(kept)
}

/// The runs of `a` that `b` also has, by their labels in `a`.
pub(crate) fn shared(a: &[Picked], b: &[Picked]) -> Result<Vec<String>> {
    let theirs: std::collections::HashSet<String> = b.iter().map(Picked::identity).collect::<Result<_>>()?;
    let mut out = Vec::new();
    for p in a {
        if theirs.contains(&p.identity()?) {
            out.push(p.label());
        }
    }
    Ok(out)
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
    let mut ranges = Vec::new();
    let mut files = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if Path::new(item).is_file() {
            files.push(Picked::File(PathBuf::from(item)));
        } else if let Some((lo, hi)) = item.split_once('-') {
            let (lo, hi) = (id(lo, text)?, id(hi, text)?);
            if lo > hi {
                return Err(Usage(format!("'{item}': a range goes from the lower id to the higher")).into());
            }
            // Kept as a range: `1-999999` is one condition, not a million ids (issue 19).
            ranges.push((lo, hi));
        } else {
            ids.push(id(item, text)?);
        }
    }
    let mut out = files;
    if !ids.is_empty() || !ranges.is_empty() {
        let found = store()?.runs(&RunFilter {
            ids: ids.clone(),
            ranges: ranges.clone(),
            ..Default::default()
        })?;
        if let Some(missing) = first_missing(&ids, &ranges, &found) {
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

/// The first id named (singly or in a range) that `found` lacks, found without expanding a
/// range: a range is whole when the runs found in it are as many as its ids.
fn first_missing(ids: &[RunId], ranges: &[(RunId, RunId)], found: &[RunSummary]) -> Option<RunId> {
    let mut have: Vec<i64> = found.iter().map(|r| r.id.0).collect();
    have.sort_unstable();
    let has = |id: i64| have.binary_search(&id).is_ok();
    if let Some(id) = ids.iter().find(|i| !has(i.0)) {
        return Some(*id);
    }
    for &(lo, hi) in ranges {
        let start = have.partition_point(|&i| i < lo.0);
        let end = have.partition_point(|&i| i <= hi.0);
        let within = &have[start..end];
        if (within.len() as u64) < hi.0.abs_diff(lo.0) + 1 {
            // The first gap: where the i-th id found is not lo + i.
            let gap = within.iter().zip(lo.0..).find(|(have, want)| **have != *want);
            return Some(RunId(match gap {
                Some((_, want)) => want,
                None => lo.0 + within.len() as i64,
            }));
        }
    }
    None
}

fn id(text: &str, whole: &str) -> Result<RunId, Usage> {
    text.trim().parse::<RunId>().map_err(|_| {
        Usage(format!(
            "'{whole}': '{text}' is neither a file nor a run id; give ids (42), ranges (3-7), lists (3,5,9), result files, or a matrix cell (m3:device=ram)"
        ))
    })
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
    let mut axes: Vec<String> = runs
        .first()
        .and_then(|r| r.matrix.as_ref())
        .map(|m| m.axes.iter().map(|(k, _)| k.clone()).collect())
        .unwrap_or_default();
    // Host as a filter where it is not an axis: the runs one host made.
    let host_axis = crate::matrix::plan::HOST_AXIS;
    let host_is_axis = axes.iter().any(|a| a == host_axis);
    if !host_is_axis {
        axes.push(host_axis.to_string());
    }
    let wanted = split_cell(cell, &axes).map_err(|e| Usage(format!("{matrix}:{cell}: {e}")))?;
    let chosen: Vec<RunSummary> = runs
        .into_iter()
        .filter(|r| {
            r.matrix.as_ref().is_some_and(|m| {
                wanted.iter().all(|(k, v)| match k == host_axis && !host_is_axis {
                    true => r.host.as_deref() == Some(v.as_str()),
                    false => m.axes.contains(&(k.clone(), v.clone())),
                })
            })
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

/// A run id typed for `command`, or a one-line error saying what is expected.
pub(crate) fn run_id(text: &str, command: &str) -> Result<RunId, Usage> {
    text.parse::<RunId>().map_err(|_| {
        Usage(format!(
            "{command} {text}: neither a file nor a run id; `fsynclab runs` lists the stored runs"
        ))
    })
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

    /// Issue 19, item 10: a range is checked without expanding it.
    #[test]
    /// Issue 19.
    fn the_first_missing_id_of_a_range_is_found_without_expanding_it() {
        let run = |id: i64| RunSummary {
            id: RunId(id),
            uid: String::new(),
            scenario: String::new(),
            started_at: String::new(),
            recorded_at: String::new(),
            duration_s: 0.0,
            interrupted: false,
            sample_count: 0,
            params: Default::default(),
            matrix: None,
            host: None,
            head: Err("not read".into()),
        };
        let found: Vec<RunSummary> = [1, 2, 3, 5].into_iter().map(run).collect();
        assert_eq!(first_missing(&[RunId(2)], &[(RunId(1), RunId(3))], &found), None);
        assert_eq!(first_missing(&[], &[(RunId(1), RunId(5))], &found), Some(RunId(4)));
        assert_eq!(first_missing(&[], &[(RunId(2), RunId(7))], &found), Some(RunId(4)));
        assert_eq!(first_missing(&[], &[(RunId(5), RunId(6))], &found), Some(RunId(6)));
        assert_eq!(
            first_missing(&[], &[(RunId(1), RunId(i64::MAX))], &found),
            Some(RunId(4))
        );
        assert_eq!(first_missing(&[RunId(9)], &[], &found), Some(RunId(9)));
    }

    #[test]
    fn matrix_ids_look_like_m_and_a_number() {
        assert!(is_matrix_id("m3") && is_matrix_id("m12"));
        assert!(!is_matrix_id("m") && !is_matrix_id("3") && !is_matrix_id("./m3"));
        assert!(is_matrix_id("reproduce3-000") && is_matrix_id("reproduce12-003-bdi"));
        assert!(!is_matrix_id("reproduce3") && !is_matrix_id("reproduce-000") && !is_matrix_id("reproduce3-"));
    }
}
