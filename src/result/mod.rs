//! The result of one run: what `--format json` prints, `--output` writes and `fsynclab show`
//! reads back. Its shape is versioned (`schema_version`) and described by
//! `schema/result-v1.schema.json`.
//!
//! A result carries the scenario's typed [`Details`] (the rows, counts and figures its tables,
//! findings, headline and seed lines are computed from) beside their rendered forms
//! (`tables` of [`Cell`]s, [`Finding`]s), so that a saved result can be printed again in any
//! format.
//!
//! What is read back is a [`RunResult`] too, typed as it was written: whole for `show`, or
//! as its *head*, without its per-call samples (`samples` empty), for what works on figures
//! and facts — `compare`, the `runs` listing and selection, the matrix table, the HTML
//! report ([`RunResult::load_head`] for a file, `store::RunSummary::head` for a stored
//! run). Keys this version does not know (a later version's) are kept in
//! [`RunResult::extra`] and written out again.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::path::Path;
use std::str::FromStr;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::environment::{DeviceFinding, Fingerprint, SysctlsChanged};
use crate::measure::{OpKind, OpStats, Sample};
use crate::role::writer::BackgroundSummary;
pub(crate) use crate::scenario::table::{Cell, Table};
use crate::scenario::{Details, Measured};

/// Optional keys may be added within a version (`details` was); a key's meaning never
/// changes without a new version. Results without `details` (written by older versions)
/// still load, but cannot be printed again in the seed format.
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// One conclusion of a run: a line for a reader. Results hold findings as those lines
/// (`"findings": ["..."]`); read back, a line of a kind this version writes is that kind
/// again, and any other line is kept as its text.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Finding {
    /// What the scenario concludes from its figures, rendered from its details. Read back,
    /// any line that is none of the kinds below (a later version's too).
    Conclusion(String),
    /// About the device: the emulated disk's daemon, the cache flushes counted.
    Device(DeviceFinding),
    /// Writeback sysctls another process changed during the run.
    SysctlsChanged(SysctlsChanged),
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::Conclusion(line) => f.write_str(line),
            Finding::Device(d) => d.fmt(f),
            Finding::SysctlsChanged(s) => s.fmt(f),
        }
    }
}

impl FromStr for Finding {
    type Err = std::convert::Infallible;

    /// The finding a line prints; a line of no kind this version knows is a conclusion.
    fn from_str(line: &str) -> Result<Finding, Self::Err> {
        Ok(if let Ok(d) = line.parse() {
            Finding::Device(d)
        } else if let Ok(s) = line.parse() {
            Finding::SysctlsChanged(s)
        } else {
            Finding::Conclusion(line.to_string())
        })
    }
}

impl Serialize for Finding {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Finding {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Finding, D::Error> {
        let line = String::deserialize(de)?;
        match line.parse() {
            Ok(finding) => Ok(finding),
            Err(never) => match never {},
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunResult {
    pub(crate) schema_version: u32,
    /// The scenario, or `load-random`, `load-stream`, `probe`.
    pub(crate) scenario: String,
    /// Wall-clock start, RFC 3339 UTC.
    pub(crate) started_at: String,
    /// Length of the measured part of the run.
    pub(crate) duration_s: f64,
    /// True when a signal ended the run early.
    pub(crate) interrupted: bool,
    /// Every parameter with its effective value, as `--set` takes it.
    pub(crate) params: BTreeMap<String, String>,
    pub(crate) environment: Fingerprint,
    /// Statistics per foreground operation kind (`write`, `fsync`, ...).
    pub(crate) ops: BTreeMap<OpKind, OpStats>,
    /// Every foreground call, in order. A file may leave them out (a suite's results
    /// directory, when they are kept in the results store: see `stored`).
    #[serde(default)]
    pub(crate) samples: Vec<Sample>,
    /// The background writer, when there was one.
    pub(crate) background: Option<BackgroundSummary>,
    /// Scenario-specific tables, rendered from `details`.
    #[serde(default)]
    pub(crate) tables: Vec<Table>,
    /// Conclusions computed from this run's figures, rendered from `details` and the device.
    #[serde(default)]
    pub(crate) findings: Vec<Finding>,
    /// The scenario's typed figures (absent in results of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) details: Option<Details>,
    /// Figures of the run as a whole that its ops cannot give, by the name `fsynclab
    /// compare` shows (`commit.tps`: fsync-tps's best transactions per second), rendered
    /// from `details`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) figures: BTreeMap<String, f64>,
    /// The machine's writeback state sampled during the run (absent in older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) timeline: Option<crate::explain::TimelineRecord>,
    /// The slow calls split into causes (`run --explain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) explain: Option<crate::explain::explanation::Explanation>,
    /// Where the run is kept in the results store, when it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stored: Option<StoredAt>,
    /// Keys this version does not know (a later version's), as they were read: printed and
    /// stored again with the rest, never dropped.
    #[serde(flatten)]
    pub(crate) extra: serde_json::Map<String, serde_json::Value>,
}

/// A run's place in a results store, as a result file names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredAt {
    /// The run id `fsynclab runs` lists.
    pub(crate) run: i64,
    /// The run's unique id, which tells it from a run of the same number in another store.
    pub(crate) uid: String,
    /// The store file.
    pub(crate) store: String,
}

impl RunResult {
    /// Failed foreground calls in all.
    pub(crate) fn errors(&self) -> u64 {
        self.ops.values().map(|o| o.errors).sum()
    }

    /// Failed calls of the foreground and the background writer.
    pub(crate) fn all_errors(&self) -> u64 {
        self.errors() + self.background.as_ref().map_or(0, |b| b.errors)
    }

    /// Foreground calls that make data durable ([`OpKind::is_sync`]).
    pub(crate) fn sync_calls(&self) -> u64 {
        self.ops
            .iter()
            .filter(|(op, _)| op.is_sync())
            .map(|(_, s)| s.count)
            .sum()
    }

    /// Renders `tables` and `findings` from the details and the environment.
    pub(crate) fn render_views(&mut self) {
        let Some(details) = &self.details else { return };
        let views = details.views();
        self.tables = views.tables();
        self.findings = views.findings().into_iter().map(Finding::Conclusion).collect();
        self.figures = views.figures();
        let device = self.environment.device_findings(self.sync_calls());
        self.findings.extend(device.into_iter().map(Finding::Device));
    }

    /// What the run measured, as a scenario's views read it.
    pub(crate) fn measured(&self) -> Measured<'_> {
        Measured {
            environment: &self.environment,
            ops: &self.ops,
            samples: &self.samples,
            background: self.background.as_ref(),
        }
    }

    /// The one line the suite's summary shows for this run.
    pub(crate) fn headline(&self) -> String {
        match &self.details {
            Some(d) => d.views().headline(&self.measured()),
            None => crate::scenario::default_headline(&self.measured()),
        }
    }

    /// Reads a result file written by `--output` or a suite.
    pub(crate) fn load(path: &Path) -> Result<RunResult> {
        let not_a_result = |e| crate::error::Usage(format!("{}: not an fsynclab result ({e})", path.display()));
        match serde_json::from_reader(std::io::BufReader::new(open(path)?)) {
            Ok(result) => Ok(result),
            // A later version's result may hold parts this one cannot read: read again, they
            // are kept aside (see `from_object`). Anything else is the first error, which
            // says where in the file it is.
            Err(e) => read_parts(open(path)?, true)
                .ok()
                .and_then(|(head, samples)| {
                    let mut result = RunResult::from_object(head).ok()?;
                    result.samples = samples;
                    Some(result)
                })
                .ok_or_else(|| not_a_result(e).into()),
        }
    }

    /// Reads the head of a result file: the result without its samples, which are skipped
    /// as the file is read, never built (a comparison of long runs needs only their
    /// figures).
    pub(crate) fn load_head(path: &Path) -> Result<RunResult> {
        let not_a_result = |e| crate::error::Usage(format!("{}: not an fsynclab result ({e})", path.display()));
        let (head, _) = read_parts(open(path)?, false).map_err(not_a_result)?;
        Ok(RunResult::from_object(head).map_err(not_a_result)?)
    }

    /// The result a JSON object holds (its samples too, if it has them). The parts that a
    /// later version may write in a kind this one does not know — a new scenario's
    /// `details`, a `timeline` or `explain` of a new shape — are kept in `extra` as they
    /// were when this version cannot read them, so that such a run is still listed,
    /// compared and printed (and printed with them).
    pub(crate) fn from_object(
        mut object: serde_json::Map<String, serde_json::Value>,
    ) -> Result<RunResult, serde_json::Error> {
        use serde_json::Value;
        fn unreadable<T: serde::de::DeserializeOwned>(v: &Value) -> bool {
            !v.is_null() && T::deserialize(v).is_err()
        }
        let mut unread = serde_json::Map::new();
        for (key, cannot_read) in [
            ("details", unreadable::<Details> as fn(&Value) -> bool),
            ("timeline", unreadable::<crate::explain::TimelineRecord>),
            ("explain", unreadable::<crate::explain::explanation::Explanation>),
        ] {
            if let Some(v) = object.remove(key) {
                match cannot_read(&v) {
                    true => unread.insert(key.to_string(), v),
                    false => object.insert(key.to_string(), v),
                };
            }
        }
        let mut result: RunResult = serde_json::from_value(Value::Object(object))?;
        result.extra.extend(unread);
        Ok(result)
    }
}

fn open(path: &Path) -> Result<std::fs::File, crate::error::Usage> {
    std::fs::File::open(path).map_err(|e| crate::error::Usage(format!("{}: cannot open it ({e})", path.display())))
}

/// A result file as its JSON object without the samples, and its samples (typed as they are
/// read, or skipped and never built when `keep_samples` is false).
fn read_parts(
    file: std::fs::File,
    keep_samples: bool,
) -> Result<(serde_json::Map<String, serde_json::Value>, Vec<Sample>), serde_json::Error> {
    use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
    type Parts = (serde_json::Map<String, serde_json::Value>, Vec<Sample>);
    struct Split {
        keep_samples: bool,
    }
    impl<'de> Visitor<'de> for Split {
        type Value = Parts;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Parts, A::Error> {
            let (mut head, mut samples) = (serde_json::Map::new(), Vec::new());
            while let Some(key) = map.next_key::<String>()? {
                match (key.as_str(), self.keep_samples) {
                    ("samples", true) => samples = map.next_value()?,
                    ("samples", false) => drop(map.next_value::<IgnoredAny>()?),
                    _ => drop(head.insert(key, map.next_value()?)),
                }
            }
            Ok((head, samples))
        }
    }
    impl<'de> DeserializeSeed<'de> for Split {
        type Value = Parts;
        fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<Parts, D::Error> {
            de.deserialize_map(self)
        }
    }
    let mut reader = serde_json::Deserializer::from_reader(std::io::BufReader::new(file));
    let parts = Split { keep_samples }.deserialize(&mut reader)?;
    reader.end()?;
    Ok(parts)
}

/// Writes `value` as pretty JSON to `path` atomically (see [`write_atomically`]).
pub(crate) fn write_json_atomically<T: Serialize>(value: &T, path: &Path) -> Result<()> {
    write_atomically(path, |out| {
        serde_json::to_writer_pretty(&mut *out, value)?;
        Ok(out.write_all(b"\n")?)
    })
}

/// Writes `value` as compact JSON (one line) to `path` atomically: a third of the pretty
/// form's bytes for a result's samples.
pub(crate) fn write_compact_json_atomically<T: Serialize>(value: &T, path: &Path) -> Result<()> {
    write_atomically(path, |out| {
        serde_json::to_writer(&mut *out, value)?;
        Ok(out.write_all(b"\n")?)
    })
}

/// Writes a file the way [`crate::named_file`] says: a regular file or a new name atomically
/// (a temporary file beside it, fsynced, renamed over it, the directory fsynced, so that a
/// reader sees the old file or the whole new one), a device or FIFO written into, never
/// replaced. The writer is buffered: serde issues one small write per token, and a 7 MB
/// result once took 3 million write(2) calls (issue 8).
pub(crate) fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> Result<()>,
) -> Result<()> {
    crate::named_file::write(path, None, write)
}

/// Now as RFC 3339 UTC to the second (`2026-11-22T03:45:55Z`).
pub(crate) fn now_rfc3339() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) mod tests_support {
    use super::{RunResult, SCHEMA_VERSION};

    /// A result with nothing in it, for tests of headlines and exporters.
    pub(crate) fn empty_result() -> RunResult {
        RunResult {
            schema_version: SCHEMA_VERSION,
            scenario: "test".into(),
            started_at: "2026-11-22T00:00:00Z".into(),
            duration_s: 0.0,
            interrupted: false,
            params: Default::default(),
            environment: Default::default(),
            ops: Default::default(),
            samples: Vec::new(),
            background: None,
            tables: Vec::new(),
            findings: Vec::new(),
            details: None,
            figures: Default::default(),
            timeline: None,
            explain: None,
            stored: None,
            extra: Default::default(),
        }
    }
}
