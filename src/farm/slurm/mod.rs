//! `--engine slurm`: a matrix's runs as one Slurm job array, each task making one run on its
//! node, followed to their end.
//!
//! 1. submit: the plan is in the shared store already; `sbatch --array=LIST%K --exclusive`
//!    runs `fsynclab cell ID:$SLURM_ARRAY_TASK_ID` for each run missing, its
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
//! 3. end: each task that made no run reported with its job id (`1234_5`), what Slurm says
//!    of it (`scontrol show job`: state, exit code, node) and the end of its log; the command
//!    then prints the table of what is stored.
//!
//! The fsynclab binary, the log directory and the tasks' working directory (the submitting
//! one) must be at the same paths on every node, as on a cluster with a shared filesystem.

mod client;
mod follow;
mod stuck;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, Result};

use super::placement::PlacementOptions;
use super::{by_node, indices_of, Farm, Runs, Submitted};
use crate::error::Usage;
use crate::matrix::plan::{Placement, Plan};
use crate::recording;
use crate::store::{Location, Store};
use client::{active_jobs, check_clients, nodes_of, output, slurm};
use follow::{follow, report_failures};

/// What a matrix asks of Slurm, besides the placement every farm takes.
#[derive(Clone, Debug, Default)]
pub(crate) struct SlurmOptions {
    /// The partition the arrays go to (`--partition`) [default: the stored matrix's, else
    /// Slurm's default partition].
    pub(crate) partition: Option<String>,
    /// How long a task found stuck is still waited for (`--stuck-limit`) [default:
    /// [`stuck::STUCK_LIMIT`]].
    pub(crate) stuck_limit: Option<Duration>,
    /// Where the tasks write their logs (`--log-dir`) [default: `./fsynclab-logs`].
    pub(crate) log_dir: Option<PathBuf>,
    /// No progress on stderr (`--quiet`).
    pub(crate) quiet: bool,
}

/// One submitted array: its job id, the node it is bound to (`--per-host`), and the plan
/// indices of its tasks.
struct Array {
    job: String,
    node: Option<String>,
    indices: Vec<usize>,
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
    fn of(plan: &Plan, options: &SlurmOptions, placement: &PlacementOptions) -> Result<Request> {
        let stored = plan.placement.clone().unwrap_or_default();
        let log_dir = std::path::absolute(
            options
                .log_dir
                .clone()
                .unwrap_or_else(|| PathBuf::from("fsynclab-logs")),
        )?;
        Ok(Request {
            partition: options.partition.clone().or(stored.partition),
            nodes: if placement.nodes.is_empty() {
                stored.nodes
            } else {
                placement.nodes.clone()
            },
            parallel: placement.parallel.or(stored.parallel),
            log_dir,
        })
    }
}

/// Slurm: the runs as job arrays, followed to their end.
pub(crate) struct Slurm {
    pub(crate) options: SlurmOptions,
    pub(crate) placement: PlacementOptions,
}

impl Farm for Slurm {
    fn keep(&self, placement: &mut Placement) {
        placement.partition = self.options.partition.clone();
    }

    fn check(&self) -> Result<(), Usage> {
        check_clients()
    }

    /// Slurm nodes share a file only on one machine: said, not refused (a one-machine
    /// cluster is a farm too).
    fn check_store(&self, at: &Location) -> Result<(), Usage> {
        if let Location::File(p) = at {
            note!(
                "fsynclab matrix: the results store {} is a file: every node writes it, which is safe on one machine only (a farm of machines shares --store postgres://USER@HOST/DB)",
                recording::shown(p)
            );
        }
        Ok(())
    }

    fn nodes(&self) -> Result<Vec<String>> {
        nodes_of(self.options.partition.as_deref())
    }

    fn check_none_running(&self, matrix_id: &str) -> Result<()> {
        check_clients()?;
        let active = active_jobs(matrix_id)?;
        if !active.is_empty() {
            return Err(Usage(format!(
                "matrix {matrix_id}: Slurm job {} still has tasks waiting or running; let it end (or `scancel` it), then --resume",
                active.join(", ")
            ))
            .into());
        }
        Ok(())
    }

    fn submit(&self, runs: &Runs<'_>, store: &Store) -> Result<Submitted> {
        submit_and_follow(runs, store, &self.options, &self.placement)
    }
}

/// Submits `runs` as Slurm job arrays and follows them to their end; the tasks that made no
/// run are said, each with what Slurm says of it.
fn submit_and_follow(
    runs: &Runs<'_>,
    store: &Store,
    options: &SlurmOptions,
    placement: &PlacementOptions,
) -> Result<Submitted> {
    let Runs {
        plan,
        matrix_id,
        slots,
        at,
    } = *runs;
    let request = Request::of(plan, options, placement)?;
    let indices = indices_of(plan, slots);
    std::fs::create_dir_all(&request.log_dir)
        .with_context(|| format!("cannot make the log directory {}", request.log_dir.display()))?;
    // Signals are watched from before the first `sbatch`: one that comes while it runs ends it.
    let stop = crate::signals::watch()?;
    let mut arrays = Vec::new();
    let submitted = submit(plan, matrix_id, &indices, &request, at, &mut arrays);
    if let Some(sig) = stop.signal() {
        cancel(matrix_id, &arrays, sig);
        return Ok(Submitted::Stopped(sig));
    }
    submitted?;
    if !options.quiet {
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
    let stuck_limit = options.stuck_limit.unwrap_or(stuck::STUCK_LIMIT);
    let followed = follow(plan, matrix_id, &arrays, store, stuck_limit, options.quiet)?;
    if let Some(sig) = followed.signal {
        cancel(matrix_id, &arrays, sig);
        return Ok(Submitted::Stopped(sig));
    }
    let failed = report_failures(
        plan,
        matrix_id,
        &arrays,
        store,
        &request,
        &followed.given_up,
        stuck_limit,
    )?;
    Ok(Submitted::Followed { failed })
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
    let (pinned, groups) = by_node(plan, indices);
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
        "exec {} cell {}:\"$SLURM_ARRAY_TASK_ID\"",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_are_given_to_slurm_as_ranges() {
        assert_eq!(array_spec(&[0, 1, 2, 3]), "0-3");
        assert_eq!(array_spec(&[0, 2, 3, 4, 7, 9, 10]), "0,2-4,7,9-10");
        assert_eq!(array_spec(&[5]), "5");
        assert_eq!(quoted("/opt/it's/fsynclab"), r"'/opt/it'\''s/fsynclab'");
    }
}
