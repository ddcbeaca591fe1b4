//! Following a matrix's job arrays to their end: each run as it is stored, a line when
//! Slurm stops answering; then, for each submitted run not stored, the task, what Slurm says
//! of it and the end of its log.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::{Array, Request};
use crate::commands::matrix::run::slot_label;
use crate::matrix::plan::Plan;
use crate::matrix::slurm_client::{output, slurm};
use crate::recording;
use crate::run::Progress;
use crate::store::{RunFilter, RunId, Store};

/// Follows the arrays until none of their tasks waits or runs; `Some(signal)` when a signal
/// stopped the following.
pub(super) fn follow(
    plan: &Plan,
    matrix_id: &str,
    arrays: &[Array],
    store: &Store,
    quiet: bool,
) -> Result<Option<i32>> {
    let stop = crate::signals::watch()?;
    let total = plan.order().len();
    let stored_runs = |store: &Store| -> Result<Vec<crate::store::RunSummary>> {
        Ok(store
            .runs(&RunFilter {
                matrix_id: Some(matrix_id.to_string()),
                ..Default::default()
            })?
            .into_iter()
            .filter(|r| !r.interrupted)
            .collect())
    };
    let mut seen: std::collections::HashSet<RunId> = stored_runs(store)?.iter().map(|r| r.id).collect();
    let mut progress = Progress::new(total, seen.len().min(total), quiet);
    let jobs: Vec<&str> = arrays.iter().map(|a| a.job.as_str()).collect();
    let mut asked_at = Instant::now();
    let mut last_answer = Instant::now();
    loop {
        // Runs stored since the last look, in the order they were made.
        for r in stored_runs(store)? {
            if seen.insert(r.id) {
                let place = r.matrix.clone().unwrap_or_else(|| crate::store::MatrixPlace {
                    matrix_id: matrix_id.to_string(),
                    axes: Vec::new(),
                    repetition: 0,
                });
                let host = match (
                    &r.host,
                    place.axes.iter().any(|(k, _)| k == crate::matrix::plan::HOST_AXIS),
                ) {
                    (Some(h), false) => format!(" on {h}"),
                    _ => String::new(),
                };
                let figure = r
                    .figures()
                    .ok()
                    .and_then(|f| f.main_figure_text())
                    .map(|text| format!(", {text}"))
                    .unwrap_or_default();
                progress.finished(format!(
                    "{}: run {}{host}{figure}",
                    slot_label(&place.axes, place.repetition),
                    r.id
                ));
            }
        }
        let queued = output(slurm("squeue").args(["-h", "-r", "-o", "%i %T", "-j", &jobs.join(",")]));
        match queued {
            Ok(text) => {
                last_answer = Instant::now();
                let (mut running, mut pending) = (0, 0);
                for line in text.lines() {
                    match line.split_whitespace().nth(1) {
                        Some("RUNNING" | "COMPLETING" | "CONFIGURING") => running += 1,
                        Some(_) => pending += 1,
                        None => {}
                    }
                }
                if running + pending == 0 {
                    return Ok(None);
                }
                progress.starting(&format!("Slurm: {running} running, {pending} waiting"));
            }
            // Slurm's controller may be busy for a moment; a minute without answer is an error.
            Err(e) if last_answer.elapsed() > Duration::from_secs(60) => {
                return Err(e.context(format!(
                    "matrix {matrix_id}: squeue has not answered for a minute; the jobs ({}) may still run: `fsynclab matrix --resume {matrix_id}` prints the table once they end",
                    jobs.join(", ")
                )))
            }
            Err(_) => {}
        }
        let wait = Duration::from_secs(1).saturating_sub(asked_at.elapsed());
        if !stop.sleep(wait) {
            progress.clear();
            return Ok(Some(stop.signal().unwrap_or(libc::SIGINT)));
        }
        asked_at = Instant::now();
    }
}

/// What `scontrol show job -o JOB` says of a finished task: `JobState=FAILED`... as pairs.
fn task_state(job: &str) -> Vec<(String, String)> {
    let Ok(text) = output(slurm("scontrol").args(["show", "job", "-o", job])) else {
        return Vec::new();
    };
    text.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The last `n` lines of a log, indented.
fn tail(path: &Path, n: usize) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(n);
    Some(lines[start..].iter().map(|l| format!("    {l}\n")).collect())
}

/// Says, for each submitted run not stored, which task it was, what Slurm says of it and
/// the end of its log; how many failed (a run another process is still making is not).
pub(super) fn report_failures(
    plan: &Plan,
    matrix_id: &str,
    arrays: &[Array],
    store: &Store,
    request: &Request,
) -> Result<usize> {
    let missing = crate::commands::matrix::run::remaining(store, matrix_id, plan)?;
    let order = plan.order();
    let cells = plan.cells();
    let claims = store.claims(matrix_id)?;
    let mut failed = 0;
    for a in arrays {
        for &i in &a.indices {
            let (rep, c) = order[i];
            if !missing.contains(&(rep, c)) {
                continue;
            }
            let label = slot_label(&cells[c], rep);
            let held = claims
                .iter()
                .find(|(p, o)| p.repetition == rep && p.axes == cells[c] && !crate::matrix::claim::is_dead(o));
            if let Some((_, owner)) = held {
                note!(
                    "fsynclab matrix {matrix_id}: {label} is still being made by pid {} on {}{}",
                    owner.pid,
                    owner.host,
                    owner.job.as_ref().map(|j| format!(" ({j})")).unwrap_or_default()
                );
                continue;
            }
            failed += 1;
            let task = format!("{}_{i}", a.job);
            let state = task_state(&task);
            let get = |k: &str| state.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
            let log = get("StdOut")
                .map(PathBuf::from)
                .unwrap_or_else(|| request.log_dir.join(format!("{matrix_id}-{task}.log")));
            let what = match (get("JobState"), get("ExitCode")) {
                (Some(s), Some(code)) => format!("{s}, exit code {code}"),
                (Some(s), None) => s.to_string(),
                _ => "no longer known to Slurm".to_string(),
            };
            let node = get("NodeList")
                .filter(|n| !n.is_empty() && *n != "(null)")
                .map(|n| format!(" on {n}"))
                .unwrap_or_default();
            note!(
                "fsynclab matrix {matrix_id}: {label} made no run: Slurm job {task}{node} {what}; log {}",
                recording::shown(&log)
            );
            match tail(&log, 5) {
                Some(t) if !t.is_empty() => note!("{}", t.trim_end()),
                Some(_) => note!("    (the log is empty)"),
                None => note!("    (no log: the task did not start)"),
            }
        }
    }
    if failed > 0 {
        note!(
            "fsynclab matrix {matrix_id}: {failed} runs failed; `fsynclab matrix --resume {matrix_id}` submits them again"
        );
    }
    Ok(failed)
}
