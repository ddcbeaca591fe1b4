//! Slurm's client commands (`sbatch`, `squeue`, `sinfo`, ...) run and read, each bounded:
//! whether they are there, the nodes of a partition, the jobs of a matrix that still wait or
//! run. The claims ask `squeue` on their own whether a claim's job has ended
//! (`matrix::claim`, below the farm), bounded as a query here is.

use std::process::Command;
use std::time::Duration;

use anyhow::Result;

use crate::child::{Bounded, OnSignal, Outcome};
use crate::error::Usage;

/// A Slurm command, with its error said in one line when it cannot run.
pub(super) fn slurm(program: &str) -> Command {
    let mut c = Command::new(program);
    c.stdin(std::process::Stdio::null());
    c
}

/// The client commands a matrix on Slurm runs.
const CLIENTS: [&str; 5] = ["sbatch", "squeue", "scontrol", "scancel", "sinfo"];

/// Refuses, before anything is stored or submitted, to run where Slurm's client commands
/// are not on the PATH.
pub(super) fn check_clients() -> Result<(), Usage> {
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
pub(super) fn output(cmd: &mut Command) -> Result<String> {
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
            crate::units::format_duration(rules.limit)
        ),
        Outcome::Interrupted(sig) => anyhow::bail!("{program} stopped by signal {sig}"),
    }
}

/// The nodes of `partition` (the default partition's when none), as `sinfo` lists them.
pub(super) fn nodes_of(partition: Option<&str>) -> Result<Vec<String>> {
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
pub(super) fn active_jobs(matrix_id: &str) -> Result<Vec<String>> {
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
