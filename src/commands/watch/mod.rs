//! `fsynclab watch`: the slow sync calls of running processes (or of the whole machine) with
//! their parts, printed as they happen by the BPF tracer ([`crate::explain::bpf`]), and the
//! percentiles of every call at the end.
//!
//! Phases: read the options into the tracer's settings ([`filter`]: the processes, the
//! cgroup must exist); refuse in one line where BPF cannot run; open the results store; load
//! and attach; follow the slow calls until Ctrl-C, SIGTERM or `--duration`; read the
//! kernel's latency histograms, print the summary and record the watch as a run
//! ([`record`]). Per call, user space keeps only the slowest calls' parts, so memory stays
//! bounded however long it watches; dropping the tracer (or the process dying) detaches the
//! program.

use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};

use crate::cli::WatchArgs;
use crate::explain::bpf::attribute::attribution;
use crate::explain::bpf::symbols::KernelSymbols;
use crate::explain::bpf::{self, BpfTracer};
use crate::measure::RunClock;
use crate::recording::Recording;

mod ended;
mod filter;
mod record;
mod text;

/// How often the loop looks at Ctrl-C and the deadline while no call comes.
const TICK: Duration = Duration::from_millis(100);

pub(crate) fn watch(args: &WatchArgs) -> Result<i32> {
    let (threshold, stack_over, duration) = args.durations()?;
    let settings = filter::settings(args, threshold, stack_over)?;
    if let Some(why) = bpf::unavailable() {
        bail!(why);
    }
    let mut recording = Recording::open(args.record.store.as_deref(), args.record.no_store)?;
    let symbols = KernelSymbols::load()?;
    let stop = crate::signals::watch().context("installing the signal handlers")?;
    let cpu_before = record::process_cpu_ns();
    let tracer = BpfTracer::start(&settings, &symbols)?;
    let clock = RunClock::start();
    let started = Instant::now();
    let started_at = crate::result::now_rfc3339();
    note!("{}", text::watching(&settings, duration));

    // Follow: each slow call printed as the kernel sends it, the slowest kept.
    let mut printed = 0u64;
    let mut slowest = record::Slowest::default();
    let deadline = duration.map(|d| started + d);
    // A watch of processes by id ends with the last of them, as `strace -p` does.
    let pids = match &settings.filter {
        bpf::Filter::Processes(pids) => pids.clone(),
        _ => Vec::new(),
    };
    // Each tick, and the processes that ended taken out of the kernel's maps now and then
    // ([`ended`]). Not in a watch of processes by id: it follows those only, and each keeps
    // its row (`python3[812]`) however it ends. An error taking them out is said and ends
    // the taking, not the watch: what was taken is counted, the rest stays in the kernel's
    // maps, each process under its own row.
    let mut folds_the_ended = pids.is_empty();
    let mut ended = ended::Ended::default();
    let mut take_ended = |ended: &mut ended::Ended, now_anyway: bool| {
        if folds_the_ended {
            if let Err(e) = ended.take(&tracer, now_anyway) {
                note!("fsynclab watch: {e:#}; the processes that end from now on keep a row each");
                folds_the_ended = false;
            }
        }
    };
    let mut all_ended = false;
    let go_on = || {
        take_ended(&mut ended, false);
        all_ended = !pids.is_empty() && !pids.iter().any(|&pid| ended::alive(pid));
        !all_ended && !stop.is_set() && deadline.is_none_or(|d| Instant::now() < d)
    };
    tracer.follow(TICK, go_on, |call| {
        printed += 1;
        let explained = attribution(&call, &symbols, clock.origin_monotonic_ns(), stack_over);
        println!("{}", text::call_line(&call, &explained, started));
        slowest.offer(explained);
    })?;
    if all_ended {
        note!(
            "fsynclab watch: process{} {} ended",
            if pids.len() == 1 { "" } else { "es" },
            pids.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
        );
    }
    let interrupted = stop.is_set() && deadline.is_some_and(|d| Instant::now() < d);

    // Summary: every call, from the kernel's histograms and the processes taken out of them.
    take_ended(&mut ended, true);
    let latencies = tracer.latencies()?;
    let names = tracer.process_names()?;
    let lost = tracer.lost()?;
    let cost = tracer.run_time();
    drop(tracer);
    let elapsed = started.elapsed();
    print!(
        "{}",
        text::summary(&latencies, &names, &ended, printed, threshold, elapsed)
    );
    if cost.runs > 0 {
        println!(
            "the BPF programs ran {} times for {} of CPU in all ({} a run, {:.3}% of one CPU)",
            cost.runs,
            crate::units::format_latency_ns(cost.ns),
            crate::units::format_latency_ns(cost.ns / cost.runs),
            cost.ns as f64 / 1e9 / elapsed.as_secs_f64() * 100.0
        );
    } else if cost.asked {
        println!("the BPF programs' run time could not be counted (this kernel refused bpf_enable_stats)");
    } else {
        println!("the BPF programs' run time was not counted (--bpf-stats counts it)");
    }
    if lost.calls + lost.records + lost.histogram > 0 {
        note!(
            "lost in the kernel: {} calls not followed, {} slow calls not sent, {} histogram entries",
            lost.calls,
            lost.records,
            lost.histogram
        );
    }

    // Recorded: a run of the results store.
    let watched = record::Watched {
        watched: text::whom(&settings.filter),
        params: filter::params(args, &settings),
        threshold,
        started_at,
        duration_s: elapsed.as_secs_f64(),
        interrupted,
        latencies,
        names,
        ended,
        slow_calls: printed,
        slowest,
        lost,
        run_time: cost,
        interrupt_wakers_by: crate::explain::run::InterruptWakersBy::of(&symbols),
        cpu_ns: record::process_cpu_ns().saturating_sub(cpu_before),
        environment: crate::environment::fingerprint(&filter::target_of(&settings.filter)),
    };
    recording.record_and_say(&mut watched.into_result())?;
    Ok(0)
}
