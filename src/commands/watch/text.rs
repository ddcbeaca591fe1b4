//! What `fsynclab watch` prints: the line it starts with, one line per slow call with its
//! parts (largest first, adding up to the call), and the closing percentiles.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::explain::bpf::histogram::Buckets;
use crate::explain::bpf::record::{LongSleep, SlowCall, SyncKind};
use crate::explain::bpf::symbols::KernelSymbols;
use crate::explain::bpf::{Filter, Settings};
use crate::explain::stacks::{classify, top_frames, WaitKind};
use crate::units::{format_duration, format_latency_ns, human_size};

/// The line on stderr once the program is attached.
pub(super) fn watching(settings: &Settings, duration: Option<Duration>) -> String {
    let whom = whom(&settings.filter);
    let until = match duration {
        Some(d) => format!("for {}", format_duration(d)),
        None => "until Ctrl-C".to_string(),
    };
    format!(
        "watching the sync calls of {whom} over {} (stacks of sleeps over {}), {until}",
        format_duration(settings.report_threshold),
        format_duration(settings.stack_threshold)
    )
}

/// Whom a watch follows: `process 812, 813`, `every task named etcd`, `every process`.
pub(super) fn whom(filter: &Filter) -> String {
    match filter {
        Filter::All => "every process".to_string(),
        Filter::Processes(pids) => {
            let list: Vec<String> = pids.iter().map(u32::to_string).collect();
            format!("process {}", list.join(", "))
        }
        Filter::Comm(c) => format!("every task named {c}"),
        Filter::Cgroup(dir) => format!("the tasks of cgroup {}", dir.display()),
    }
}

/// One part of a call: what, how long, and how many stretches it was made of.
struct Part {
    what: String,
    ns: u64,
}

/// `  1.234s postgres[812/815] fdatasync(fd 7 /var/lib/...) 48.210ms: 31.0ms waiting for ...`
pub(super) fn call_line(call: &SlowCall, symbols: &KernelSymbols, started: Instant) -> String {
    let kind = call.kind.map_or("sync call", SyncKind::name);
    let mut line = format!(
        "{:>8.3}s {}[{}/{}] {kind}{} {}",
        started.elapsed().as_secs_f64(),
        call.comm,
        call.pid,
        call.tid,
        argument(call),
        format_latency_ns(call.latency_ns)
    );
    if call.ret < 0 {
        let _ = write!(
            line,
            " (failed: {})",
            std::io::Error::from_raw_os_error(-call.ret as i32)
        );
    }
    line.push(':');
    let mut parts = parts(call, symbols);
    parts.sort_by_key(|p| std::cmp::Reverse(p.ns));
    let shown: Vec<String> = parts
        .iter()
        .filter(|p| p.ns > 0)
        .map(|p| format!("{} {}", format_latency_ns(p.ns), p.what))
        .collect();
    let _ = write!(line, " {}", shown.join("; "));
    let m = call.meanwhile;
    let mut meanwhile = Vec::new();
    if m.flushes > 0 {
        meanwhile.push(format!(
            "{} cache flush(es) completed ({} each on average)",
            m.flushes,
            format_latency_ns(m.flush_ns / m.flushes)
        ));
    }
    if m.commits > 0 {
        meanwhile.push(format!(
            "{} jbd2 commit(s) ({} each)",
            m.commits,
            format_latency_ns(m.commit_ns / m.commits)
        ));
    }
    if m.write_bytes > 0 {
        meanwhile.push(format!("{} written", human_size(m.write_bytes)));
    }
    if !meanwhile.is_empty() {
        let _ = write!(line, " | meanwhile on the machine: {}", meanwhile.join(", "));
    }
    line
}

/// `(fd 7 /path)` for the calls on a file, read from /proc while the process still has it.
fn argument(call: &SlowCall) -> String {
    match call.kind {
        Some(k) if k.takes_fd() => match std::fs::read_link(format!("/proc/{}/fd/{}", call.pid, call.fd)) {
            Ok(path) => format!("(fd {} {})", call.fd, path.display()),
            Err(_) => format!("(fd {})", call.fd),
        },
        _ => String::new(),
    }
}

/// The call's parts, adding up to its latency: the long sleeps merged by what they waited
/// for, then the rest.
fn parts(call: &SlowCall, symbols: &KernelSymbols) -> Vec<Part> {
    let mut by_cause: BTreeMap<String, (u64, u32)> = BTreeMap::new();
    for sleep in &call.sleeps {
        let e = by_cause.entry(sleep_cause(sleep, symbols)).or_default();
        e.0 += sleep.ns;
        e.1 += 1;
    }
    let mut parts: Vec<Part> = by_cause
        .into_iter()
        .map(|(what, (ns, n))| Part {
            what: if n > 1 { format!("{what} ({n} sleeps)") } else { what },
            ns,
        })
        .collect();
    parts.push(Part {
        what: "on CPU".into(),
        ns: call.on_cpu_ns(),
    });
    parts.push(Part {
        what: "waiting for a CPU".into(),
        ns: call.runqueue_ns,
    });
    parts.push(Part {
        what: format!("in {} short sleeps (not named)", call.short_sleeps),
        ns: call.short_sleep_ns,
    });
    let beyond = call.long_sleeps.saturating_sub(call.sleeps.len() as u32);
    parts.push(Part {
        what: format!("in {beyond} more long sleeps"),
        ns: call.other_sleep_ns,
    });
    parts
}

/// What a long sleep waited for, from its stack, and who woke it.
fn sleep_cause(sleep: &LongSleep, symbols: &KernelSymbols) -> String {
    let frames = symbols.frames(&sleep.stack);
    let what = match classify(&frames) {
        WaitKind::DataWriteback => "waiting for data writeback".to_string(),
        WaitKind::JournalCommit => "waiting for a journal commit".to_string(),
        WaitKind::DeviceFlush => "waiting for a device cache flush".to_string(),
        WaitKind::DirtyThrottle => "dirty throttling".to_string(),
        WaitKind::JournalWrite | WaitKind::JournalHandles => "the journal's own work".to_string(),
        WaitKind::UserLock => "a lock of the program (futex)".to_string(),
        WaitKind::Other => match top_frames(&frames, 3) {
            f if f.is_empty() => "asleep (no kernel stack)".to_string(),
            f => format!("asleep in {}", f.join(" <- ")),
        },
    };
    if sleep.waker_tid == 0 {
        what
    } else {
        format!("{what}, woken by {}[{}]", sleep.waker_comm, sleep.waker_tid)
    }
}

/// The closing table: per process and kind, then per kind, the calls' count and percentiles.
pub(super) fn summary(
    latencies: &HashMap<(u32, SyncKind), Buckets>,
    names: &HashMap<u32, String>,
    printed: u64,
    threshold: Duration,
    elapsed: Duration,
) -> String {
    let mut out = format!(
        "\n{printed} calls over {} printed in {}; every call's latency (from the kernel's histograms, within 6.25%):\n",
        format_duration(threshold),
        crate::units::clock(elapsed)
    );
    if latencies.is_empty() {
        out.push_str("  no sync call was made\n");
        return out;
    }
    let _ = writeln!(
        out,
        "  {:<24} {:<16} {:>9} {:>10} {:>10} {:>10} {:>10}",
        "process", "call", "calls", "p50", "p90", "p99", "max"
    );
    let mut keys: Vec<&(u32, SyncKind)> = latencies.keys().collect();
    keys.sort();
    let mut per_kind: BTreeMap<SyncKind, Buckets> = BTreeMap::new();
    for key in keys {
        let b = &latencies[key];
        per_kind.entry(key.1).or_default().merge(b);
        let who = format!("{}[{}]", names.get(&key.0).map_or("?", String::as_str), key.0);
        row(&mut out, &who, key.1, b);
    }
    if latencies.len() > 1 {
        for (kind, b) in &per_kind {
            row(&mut out, "all", *kind, b);
        }
    }
    out
}

fn row(out: &mut String, who: &str, kind: SyncKind, b: &Buckets) {
    let q = |q: f64| b.quantile_ns(q).map_or("-".into(), format_latency_ns);
    let _ = writeln!(
        out,
        "  {who:<24} {:<16} {:>9} {:>10} {:>10} {:>10} {:>10}",
        kind.name(),
        b.count(),
        q(0.5),
        q(0.9),
        q(0.99),
        q(1.0)
    );
}
