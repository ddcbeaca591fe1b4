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
use crate::error::Usage;
use crate::explain::attribution::{Attribution, Cause, Part};
use crate::explain::bpf::attribute::attribution;
use crate::explain::bpf::symbols::KernelSymbols;
use crate::explain::bpf::{self, ended, BpfTracer};
use crate::measure::RunClock;
use crate::recording::Recording;
use crate::run::cell::{self, Say};

mod filter;
mod record;
mod text;

/// How often the loop looks at Ctrl-C and the deadline while no call comes.
const TICK: Duration = Duration::from_millis(100);

pub(crate) fn watch(args: &WatchArgs) -> Result<i32> {
    let (threshold, stack_over, duration) = args.durations()?;
    let settings = filter::settings(args, threshold, stack_over)?;
    // No root is bad input, as for every command that needs it (exit status 2); the other
    // reasons are the machine's.
    if !crate::sys::is_root() {
        return Err(
            Usage("fsynclab watch traces the kernel with BPF, which needs root: run it with sudo".into()).into(),
        );
    }
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
    note!("{}", bpf::hooks::line(tracer.hooks()));
    if args.detail.is_none() && settings.filter == bpf::Filter::All {
        note!("{}", text::WHOLE_MACHINE_DETAIL);
    }

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
    let out = Stdout::default();
    let mut go_on = || {
        take_ended(&mut ended, false);
        all_ended = !pids.is_empty() && !pids.iter().any(|&pid| ended::alive(pid));
        !all_ended && !stop.is_set() && deadline.is_none_or(|d| Instant::now() < d)
    };
    tracer.follow(
        TICK,
        || out.open() && go_on(),
        |call| {
            printed += 1;
            let explained = attribution(&call, &symbols, clock.origin_monotonic_ns(), stack_over);
            let explained = unsplit_below(settings.detail, call.counted, explained);
            out.line(&text::call_line(&call, &explained, started));
            slowest.offer(explained);
        },
    )?;
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
    let hooks = tracer.hooks().clone();
    drop(tracer);
    let elapsed = started.elapsed();
    out.text(&text::summary(&latencies, &names, &ended, printed, threshold, elapsed));
    if cost.runs > 0 {
        out.line(&format!(
            "the BPF programs ran {} times for {} of CPU in all ({} a run, {:.3}% of one CPU)",
            cost.runs,
            crate::units::format_latency_ns(cost.ns),
            crate::units::format_latency_ns(cost.ns / cost.runs),
            cost.ns as f64 / 1e9 / elapsed.as_secs_f64() * 100.0
        ));
    } else if cost.asked {
        out.line("the BPF programs' run time could not be counted (this kernel refused bpf_enable_stats)");
    } else {
        out.line("the BPF programs' run time was not counted (--bpf-stats counts it)");
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
        hooks,
        interrupt_wakers_by: crate::explain::explanation::InterruptWakersBy::of(&symbols),
        cpu_ns: record::process_cpu_ns().saturating_sub(cpu_before),
        environment: crate::environment::fingerprint(&filter::target_of(&settings.filter)),
    };
    cell::record(&mut recording, &mut watched.into_result(), None, Say::Stored)?;
    out.status()
}

/// The watch's stdout. The first write that fails ends the watch, which is still summed up
/// on stderr's side and recorded: a reader that went away (`| head`) ends it quietly with
/// 141, as a shell tool ends on SIGPIPE; any other failure (`> /dev/full`) is a one-line
/// error once the watch is stored.
#[derive(Default)]
struct Stdout {
    failed: std::cell::RefCell<Option<std::io::Error>>,
}

impl Stdout {
    /// Whether nothing written so far has failed.
    fn open(&self) -> bool {
        self.failed.borrow().is_none()
    }

    fn line(&self, line: &str) {
        self.text(&format!("{line}\n"));
    }

    /// Writes `text` whole (and flushes it, so that a line is seen as it happens), unless a
    /// write failed before.
    fn text(&self, text: &str) {
        use std::io::Write as _;
        if !self.open() {
            return;
        }
        let mut out = std::io::stdout().lock();
        if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            *self.failed.borrow_mut() = Some(e);
        }
    }

    /// The watch's exit status once it is recorded.
    fn status(self) -> Result<i32> {
        match self.failed.into_inner() {
            None => Ok(0),
            Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(141),
            Some(e) => Err(anyhow::Error::new(e).context("cannot write to stdout; the watch was stored")),
        }
    }
}

/// A call watched without the scheduler's hooks (`--detail latency`): split by its task's
/// scheduler counters where the kernel keeps them (`counted`: on a CPU, waiting for one,
/// and asleep, unnamed), else one part, as the program saw no time off the CPU and would
/// put all of it on the CPU, which it does not know.
fn unsplit_below(detail: bpf::Detail, counted: bool, mut call: Attribution) -> Attribution {
    if detail >= bpf::Detail::Sleeps || counted {
        return call;
    }
    call.parts = vec![Part {
        cause: Cause::Unattributed {
            reason: "not split: watched with --detail latency, without the scheduler's hooks, and the task's scheduler counters could not be read (a kernel without CONFIG_SCHED_INFO, or a task outside the fair class)".into(),
        },
        ns: call.latency_ns,
        waits: 0,
    }];
    call
}
