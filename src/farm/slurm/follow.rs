//! Following a matrix's job arrays to their end: each run as it is stored, a line when
//! Slurm stops answering, a task stuck on a node that does not answer given up after a
//! stated bound ([`super::stuck`]); then, for each submitted run not stored, the task, what Slurm says
//! of it and the end of its log.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::client::{nodes_of, output, slurm};
use super::stuck::{given_up_with, queued, stuck_because, unresponsive_nodes, Followed, GivenUp, Queued};
use super::{Array, Request};
use crate::farm::{remaining, slot_label};
use crate::matrix::plan::Plan;
use crate::recording;
use crate::run::Progress;
use crate::store::{RunFilter, RunId, Store};

/// Follows the arrays until every run is stored or none of their tasks waits or runs, giving
/// up a task found stuck (its node gone) after `stuck_limit` ([`super::stuck::STUCK_LIMIT`] unless
/// `--stuck-limit` says).
pub(super) fn follow(
    plan: &Plan,
    matrix_id: &str,
    arrays: &[Array],
    store: &Store,
    stuck_limit: Duration,
    quiet: bool,
) -> Result<Followed> {
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
    // When each task was first seen COMPLETING, and first found stuck (with why).
    let mut completing_since: std::collections::HashMap<String, Instant> = std::collections::HashMap::new();
    let mut stuck: std::collections::BTreeMap<String, (Instant, String)> = std::collections::BTreeMap::new();
    let mut given_up: Vec<GivenUp> = Vec::new();
    let mut nodes_asked: Option<Instant> = None;
    let mut unresponsive = Vec::new();
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
        let queue = output(slurm("squeue").args(["-h", "-r", "-o", "%i|%T|%N|%r", "-j", &jobs.join(",")]));
        match queue {
            Ok(text) => {
                last_answer = Instant::now();
                let tasks: Vec<Queued> = queued(&text)
                    .into_iter()
                    .filter(|q| !given_up.iter().any(|g| g.task == q.task))
                    .collect();
                // Every run is stored: a task Slurm still lists (COMPLETING on a dead node)
                // has nothing left to give.
                if seen.len() >= total {
                    if !quiet {
                        for q in &tasks {
                            note!(
                                "fsynclab matrix {matrix_id}: every run is stored; Slurm still lists task {} ({} on {})",
                                q.task,
                                q.state,
                                q.node
                            );
                        }
                    }
                    return Ok(Followed { signal: None, given_up });
                }
                if tasks.is_empty() {
                    return Ok(Followed { signal: None, given_up });
                }
                let now = Instant::now();
                completing_since.retain(|t, _| tasks.iter().any(|q| q.task == *t && q.state == "COMPLETING"));
                for q in tasks.iter().filter(|q| q.state == "COMPLETING") {
                    completing_since.entry(q.task.clone()).or_insert(now);
                }
                let active = tasks.iter().any(|q| q.state != "PENDING");
                if active && nodes_asked.is_none_or(|t| t.elapsed() >= Duration::from_secs(5)) {
                    unresponsive = unresponsive_nodes();
                    nodes_asked = Some(now);
                }
                for q in &tasks {
                    let completing_for = completing_since.get(&q.task).map_or(Duration::ZERO, |t| t.elapsed());
                    match stuck_because(q, completing_for, &unresponsive) {
                        None => {
                            stuck.remove(&q.task);
                        }
                        Some(why) => {
                            let (since, _) = stuck.entry(q.task.clone()).or_insert_with(|| {
                                progress.clear();
                                note!(
                                    "fsynclab matrix {matrix_id}: Slurm task {} ({}) looks stuck: {why}; fsynclab waits up to {} more for it, then gives it up",
                                    q.task,
                                    task_label(plan, &q.task),
                                    seconds(stuck_limit)
                                );
                                (now, why.clone())
                            });
                            if since.elapsed() >= stuck_limit {
                                given_up.push(GivenUp {
                                    task: q.task.clone(),
                                    node: q.node.clone(),
                                    why,
                                    with: Vec::new(),
                                });
                                stuck.remove(&q.task);
                            }
                        }
                    }
                }
                given_up.extend(given_up_with(&tasks, &given_up, &stuck));
                let (mut running, mut pending) = (0, 0);
                for q in tasks.iter().filter(|q| !given_up.iter().any(|g| g.task == q.task)) {
                    match q.state.as_str() {
                        "RUNNING" | "COMPLETING" | "CONFIGURING" => running += 1,
                        _ => pending += 1,
                    }
                }
                if running + pending == 0 {
                    return Ok(Followed { signal: None, given_up });
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
            return Ok(Followed {
                signal: Some(stop.signal().unwrap_or(libc::SIGINT)),
                given_up,
            });
        }
        asked_at = Instant::now();
    }
}

/// The cell and repetition of task `1234_5` (plan index 5), for messages.
fn task_label(plan: &Plan, task: &str) -> String {
    let order = plan.order();
    let cells = plan.cells();
    task.rsplit_once('_')
        .and_then(|(_, i)| i.parse::<usize>().ok())
        .and_then(|i| order.get(i))
        .and_then(|&(rep, c)| cells.get(c).map(|cell| slot_label(cell, rep)))
        .unwrap_or_else(|| "a run".to_string())
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
    given_up: &[GivenUp],
    stuck_limit: Duration,
) -> Result<usize> {
    let missing = remaining(store, matrix_id, plan)?;
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
            let task = format!("{}_{i}", a.job);
            if let Some(g) = given_up.iter().find(|g| g.task == task) {
                failed += 1;
                let gone: Vec<String> = unresponsive_nodes().into_iter().map(|(n, _)| n).collect();
                let elsewhere: Vec<String> = nodes_of(request.partition.as_deref())
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|n| *n != g.node && !gone.contains(n))
                    .collect();
                note!(
                    "fsynclab matrix {matrix_id}: {label} made no run: Slurm task {task} was {}; given up {}. \
                     `scancel {task}`, then `fsynclab matrix --resume {matrix_id}{}` makes it elsewhere",
                    g.why,
                    if g.with.is_empty() {
                        format!("after {}", seconds(stuck_limit))
                    } else {
                        format!("with {}", g.with.join(", "))
                    },
                    if elsewhere.is_empty() {
                        String::new()
                    } else {
                        format!(" --nodes {}", elsewhere.join(","))
                    }
                );
                continue;
            }
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

/// `60 s`, `1.5 s`: a time limit as the follower's lines say it.
fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} s", d.as_secs_f64())
    }
}
