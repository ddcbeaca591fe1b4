//! Which process makes which run of a matrix: each run's place is claimed in the store
//! ([`crate::store::Claim`]) before its testbed is made, so that a matrix and its
//! `--resume`, or two resumes, share the runs left instead of each making them all (issue
//! 19). This process is the owner; an owner is dead when, on this host, its boot is over or
//! its process is gone (process id and start time, as the state files tell their runs
//! apart). Another host's owner is dead when the Slurm job it ran in has ended (`squeue`
//! no longer lists it); another host's owner outside a Slurm job is never taken for dead.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::child::{Bounded, OnSignal, Outcome};
use crate::kernel::sysctl;
use crate::store::{Claim, ClaimOwner, MatrixPlace, Store, StoreError};
use crate::testbed::state::start_time;

/// This host's name and boot, as the kernel names them.
fn host_and_boot() -> (String, String) {
    (
        sysctl::hostname().unwrap_or_default(),
        sysctl::boot_id().unwrap_or_default(),
    )
}

/// This process, as the owner of the claims it makes now.
pub(crate) fn this_process() -> ClaimOwner {
    let (host, boot_id) = host_and_boot();
    let pid = std::process::id();
    ClaimOwner {
        host,
        boot_id,
        pid,
        pid_start: start_time(pid),
        claimed_at: crate::result::now_rfc3339(),
        job: crate::environment::job_from(&|k| std::env::var(k).ok().filter(|v| !v.is_empty())),
    }
}

/// Whether the owner of a claim has gone: on this host, its boot is over, or no process
/// with its id and start time runs.
pub(crate) fn is_dead(owner: &ClaimOwner) -> bool {
    let (host, boot_id) = host_and_boot();
    if owner.host != host {
        return owner
            .job
            .as_deref()
            .and_then(|j| j.strip_prefix("slurm:"))
            .is_some_and(|job| slurm_job_ended(job) == Some(true));
    }
    if owner.boot_id != boot_id {
        return true;
    }
    match (start_time(owner.pid), owner.pid_start) {
        (None, _) => true,
        (Some(now), Some(then)) => now != then,
        (Some(_), None) => false,
    }
}

/// Whether the Slurm job `job` (`1234` or `1234_5`) has ended: `Some(true)` when `squeue`
/// answers without listing it, `None` when Slurm cannot be asked. Bounded as the farm's
/// Slurm client bounds its queries (`farm::slurm`, above this module): 30 s, stopped by a
/// signal, a line after 5 s.
fn slurm_job_ended(job: &str) -> Option<bool> {
    let mut squeue = Command::new("squeue");
    squeue
        .args(["-h", "-j", job, "-o", "%i"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let rules = Bounded {
        limit: Duration::from_secs(30),
        on_signal: OnSignal::Stop,
        say_after: Some(Duration::from_secs(5)),
    };
    let done = rules.run(&mut squeue).ok()?;
    match done.outcome {
        Outcome::Exited(status) if status.success() => Some(String::from_utf8_lossy(&done.stdout).trim().is_empty()),
        _ => None,
    }
}

/// Claims `place` for this process: `None` when the run is ours to make, else why not
/// (`made by pid 4242 on host1 since ...`, or `stored meanwhile`).
pub(crate) fn take(store: &mut Store, place: &MatrixPlace) -> Result<Option<String>, StoreError> {
    Ok(match store.claim_cell(place, &this_process(), is_dead)? {
        Claim::Won => None,
        Claim::Stored => Some("stored meanwhile by another fsynclab".to_string()),
        Claim::Held(o) => Some(format!(
            "being made by pid {} on {} (claimed {})",
            o.pid, o.host, o.claimed_at
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_gone_one_is_dead() {
        let me = this_process();
        assert!(!is_dead(&me));
        let rebooted = ClaimOwner {
            boot_id: "another boot".into(),
            ..me.clone()
        };
        assert!(is_dead(&rebooted));
        let reused = ClaimOwner {
            pid_start: me.pid_start.map(|t| t + 1),
            ..me.clone()
        };
        assert!(is_dead(&reused), "a pid reused by a later process");
        let elsewhere = ClaimOwner {
            host: format!("{}-other", me.host),
            pid: u32::MAX,
            job: None,
            ..me
        };
        assert!(!is_dead(&elsewhere), "another host's owner is never taken for dead");
    }
}
