//! A stored run as the rest of fsynclab names and reads it: its number ([`RunId`]), its place
//! in a matrix ([`MatrixPlace`]), a matrix as planned ([`MatrixRecord`]), which runs a
//! listing asks for ([`RunFilter`]), a run as listed ([`RunSummary`]) and as read back
//! whole ([`StoredRun`]).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};

use super::SampleColumns;
use crate::result::RunResult;

/// A run's number in its store, as `fsynclab runs` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunId(pub i64);

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for RunId {
    type Err = String;
    fn from_str(s: &str) -> Result<RunId, String> {
        s.parse::<i64>()
            .ok()
            .filter(|&n| n > 0)
            .map(RunId)
            .ok_or_else(|| format!("'{s}' is not a run id: expected a number as `fsynclab runs` lists it"))
    }
}

/// Where a run sits in a matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatrixPlace {
    pub matrix_id: String,
    /// The cell's (axis, value) pairs in the matrix's axis order, e.g.
    /// `[("device", "ram"), ("coordination", "none")]`. Stored as a JSON array of pairs, since
    /// values such as mount options hold `=` and `,`.
    pub axes: Vec<(String, String)>,
    /// 0-based repetition of the cell.
    pub repetition: u32,
}

impl MatrixPlace {
    /// `device=ram coordination=none`, for a listing.
    pub fn cell_label(&self) -> String {
        self.axes
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The stored form of a cell's axes (compact JSON pairs) and back; unreadable text gives no
/// axes rather than failing a listing.
pub(crate) fn axes_to_text(axes: &[(String, String)]) -> String {
    serde_json::to_string(axes).unwrap_or_else(|_| "[]".into())
}

pub(crate) fn axes_from_text(text: Option<String>) -> Vec<(String, String)> {
    text.and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default()
}

/// A matrix as planned: its id, scenario, and the plan (axes, repetitions, order) as JSON.
#[derive(Clone, Debug, PartialEq)]
pub struct MatrixRecord {
    pub id: String,
    pub scenario: String,
    /// RFC 3339 UTC.
    pub created_at: String,
    pub plan: Value,
}

/// Which runs [`Store::runs`] lists; every condition given must hold.
#[derive(Clone, Debug, Default)]
pub struct RunFilter {
    /// These runs only (with `ranges`; neither: any). Any number: the store queries them in
    /// groups that stay under SQLite's limit of variables.
    pub ids: Vec<RunId>,
    /// And the runs of these inclusive ranges of ids, never expanded (`1-999999` is one
    /// condition, not a million).
    pub ranges: Vec<(RunId, RunId)>,
    pub scenario: Option<String>,
    /// Runs started at or after this RFC 3339 time or date prefix (`2026-11-22`).
    pub since: Option<String>,
    pub matrix_id: Option<String>,
    /// Runs made on this host (its name as the run recorded it: the scheduler's node name,
    /// else the hostname).
    pub host: Option<String>,
    /// Parameters with exactly these values.
    pub params: Vec<(String, String)>,
    /// Text found in the parameters or the environment (ASCII case-insensitive).
    pub contains: Vec<String>,
    /// The newest `limit` runs only.
    pub limit: Option<usize>,
}

/// A stored run as `fsynclab runs` lists it: the store's columns, and the result without
/// its samples.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSummary {
    pub id: RunId,
    pub uid: String,
    pub scenario: String,
    pub started_at: String,
    pub recorded_at: String,
    pub duration_s: f64,
    pub interrupted: bool,
    pub sample_count: u64,
    pub params: BTreeMap<String, String>,
    pub matrix: Option<MatrixPlace>,
    /// The host that made the run (none for runs recorded before hosts were).
    pub host: Option<String>,
    /// The run's result without its samples (its head), or why this version cannot read it
    /// (a later version's kind of run): the columns above still list such a run.
    pub(crate) head: Result<RunResult, String>,
}

impl RunSummary {
    /// The run-level figures of the run, for `fsynclab compare`.
    pub fn figures(&self) -> Result<crate::compare::RunFigures, crate::compare::figures::FigureError> {
        let run = self.id.to_string();
        match &self.head {
            Ok(head) => crate::compare::run_figures(&run, head),
            Err(reason) => Err(crate::compare::figures::FigureError::Unreadable {
                run,
                reason: reason.clone(),
            }),
        }
    }
}

/// A run read back whole.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredRun {
    pub id: RunId,
    pub uid: String,
    pub recorded_at: String,
    pub matrix: Option<MatrixPlace>,
    /// The host that made the run (none for runs recorded before hosts were).
    pub host: Option<String>,
    /// The result's JSON object without its samples, as stored (`export` writes it out).
    pub result: Map<String, Value>,
    pub samples: SampleColumns,
}

impl StoredRun {
    /// The result without its samples, typed, or why this version cannot read it.
    pub(crate) fn head(&self) -> Result<RunResult, String> {
        head_of(self.result.clone())
    }
}

/// A stored result's JSON object as the result it is (`samples` empty).
pub(super) fn head_of(object: Map<String, Value>) -> Result<RunResult, String> {
    RunResult::from_object(object).map_err(|e| e.to_string())
}
