//! `--engine slurm`: a matrix's runs as one Slurm job array, each task making one run on its
//! node, then the table.
//!
//! 1. submit: the plan is in the shared store already; `sbatch --array=LIST%K --exclusive`
//!    runs `fsynclab matrix --run-cell ID:$SLURM_ARRAY_TASK_ID` for each run missing, its
//!    index in the plan's order (round-robin over the cells, so that a cell's repeats are
//!    spread in time and over the nodes). `--exclusive`: two runs never share a machine.
//!    The store reaches the tasks in `FSYNCLAB_STORE` (Slurm passes the submitter's
//!    environment on), never on a command line where `ps` would show its password. With a
//!    host axis (`--per-host`, or `--axis host=...`), one array per node (`--nodelist`),
//!    each making that node's cells; with `--nodes`, the partition's other nodes are
//!    excluded. A cell is the unit because Slurm
//!    starts array tasks about every 3 s: one task per call would spend more time starting
//!    than measuring.
//! 2. follow: every second the store says which runs are stored (a progress bar, or a line
//!    per run off a terminal) and `squeue` which tasks still wait or run; a signal cancels
//!    the arrays (`scancel`, which ends each task's process tree; its run is not kept) and
//!    says how to resume.
//! 3. end: the table of what is stored, and each task that made no run reported with its
//!    job id (`1234_5`), what Slurm says of it (`scontrol show job`: state, exit code, node)
//!    and the end of its log.
//!
//! The fsynclab binary, the log directory and the tasks' working directory (the submitting
//! one) must be at the same paths on every node, as on a cluster with a shared filesystem.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};

use super::plan::{CellPlace, Plan};
use super::run::{slot_label, Progress};
use crate::child::{Bounded, OnSignal, Outcome};
use crate::cli::MatrixArgs;
use crate::error::Usage;
use crate::record;
use crate::store::{Location, RunFilter, RunId, Store};

/// One submitted array: its job id, the node it is bound to (`--per-host`), and the plan
/// indices of its tasks.
struct Array {
    job: String,
    node: Option<String>,
    indices: Vec<usize>,
}

/// A Slurm command, with its error said in one line when it cannot run.
fn slurm(program: &str) -> Command {
    let mut c = Command::new(program);
    c.stdin(std::process::Stdio::null());
    c
}

/// The client commands a matrix on Slurm runs.
const CLIENTS: [&str; 5] = ["sbatch", "squeue", "scontrol", "scancel", "sinfo"];

/// Refuses, before anything is stored or submitted, to run where Slurm's client commands
/// are not on the PATH.
pub(crate) fn check_clients() -> Result<(), Usage> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<_> = std::env::split_paths(&path).collect();
    match CLIENTS.iter().find(|c| !dirs.iter().any(|d| d.join(c).is_file())) {
        Some(missing) => Err(not_on_path(missing)),
        None => Ok(()),
    }
}

fn not_on_path(program: &str) -> Usage {
    Usage(format!(
        "--engine slurm: {program} is not on the PATH (install Slurm's client commands, slurm-client on Debian, or run where they are)"
    ))
}

/// How long a Slurm client command may take, and what a signal does to it: `sbatch` and
/// the queries are ended by a signal (the matrix stops, and says how to resume); `scancel`
/// is how a stopped matrix undoes its submission, so it finishes. A client retries for a
/// while when the controller does not answer, silently: fsynclab says it waits after 5 s.
fn rules_for(program: &str) -> Bounded {
    Bounded {
        limit: Duration::from_secs(if program == "sbatch" { 60 } else { 30 }),
        on_signal: if program == "scancel" {
            OnSignal::Finish
        } else {
            OnSignal::Stop
        },
        say_after: Some(Duration::from_secs(5)),
    }
}

/// Runs a Slurm client command (its own process group, bounded: [`rules_for`]); its
/// stdout, or an error with its stderr.
fn output(cmd: &mut Command) -> Result<String> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let rules = rules_for(&program);
    let done = rules.run(cmd).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => anyhow::Error::new(not_on_path(&program)),
        _ => anyhow::Error::new(e).context(format!("cannot run {program}")),
    })?;
    match done.outcome {
        Outcome::Exited(status) if status.success() => Ok(String::from_utf8_lossy(&done.stdout).into_owned()),
        Outcome::Exited(status) => anyhow::bail!(
            "{program} failed ({status}): {}",
            String::from_utf8_lossy(&done.stderr).trim()
        ),
        Outcome::TimedOut => anyhow::bail!(
            "{program} did not answer within {}: is the Slurm controller up (`scontrol ping`)?",
            crate::child::shown(rules.limit)
        ),
        Outcome::Interrupted(sig) => anyhow::bail!("{program} stopped by signal {sig}"),
    }
}

/// The nodes of `partition` (the default partition's when none), as `sinfo` lists them.
pub(crate) fn nodes_of(partition: Option<&str>) -> Result<Vec<String>> {
    let mut cmd = slurm("sinfo");
    cmd.args(["-h", "-N", "-o", "%N"]);
    if let Some(p) = partition {
        cmd.args(["-p", p]);
    }
    let mut nodes: Vec<String> = output(&mut cmd)?.lines().map(|l| l.trim().to_string()).collect();
    nodes.retain(|n| !n.is_empty());
    nodes.sort();
    nodes.dedup();
    if nodes.is_empty() {
        return Err(Usage(format!(
            "--engine slurm: {} has no nodes (sinfo lists none)",
            partition.map_or("the default partition".to_string(), |p| format!("partition {p}"))
        ))
        .into());
    }
    Ok(nodes)
}

/// The Slurm jobs of matrix `matrix_id` (by their name) that still wait or run.
pub(crate) fn active_jobs(matrix_id: &str) -> Result<Vec<String>> {
    let out = output(slurm("squeue").args(["-h", "-n", &format!("fsynclab-{matrix_id}"), "-o", "%A"]))?;
    let mut jobs: Vec<String> = out
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    jobs.sort();
    jobs.dedup();
    Ok(jobs)
}

/// Whether the Slurm job `job` (`1234` or `1234_5`) has ended: `Some(true)` when `squeue`
/// answers without listing it, `None` when Slurm cannot be asked.
pub(crate) fn job_ended(job: &str) -> Option<bool> {
    let out = output(slurm("squeue").args(["-h", "-j", job, "-o", "%i"])).ok()?;
    Some(out.trim().is_empty())
}

/// `0-3,7,9-11`: indices as Slurm's `--array` takes them.
fn array_spec(indices: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < indices.len() {
        let start = indices[i];
        let mut end = start;
        while i + 1 < indices.len() && indices[i + 1] == end + 1 {
            i += 1;
            end += 1;
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// A word for a shell command line, in single quotes.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// What the user asked of Slurm for this matrix, from the command line and the stored plan.
struct Request {
    partition: Option<String>,
    nodes: Vec<String>,
    parallel: Option<u32>,
    log_dir: PathBuf,
}

impl Request {
    fn of(plan: &Plan, args: &MatrixArgs) -> Result<Request> {
        let stored = plan.placement.clone().unwrap_or_default();
        let log_dir = std::path::absolute(args.log_dir.clone().unwrap_or_else(|| PathBuf::from("fsynclab-logs")))?;
        Ok(Request {
            partition: args.partition.clone().or(stored.partition),
            nodes: if args.nodes.is_empty() {
                stored.nodes
            } else {
                args.nodes.clone()
            },
            parallel: args.parallel.or(stored.parallel),
            log_dir,
        })
    }
}

/// Submits the runs of `slots` as Slurm job arrays, follows them, prints the table; the exit
/// status.
pub(crate) fn submit_and_follow(
    plan: &Plan,
    matrix_id: &str,
    slots: &[(u32, usize)],
    store: Store,
    at: &Location,
    args: &MatrixArgs,
) -> Result<i32> {
    let request = Request::of(plan, args)?;
    let order = plan.order();
    let mut indices: Vec<usize> = slots
        .iter()
        .filter_map(|slot| order.iter().position(|o| o == slot))
        .collect();
    indices.sort_unstable();
    std::fs::create_dir_all(&request.log_dir)
        .with_context(|| format!("cannot make the log directory {}", request.log_dir.display()))?;
    // Signals are watched from before the first `sbatch`: one that comes while it runs ends it.
    let stop = crate::signals::watch()?;
    let mut arrays = Vec::new();
    let submitted = submit(plan, matrix_id, &indices, &request, at, &mut arrays);
    if let Some(sig) = stop.signal() {
        cancel(matrix_id, &arrays, sig);
        return Ok(128 + sig);
    }
    submitted?;
    if !args.quiet {
        for a in &arrays {
            note!(
                "fsynclab matrix {matrix_id}: Slurm job {} runs {} of its runs{} (logs: {}/{matrix_id}-{}_N.log)",
                a.job,
                a.indices.len(),
                a.node.as_ref().map(|n| format!(" on {n}")).unwrap_or_default(),
                request.log_dir.display(),
                a.job
            );
        }
    }
    let followed = follow(plan, matrix_id, &arrays, &store, args.quiet)?;
    if let Some(sig) = followed.signal {
        cancel(matrix_id, &arrays, sig);
        return Ok(128 + sig);
    }
    let failed = report_failures(plan, matrix_id, &arrays, &store, &request, &followed.given_up)?;
    super::print_tables(&store, matrix_id, args)?;
    if !args.quiet {
        note!(
            "fsynclab matrix {matrix_id}: `fsynclab report --matrix {matrix_id} -o {matrix_id}.html` draws it; `fsynclab runs --matrix {matrix_id}` lists its runs with their hosts"
        );
    }
    Ok(if failed > 0 { 1 } else { 0 })
}

/// After signal `sig`: cancels the arrays submitted so far and says how to resume.
fn cancel(matrix_id: &str, arrays: &[Array], sig: i32) {
    let jobs: Vec<&str> = arrays.iter().map(|a| a.job.as_str()).collect();
    if jobs.is_empty() {
        note!(
            "fsynclab: matrix {matrix_id} stopped by signal {sig} before any job was submitted; `fsynclab matrix --resume {matrix_id}` submits its runs"
        );
        return;
    }
    let cancelled = output(slurm("scancel").args(&jobs)).is_ok();
    note!(
        "fsynclab: matrix {matrix_id} stopped by signal {sig}; Slurm job {} {}; `fsynclab matrix --resume {matrix_id}` submits the runs left",
        jobs.join(", "),
        if cancelled {
            "cancelled (a run under way is not kept)"
        } else {
            "could not be cancelled: `scancel` it"
        }
    );
}

/// Submits the arrays into `arrays`: one, or one per node with `--per-host`; stops at the
/// first that fails, or at a signal.
fn submit(
    plan: &Plan,
    matrix_id: &str,
    indices: &[usize],
    request: &Request,
    at: &Location,
    arrays: &mut Vec<Array>,
) -> Result<()> {
    let exe = std::env::current_exe().context("cannot find the fsynclab binary to run on the nodes")?;
    let store = at.for_another_process()?;
    let cells = plan.cells();
    let order = plan.order();
    let pinned = plan.axes.iter().any(|a| a.key == super::plan::HOST_AXIS);
    let groups: Vec<(Option<String>, Vec<usize>)> = if pinned {
        let mut by_node: Vec<(Option<String>, Vec<usize>)> = Vec::new();
        for &i in indices {
            let host = cells[order[i].1].host().map(str::to_string);
            match by_node.iter_mut().find(|(n, _)| *n == host) {
                Some((_, list)) => list.push(i),
                None => by_node.push((host, vec![i])),
            }
        }
        by_node
    } else {
        vec![(None, indices.to_vec())]
    };
    // Any node of the partition, except those --nodes leaves out.
    let exclude: Vec<String> = if request.nodes.is_empty() || pinned {
        Vec::new()
    } else {
        let all = nodes_of(request.partition.as_deref())?;
        if let Some(unknown) = request.nodes.iter().find(|n| !all.contains(n)) {
            return Err(Usage(format!(
                "--nodes: {unknown} is not a node of {} (its nodes: {})",
                request.partition.as_deref().unwrap_or("the default partition"),
                all.join(",")
            ))
            .into());
        }
        all.into_iter().filter(|n| !request.nodes.contains(n)).collect()
    };
    // One run at a time on a node (--exclusive); as many at once as nodes were named.
    let parallel = request.parallel.or(match (pinned, request.nodes.len()) {
        (true, _) => Some(1),
        (false, 0) => None,
        (false, n) => Some(n as u32),
    });
    let task = format!(
        "exec {} matrix --run-cell {}:\"$SLURM_ARRAY_TASK_ID\"",
        quoted(&exe.display().to_string()),
        quoted(matrix_id)
    );
    for (node, list) in groups {
        if list.is_empty() {
            continue;
        }
        if crate::signals::received().is_some() {
            return Ok(());
        }
        let mut spec = array_spec(&list);
        if let Some(k) = parallel {
            spec.push_str(&format!("%{k}"));
        }
        let mut cmd = slurm("sbatch");
        cmd.args(["--parsable", "--exclusive", "--export=ALL", "--nodes=1"])
            .arg(format!("--array={spec}"))
            .arg(format!("--job-name=fsynclab-{matrix_id}"))
            .arg(format!("--output={}/{matrix_id}-%A_%a.log", request.log_dir.display()))
            .env(crate::store::STORE_ENV, &store);
        if let Some(p) = &request.partition {
            cmd.arg(format!("--partition={p}"));
        }
        match &node {
            Some(n) => {
                cmd.arg(format!("--nodelist={n}"));
            }
            None if !exclude.is_empty() => {
                cmd.arg(format!("--exclude={}", exclude.join(",")));
            }
            None => {}
        }
        cmd.arg(format!("--wrap={task}"));
        let out = output(&mut cmd).with_context(|| format!("matrix {matrix_id}: cannot submit the job array"))?;
        // `--parsable`: "JOBID" or "JOBID;CLUSTER".
        let job = out.trim().split(';').next().unwrap_or("").to_string();
        if job.is_empty() {
            anyhow::bail!("sbatch gave no job id for matrix {matrix_id}");
        }
        arrays.push(Array {
            job,
            node,
            indices: list,
        });
    }
    Ok(())
}

/// How long a task may sit COMPLETING before its node is taken for gone: a node ends a task
/// in a second or two; one whose slurmd is dead never does, and Slurm itself notices only
/// after its SlurmdTimeout (300 s by default).
const COMPLETING_LIMIT: Duration = Duration::from_secs(30);

/// How long fsynclab still waits for a task it found stuck before giving it up.
pub(crate) const STUCK_LIMIT: Duration = Duration::from_secs(60);

/// A task fsynclab stopped waiting for: its id (`1234_5`), its node, and why.
struct GivenUp {
    task: String,
    node: String,
    why: String,
}

/// How the following ended.
struct Followed {
    /// The signal that stopped it.
    signal: Option<i32>,
    given_up: Vec<GivenUp>,
}

/// One task as `squeue -o '%i|%T|%N|%r'` lists it (a pending task has no node).
struct Queued {
    task: String,
    state: String,
    node: String,
    reason: String,
}

fn queued(text: &str) -> Vec<Queued> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.trim().splitn(4, '|').map(str::trim);
            let task = f.next().filter(|t| !t.is_empty())?.to_string();
            let state = f.next()?.to_string();
            let node = f.next().unwrap_or("").to_string();
            let reason = f.next().unwrap_or("").to_string();
            Some(Queued {
                task,
                state,
                node,
                reason,
            })
        })
        .collect()
}

/// The nodes that do not answer, with the state `sinfo` gives them: a state ending in `*`
/// (not responding), or down, drained, failing.
fn unresponsive_nodes() -> Vec<(String, String)> {
    let Ok(text) = output(slurm("sinfo").args(["-h", "-N", "-o", "%N %T"])) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, state)| {
            let state = state.trim();
            state.ends_with('*') || ["down", "drain", "fail"].iter().any(|s| state.starts_with(s))
        })
        .map(|(node, state)| (node.to_string(), state.trim().to_string()))
        .collect()
}

/// Why a task looks stuck, if it does: on a node that does not answer, COMPLETING for too
/// long (`completing_for`), or held by Slurm.
fn stuck_because(q: &Queued, completing_for: Duration, unresponsive: &[(String, String)]) -> Option<String> {
    let active = matches!(q.state.as_str(), "RUNNING" | "COMPLETING" | "CONFIGURING");
    if let Some((_, state)) = unresponsive.iter().find(|(n, _)| active && *n == q.node) {
        return Some(format!(
            "{} on {}, which does not respond (sinfo: {state})",
            q.state, q.node
        ));
    }
    if q.state == "COMPLETING" && completing_for >= COMPLETING_LIMIT {
        return Some(format!(
            "COMPLETING on {} for {} s: its node does not end it (is slurmd running there?)",
            q.node,
            completing_for.as_secs()
        ));
    }
    let reason = q.reason.to_ascii_lowercase();
    if q.state == "PENDING" && (reason.contains("held") || reason.contains("launch failed")) {
        return Some(format!("held by Slurm ({})", q.reason));
    }
    if q.state == "PENDING" && (reason.contains("reqnodenotavail") || reason.contains("nodedown")) {
        return Some(format!("waiting for a node that is down (Slurm: {})", q.reason));
    }
    None
}

/// Follows the arrays until every run is stored or none of their tasks waits or runs, giving
/// up a task found stuck (its node gone) after [`STUCK_LIMIT`].
fn follow(plan: &Plan, matrix_id: &str, arrays: &[Array], store: &Store, quiet: bool) -> Result<Followed> {
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
    let mut nodes_asked = Instant::now() - Duration::from_secs(60);
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
                let host = match (&r.host, place.axes.iter().any(|(k, _)| k == super::plan::HOST_AXIS)) {
                    (Some(h), false) => format!(" on {h}"),
                    _ => String::new(),
                };
                let figure = r
                    .figures()
                    .ok()
                    .and_then(|f| {
                        f.main_figure()
                            .and_then(|m| f.values.get(&m).map(|v| format!(", {m} {} {}", m.format(*v), m.unit())))
                    })
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
                if active && nodes_asked.elapsed() >= Duration::from_secs(5) {
                    unresponsive = unresponsive_nodes();
                    nodes_asked = now;
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
                                    "fsynclab matrix {matrix_id}: Slurm task {} ({}) looks stuck: {why}; fsynclab waits up to {} s more for it, then gives it up",
                                    q.task,
                                    task_label(plan, &q.task),
                                    STUCK_LIMIT.as_secs()
                                );
                                (now, why.clone())
                            });
                            if since.elapsed() >= STUCK_LIMIT {
                                given_up.push(GivenUp {
                                    task: q.task.clone(),
                                    node: q.node.clone(),
                                    why,
                                });
                                stuck.remove(&q.task);
                            }
                        }
                    }
                }
                // A task kept waiting by the array's limit behind tasks given up never starts.
                let blocking: Vec<String> = given_up.iter().map(|g| g.task.clone()).collect();
                let still_active = tasks
                    .iter()
                    .any(|q| q.state != "PENDING" && !blocking.contains(&q.task));
                if !still_active && !blocking.is_empty() {
                    for q in tasks.iter().filter(|q| q.state == "PENDING" && q.reason == "JobArrayTaskLimit") {
                        given_up.push(GivenUp {
                            task: q.task.clone(),
                            node: String::new(),
                            why: format!(
                                "waiting behind {} (Slurm: JobArrayTaskLimit)",
                                blocking.join(", ")
                            ),
                        });
                    }
                }
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
fn report_failures(
    plan: &Plan,
    matrix_id: &str,
    arrays: &[Array],
    store: &Store,
    request: &Request,
    given_up: &[GivenUp],
) -> Result<usize> {
    let missing = super::run::remaining(store, matrix_id, plan)?;
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
                    "fsynclab matrix {matrix_id}: {label} made no run: Slurm task {task} was {}; given up after {} s. \
                     `scancel {task}`, then `fsynclab matrix --resume {matrix_id}{}` makes it elsewhere",
                    g.why,
                    STUCK_LIMIT.as_secs(),
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
                .find(|(p, o)| p.repetition == rep && p.axes == cells[c] && !super::claim::is_dead(o));
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
                record::shown(&log)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn task(state: &str, node: &str, reason: &str) -> Queued {
        Queued {
            task: "12_3".into(),
            state: state.into(),
            node: node.into(),
            reason: reason.into(),
        }
    }

    /// Issue 24: a task on a dead node is found stuck (its node does not respond, or it sits
    /// COMPLETING), and a healthy one is not.
    #[test]
    fn a_task_on_a_node_that_does_not_respond_or_sits_completing_is_stuck() {
        let dead = vec![("n2".to_string(), "idle*".to_string())];
        let on_dead = stuck_because(&task("RUNNING", "n2", "None"), Duration::ZERO, &dead);
        assert!(
            on_dead
                .as_deref()
                .is_some_and(|w| w.contains("n2, which does not respond (sinfo: idle*)")),
            "{on_dead:?}"
        );
        assert_eq!(
            stuck_because(&task("RUNNING", "n1", "None"), Duration::ZERO, &dead),
            None
        );
        assert_eq!(
            stuck_because(&task("COMPLETING", "n1", "None"), Duration::from_secs(5), &[]),
            None
        );
        let completing = stuck_because(&task("COMPLETING", "n1", "None"), COMPLETING_LIMIT, &[]);
        assert!(completing.is_some_and(|w| w.starts_with("COMPLETING on n1 for 30 s")));
        assert!(stuck_because(&task("PENDING", "", "launch failed requeued held"), Duration::ZERO, &[]).is_some());
        assert_eq!(
            stuck_because(&task("PENDING", "", "Resources"), Duration::ZERO, &[]),
            None
        );
        let q = queued("12_3|COMPLETING|n2|None\n12_4|PENDING||Resources\n");
        assert_eq!(
            (q[0].node.as_str(), q[1].state.as_str(), q[1].reason.as_str()),
            ("n2", "PENDING", "Resources")
        );
        assert_eq!(q[1].node, "");
    }

    #[test]
    fn indices_are_given_to_slurm_as_ranges() {
        assert_eq!(array_spec(&[0, 1, 2, 3]), "0-3");
        assert_eq!(array_spec(&[0, 2, 3, 4, 7, 9, 10]), "0,2-4,7,9-10");
        assert_eq!(array_spec(&[5]), "5");
        assert_eq!(quoted("/opt/it's/fsynclab"), r"'/opt/it'\''s/fsynclab'");
    }
}
