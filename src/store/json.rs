//! A stored run as its result JSON, streamed: the samples are written one object at a time
//! from their columns, never built as a million JSON values first.

use std::io::Write;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::Value;

use super::{SampleColumns, SampleRef, StoredRun};

/// The result keys in the order `RunResult` serialises them; `samples` is written in its
/// place, and keys the store does not know come after.
pub(crate) const RESULT_ORDER: [&str; 12] = [
    "schema_version",
    "scenario",
    "started_at",
    "duration_s",
    "interrupted",
    "params",
    "environment",
    "ops",
    "samples",
    "background",
    "tables",
    "findings",
];

/// Serialises [`SampleColumns`] as the result's `samples` array, one object a call, without
/// building them in memory first.
struct SamplesJson<'a>(&'a SampleColumns);

impl Serialize for SamplesJson<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut seq = ser.serialize_seq(Some(self.0.len()))?;
        for s in self.0.iter() {
            seq.serialize_element(&OneSample(s))?;
        }
        seq.end()
    }
}

struct OneSample<'a>(SampleRef<'a>);

impl Serialize for OneSample<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let s = &self.0;
        let entries = 4 + usize::from(s.error.is_some()) + usize::from(s.process.is_some());
        let mut m = ser.serialize_map(Some(entries))?;
        m.serialize_entry("t_ns", &s.t_ns)?;
        m.serialize_entry("op", s.op)?;
        m.serialize_entry("latency_ns", &s.latency_ns)?;
        m.serialize_entry("bytes", &s.bytes)?;
        if let Some(e) = s.error {
            m.serialize_entry("error", e)?;
        }
        if let Some(p) = s.process {
            m.serialize_entry("process", p)?;
        }
        m.end()
    }
}

/// A stored run as its result JSON, streamed.
struct ResultJson<'a>(&'a StoredRun);

impl Serialize for ResultJson<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let r = &self.0.result;
        let mut m = ser.serialize_map(None)?;
        for key in RESULT_ORDER {
            if key == "samples" {
                m.serialize_entry(key, &SamplesJson(&self.0.samples))?;
            } else if let Some(v) = r.get(key) {
                m.serialize_entry(key, v)?;
            }
        }
        for (k, v) in r.iter().filter(|(k, _)| !RESULT_ORDER.contains(&k.as_str())) {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl StoredRun {
    /// Writes the run as its result JSON (schema-valid, samples included) to `out`,
    /// streaming the samples; `out` should be buffered.
    pub fn write_result_json<W: Write>(&self, out: W, pretty: bool) -> serde_json::Result<()> {
        if pretty {
            serde_json::to_writer_pretty(out, &ResultJson(self))
        } else {
            serde_json::to_writer(out, &ResultJson(self))
        }
    }

    /// The run as one JSON value with its samples: fine for a few thousand samples; for a
    /// long run prefer [`StoredRun::write_result_json`].
    pub fn result_value(&self) -> Value {
        serde_json::to_value(ResultJson(self)).unwrap_or(Value::Null)
    }
}
