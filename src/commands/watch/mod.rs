//! `fsynclab watch`: the slow sync calls of running processes (or of the whole machine) with
//! their parts, printed as they happen by the BPF tracer ([`crate::explain::bpf`]), and the
//! percentiles of every call at the end.
//!
//! Phases: read the options into the tracer's settings (the processes must exist); refuse
//! in one line where BPF cannot run; load and attach; follow the slow calls until Ctrl-C or
//! `--duration`; read the kernel's latency histograms and print the summary. Nothing is
//! kept per call in user space, so memory stays bounded however long it watches; dropping
//! the tracer (or the process dying) detaches the program.

use std::fs;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};

use crate::cli::WatchArgs;
use crate::error::Usage;
use crate::explain::bpf::symbols::KernelSymbols;
use crate::explain::bpf::{self, BpfTracer, Filter, Settings};

mod text;

/// How often the loop looks at Ctrl-C and the deadline while no call comes.
const TICK: Duration = Duration::from_millis(100);

pub(crate) fn watch(args: &WatchArgs) -> Result<i32> {
    let (threshold, stack_over, duration) = args.durations()?;
    let settings = settings(args, threshold, stack_over)?;
    if let Some(why) = bpf::unavailable() {
        bail!(why);
    }
    let symbols = KernelSymbols::load()?;
    let stop = crate::signals::watch().context("installing the signal handlers")?;
    let tracer = BpfTracer::start(&settings, &symbols)?;
    let started = Instant::now();
    note!("{}", text::watching(&settings, duration));

    // Follow: each slow call printed as the kernel sends it.
    let mut printed = 0u64;
    let deadline = duration.map(|d| started + d);
    let go_on = || !stop.is_set() && deadline.is_none_or(|d| Instant::now() < d);
    tracer.follow(TICK, go_on, |call| {
        printed += 1;
        println!("{}", text::call_line(&call, &symbols, started));
    })?;

    // Summary: every call, from the kernel's histograms.
    let latencies = tracer.latencies()?;
    let names = tracer.process_names()?;
    let lost = tracer.lost()?;
    let cost = tracer.run_time();
    drop(tracer);
    print!(
        "{}",
        text::summary(&latencies, &names, printed, threshold, started.elapsed())
    );
    if cost.runs > 0 {
        let elapsed = started.elapsed().as_secs_f64();
        println!(
            "the BPF programs ran {} times for {} of CPU in all ({} a run, {:.3}% of one CPU)",
            cost.runs,
            crate::units::format_latency_ns(cost.ns),
            crate::units::format_latency_ns(cost.ns / cost.runs),
            cost.ns as f64 / 1e9 / elapsed * 100.0
        );
    }
    if lost.calls + lost.records + lost.histogram > 0 {
        note!(
            "lost in the kernel: {} calls not followed, {} slow calls not sent, {} histogram entries",
            lost.calls,
            lost.records,
            lost.histogram
        );
    }
    Ok(0)
}

/// The options read into the tracer's settings; a process that does not exist is a usage
/// error.
fn settings(args: &WatchArgs, threshold: Duration, stack_over: Duration) -> Result<Settings> {
    if !args.pid.is_empty() && args.comm.is_some() {
        return Err(Usage("--pid and --comm: give one of them (neither watches every process)".into()).into());
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
    } else {
        Filter::All
    };
    Ok(Settings {
        filter,
        report_threshold: threshold,
        stack_threshold: stack_over,
    })
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
