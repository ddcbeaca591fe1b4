//! What `fsynclab watch` prints: the line it starts with, one line per slow call with its
//! parts (largest first, adding up to the call), and the closing percentiles.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::explain::attribution::Attribution;
use crate::explain::bpf::attribute::meanwhile;
use crate::explain::bpf::histogram::Buckets;
use crate::explain::bpf::record::{SlowCall, SyncKind};
use crate::explain::bpf::{Filter, Settings};
use crate::units::{format_duration, format_latency_ns};

use crate::explain::bpf::ended::Ended;

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

/// Said by a watch of the whole machine not told its `--detail`: what its default level
/// splits, and what the level that names the sleeps costs.
pub(super) const WHOLE_MACHINE_DETAIL: &str = "detail: latency, the default for the whole machine: each call split into time on a CPU, waiting for one, and asleep; --detail disk also names each sleep, at a cost to every task's switches";

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

/// `  1.234s postgres[812/815] fdatasync(fd 7 /var/lib/...) 48.210ms: 31.0ms waiting for ...;
/// 120.4us on CPU | woken by jbd2/sda1-8[412] | meanwhile on sda: ...`: the call and
/// its parts as they are recorded (`explained`, [`crate::explain::bpf::attribute`]), largest
/// first, then who ended its long sleeps and what completed on the machine meanwhile.
pub(super) fn call_line(call: &SlowCall, explained: &Attribution, started: Instant) -> String {
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
    let shown: Vec<String> = explained
        .parts
        .iter()
        .filter(|p| p.ns > 0)
        .map(|p| format!("{} {}", format_latency_ns(p.ns), p.cause))
        .collect();
    let _ = write!(line, ": {}", shown.join("; "));
    let mut wakers: Vec<String> = Vec::new();
    for s in call.sleeps.iter().filter(|s| s.waker_tid != 0) {
        let who = format!("{}[{}]", s.waker_comm, s.waker_tid);
        if !wakers.contains(&who) {
            wakers.push(who);
        }
    }
    if !wakers.is_empty() {
        let _ = write!(line, " | woken by {}", wakers.join(", "));
    }
    if let Some(meanwhile) = meanwhile(call) {
        let _ = write!(line, " | {meanwhile}");
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

/// The closing table: per process and kind, then per kind, the calls' count and percentiles.
pub(super) fn summary(
    latencies: &HashMap<(u32, SyncKind), Buckets>,
    names: &HashMap<u32, String>,
    ended: &Ended,
    printed: u64,
    threshold: Duration,
    elapsed: Duration,
) -> String {
    let mut out = format!(
        "\n{printed} calls over {} printed in {}; every call's latency (from the kernel's histograms, within 6.25%):\n",
        format_duration(threshold),
        crate::units::clock(elapsed)
    );
    if latencies.is_empty() && ended.by_name.is_empty() {
        out.push_str("  no sync call was made\n");
        return out;
    }
    let _ = writeln!(
        out,
        "  {:<24} {:<16} {:>9} {:>7} {:>10} {:>10} {:>10} {:>10}",
        "process", "call", "calls", "failed", "p50", "p90", "p99", "max"
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
    let mut rows = latencies.len();
    for (name, folded) in &ended.by_name {
        for (kind, b) in &folded.latencies {
            per_kind.entry(*kind).or_default().merge(b);
            row(&mut out, &Ended::label(name, folded), *kind, b);
            rows += 1;
        }
    }
    if rows > 1 {
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
        "  {who:<24} {:<16} {:>9} {:>7} {:>10} {:>10} {:>10} {:>10}",
        kind.name(),
        b.count(),
        b.failed(),
        q(0.5),
        q(0.9),
        q(0.99),
        q(1.0)
    );
}
