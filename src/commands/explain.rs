//! `fsynclab explain RUN|FILE`: the slow calls of a run, each split into its causes.

use std::path::Path;

use anyhow::Result;

use super::select::run_id;
use crate::recording;
use crate::report::print;
use crate::result::RunResult;

/// `fsynclab explain RUN|FILE`: the slow calls of a stored run or a saved result, each with
/// every part of its time, the timeline in one line, and the failed calls on it.
pub(crate) fn explain(what: &Path, store: Option<&Path>) -> Result<i32> {
    let result = if what.is_file() {
        RunResult::load(what)?
    } else {
        let id = run_id(&what.to_string_lossy(), "explain")?;
        let (store, _) = recording::open_for_reading(store)?;
        recording::result_of(recording::read_run(&store, id)?)?
    };
    let mut text = format!("{}  started {}\n", result.scenario, result.started_at);
    match &result.explain {
        Some(e) => text.push_str(&crate::explain::text::full(e)),
        None => text.push_str("no calls explained: the run was not traced (rerun as root with --explain)\n"),
    }
    let failures = crate::report::failures::lines(&result);
    if result.timeline.is_some() || !failures.is_empty() {
        text.push('\n');
    }
    if let Some(t) = &result.timeline {
        text.push_str(&crate::explain::text::timeline_line(t));
    }
    for line in failures {
        text.push_str(&line);
        text.push('\n');
    }
    print(&text)
}
