//! A finished trace: typed events on CLOCK_MONOTONIC, with what is needed to read them,
//! and the saved text form the fixtures use.

#[cfg(test)]
use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

#[cfg(test)]
use super::super::events::parse_trace;
use super::super::events::Event;
use super::{Task, TracedFs, Watch};

/// A finished trace: typed events on CLOCK_MONOTONIC plus what is needed to read them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Trace {
    /// CLOCK_MONOTONIC (ns) at the run clock's zero: event `ts_ns - origin_ns` is run time.
    pub(crate) origin_ns: u64,
    /// When tracing started and stopped, CLOCK_MONOTONIC ns.
    pub(crate) started_ns: u64,
    pub(crate) stopped_ns: u64,
    /// When tracing was stopped early because the trace reached its budget, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cut_at_ns: Option<u64>,
    /// Bytes of trace text read.
    #[serde(default)]
    pub(crate) text_bytes: u64,
    pub(crate) fs: TracedFs,
    /// The threads watched (at the end: including those added during the run).
    pub(crate) watched: Watch,
    /// The filesystem's journal or transaction threads, traced like the watched ones.
    pub(crate) journal_threads: Vec<Task>,
    /// Events this kernel does not offer (a filesystem module not loaded, an old kernel).
    pub(crate) missing_events: Vec<String>,
    /// Events the kernel dropped because the buffer was full.
    pub(crate) lost_events: u64,
    /// Trace lines that could not be read.
    pub(crate) unparsed_lines: u64,
    /// CPU time of the thread that read the trace during the run, ns.
    pub(crate) reader_cpu_ns: u64,
    pub(crate) events: Vec<Event>,
    /// The raw text, when [`TraceConfig::keep_text`] asked for it.
    #[serde(skip)]
    pub(crate) text: Option<String>,
}

/// The first line of a saved trace: `# fsynclab-trace ` and the metadata as JSON.
const SAVED_HEADER: &str = "# fsynclab-trace ";

impl Trace {
    /// The trace as text that [`Trace::from_saved_text`] reads back: a comment line with the
    /// metadata, then the raw trace (needs [`TraceConfig::keep_text`]).
    pub(crate) fn to_saved_text(&self) -> Option<String> {
        let text = self.text.as_ref()?;
        let meta = Trace {
            events: Vec::new(),
            text: None,
            ..self.clone()
        };
        Some(format!("{SAVED_HEADER}{}\n{text}", serde_json::to_string(&meta).ok()?))
    }

    /// Reads a trace saved by [`Trace::to_saved_text`] (the fixtures in tests/fixtures/).
    #[cfg(test)]
    pub(crate) fn from_saved_text(saved: &str) -> Result<Trace> {
        let (first, text) = saved.split_once('\n').unwrap_or((saved, ""));
        let meta = first
            .strip_prefix(SAVED_HEADER)
            .context("not a saved fsynclab trace: the first line must start with `# fsynclab-trace `")?;
        let mut trace: Trace = serde_json::from_str(meta).context("saved trace: bad metadata line")?;
        let parsed = parse_trace(text);
        trace.events = parsed.events;
        trace.lost_events += parsed.lost_events;
        trace.unparsed_lines += parsed.unparsed_lines;
        trace.text = Some(text.to_string());
        Ok(trace)
    }

    /// The events between two CLOCK_MONOTONIC times (inclusive), by binary search: the events
    /// are in time order.
    pub(crate) fn events_between(&self, from_ns: u64, to_ns: u64) -> &[Event] {
        let lo = self.events.partition_point(|e| e.ts_ns < from_ns);
        let hi = self.events.partition_point(|e| e.ts_ns <= to_ns);
        &self.events[lo..hi.max(lo)]
    }
}
