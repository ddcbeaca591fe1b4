//! What `fsynclab watch` follows, read from its options: every process, some processes
//! (`--pid`), a command name (`--comm`) or a cgroup (`--cgroup`), each checked before
//! anything is loaded (a process that does not exist, a path that is no cgroup v2 directory
//! is a one-line usage error); and how they are recorded in the run.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

use crate::cli::WatchArgs;
use crate::error::Usage;
use crate::explain::bpf::{Detail, Filter, Settings, Writes};
use crate::kernel::mountinfo::{mount_of, mounts};

/// The options as a run's parameters.
pub(super) fn params(args: &WatchArgs, settings: &Settings) -> BTreeMap<String, String> {
    let mut params = BTreeMap::new();
    let filter = match &settings.filter {
        Filter::All => "all".to_string(),
        Filter::Processes(pids) => {
            let list: Vec<String> = pids.iter().map(u32::to_string).collect();
            format!("pid={}", list.join(","))
        }
        Filter::Comm(c) => format!("comm={c}"),
        Filter::Cgroup(dir) => format!("cgroup={}", dir.display()),
    };
    params.insert("watch".to_string(), filter);
    params.insert("threshold".to_string(), args.threshold.clone());
    params.insert("stack_over".to_string(), args.stack_over.clone());
    if let Some(d) = &args.duration {
        params.insert("duration".to_string(), d.clone());
    }
    let stats = if settings.run_time_stats { "on" } else { "off" };
    params.insert("bpf_stats".to_string(), stats.to_string());
    params.insert("detail".to_string(), settings.detail.name().to_string());
    params
}

/// The directory whose filesystem and device the result's environment describes: the
/// working directory of the first process watched, else the root.
pub(super) fn target_of(filter: &Filter) -> PathBuf {
    let root = Path::new("/").to_path_buf();
    match filter {
        Filter::Processes(pids) => pids
            .first()
            .and_then(|pid| fs::read_link(format!("/proc/{pid}/cwd")).ok())
            .unwrap_or(root),
        _ => root,
    }
}

/// The options read into the tracer's settings; a process that does not exist is a usage
/// error.
pub(super) fn settings(args: &WatchArgs, threshold: Duration, stack_over: Duration) -> Result<Settings> {
    let given: Vec<&str> = [
        ("--pid", !args.pid.is_empty()),
        ("--comm", args.comm.is_some()),
        ("--cgroup", args.cgroup.is_some()),
    ]
    .into_iter()
    .filter_map(|(flag, given)| given.then_some(flag))
    .collect();
    if given.len() > 1 {
        return Err(Usage(format!(
            "{}: give one of them (none of them watches every process)",
            given.join(" and ")
        ))
        .into());
    }
    let filter = if !args.pid.is_empty() {
        let mut pids = Vec::new();
        for text in &args.pid {
            let pid = text
                .trim()
                .parse()
                .map_err(|_| Usage(format!("--pid {text}: expected a process id, a number like 812")))?;
            pids.push(thread_group(pid)?);
        }
        pids.sort_unstable();
        pids.dedup();
        Filter::Processes(pids)
    } else if let Some(comm) = &args.comm {
        if comm.is_empty() || comm.len() > 15 {
            return Err(Usage(format!(
                "--comm {comm}: a command name is 1 to 15 bytes, as in /proc/PID/comm"
            ))
            .into());
        }
        Filter::Comm(comm.clone())
    } else if let Some(dir) = &args.cgroup {
        Filter::Cgroup(cgroup_dir(dir)?)
    } else {
        Filter::All
    };
    Ok(Settings {
        report_threshold: threshold,
        stack_threshold: stack_over,
        run_time_stats: args.bpf_stats,
        follow_forks_of: None,
        every_call: false,
        writes: Writes::Durable,
        detail: detail(args.detail.as_deref(), &filter)?,
        filter,
    })
}

/// The level `--detail` names, or where it is not given the watch's default: `disk` for
/// the processes named (their calls split and each sleep named, at a cost to every switch,
/// wakeup and block request of the machine while one of their calls is in flight),
/// `latency` for the whole machine, whose calls are in flight nearly always on a busy
/// server, so that every task would pay the scheduler's hooks (in Debian's 6.1, 9-12% of a
/// 4 KiB fsync at `disk`, 3-4% at `latency`: BENCHMARKS.md).
fn detail(given: Option<&str>, filter: &Filter) -> Result<Detail, Usage> {
    match given {
        Some(name) => {
            Detail::from_name(name).ok_or_else(|| Usage(format!("--detail {name}: expected latency, sleeps or disk")))
        }
        None if *filter == Filter::All => Ok(Detail::Latency),
        None => Ok(Detail::Disk),
    }
}

/// The process a thread id belongs to (`Tgid:` of /proc/PID/status, Documentation/
/// filesystems/proc.rst): a thread's id given to --pid watches its whole process.
fn thread_group(pid: u32) -> Result<u32> {
    let status = fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|_| Usage(format!("--pid {pid}: no such process")))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| Usage(format!("--pid {pid}: /proc/{pid}/status has no Tgid")).into())
}

/// Where cgroup v2 is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` beside v1).
fn cgroup2_mount() -> Option<PathBuf> {
    mounts()
        .into_iter()
        .rev()
        .find(|m| m.fstype == "cgroup2")
        .map(|m| PathBuf::from(m.mount_point))
}

/// The cgroup directory `--cgroup` names: a path, or one relative to where cgroup v2 is
/// mounted (`system.slice/postgresql.service`); it must be a directory of a cgroup2
/// filesystem (Documentation/admin-guide/cgroup-v2.rst).
fn cgroup_dir(given: &Path) -> Result<PathBuf, Usage> {
    let mount = cgroup2_mount();
    let candidates =
        std::iter::once(given.to_path_buf()).chain(mount.iter().filter(|_| given.is_relative()).map(|m| m.join(given)));
    let where_v2 = || match &mount {
        Some(m) => format!("cgroup v2 is mounted at {}", m.display()),
        None => "this machine has no cgroup v2 mounted".to_string(),
    };
    let Some(dir) = candidates.filter(|p| p.is_dir()).find_map(|p| fs::canonicalize(p).ok()) else {
        return Err(Usage(format!(
            "--cgroup {}: no such cgroup directory ({})",
            given.display(),
            where_v2()
        )));
    };
    match mount_of(&mounts(), &dir) {
        Some(m) if m.fstype == "cgroup2" => Ok(dir),
        _ => Err(Usage(format!(
            "--cgroup {}: not a cgroup v2 directory ({})",
            given.display(),
            where_v2()
        ))),
    }
}
