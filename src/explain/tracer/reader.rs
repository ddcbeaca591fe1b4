//! The reader: a thread that drains each instance's trace pipe when one of its per-CPU
//! buffers is half full, stops tracing when the trace reaches its budget, reads the text
//! into events once tracing is over, and counts what the kernel overwrote or dropped.

use std::io::Read as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;

use super::super::events::{ParsedTrace, TraceParser};
use super::CHECK_INTERVAL;
use crate::measure::clock::monotonic_ns;
use crate::testbed::tracefs::Instance;

/// Overwritten plus dropped events in one `per_cpu/cpuN/stats` file.
pub(super) fn parse_cpu_stats_lost(stats: &str) -> u64 {
    stats
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| matches!(k.trim(), "overrun" | "dropped events"))
        .filter_map(|(_, v)| v.trim().parse::<u64>().ok())
        .sum()
}

/// How full a CPU's ring buffer may get before the reader drains it.
pub(super) struct Fill {
    /// `per_cpu/cpuN/stats` of each CPU, kept open.
    stats: Vec<std::fs::File>,
    /// Unread bytes in one CPU's buffer that trigger a drain: half its size.
    threshold_bytes: u64,
}

impl Fill {
    pub(super) fn open(instance: &Instance, buffer_kb_per_cpu: u32) -> Fill {
        let stats = std::fs::read_dir(instance.path("per_cpu"))
            .map(|d| {
                d.filter_map(|e| std::fs::File::open(e.ok()?.path().join("stats")).ok())
                    .collect()
            })
            .unwrap_or_default();
        Fill {
            stats,
            threshold_bytes: u64::from(buffer_kb_per_cpu) * 1024 / 2,
        }
    }

    /// Whether some CPU's buffer holds more unread bytes than the threshold (`bytes:` in
    /// its stats, ftrace.rst "per_cpu/cpuX/stats").
    pub(super) fn over(&self) -> bool {
        use std::os::unix::fs::FileExt as _;
        let mut buf = [0u8; 512];
        self.stats.iter().any(|f| {
            let n = f.read_at(&mut buf, 0).unwrap_or(0);
            String::from_utf8_lossy(&buf[..n])
                .lines()
                .find_map(|l| l.strip_prefix("bytes:"))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .is_some_and(|b| b > self.threshold_bytes)
        })
    }
}

/// One instance as the reader reads it.
pub(super) struct Source {
    pub(super) pipe: std::fs::File,
    pub(super) fill: Fill,
    /// Its `tracing_on`, turned off when the trace reaches its budget.
    pub(super) tracing_on: PathBuf,
}

/// What the reader read.
pub(super) struct Read {
    pub(super) parsed: ParsedTrace,
    /// The raw text, when asked for.
    pub(super) text: Option<String>,
    /// CPU time of the reader thread, ns.
    pub(super) cpu_ns: u64,
    /// Bytes of trace text read.
    pub(super) bytes: u64,
    /// When tracing was stopped because the trace reached its budget (CLOCK_MONOTONIC).
    pub(super) cut_at_ns: Option<u64>,
}

/// The reader thread. Reading `trace_pipe` makes the kernel format every event as text, in
/// this thread, which costs CPU the measurement would feel; so a buffer is drained only
/// when one of its CPUs' is half full (checked every [`CHECK_INTERVAL`]) and once at the
/// end, after tracing is off, and the text is read into events only then (reading it as it
/// came made the reader fall behind a busy run, and the kernel dropped events). Once
/// `budget_bytes` of text have been read, tracing is turned off: what was traced until then
/// is kept and the rest of the run is not explained, so that a run of a million calls
/// cannot fill the memory with its trace. Each piece of text is dropped once read.
pub(super) fn read_pipes(sources: Vec<Source>, budget_bytes: u64, keep_text: bool, stop: &AtomicBool) -> Result<Read> {
    let mut pieces: Vec<Vec<Vec<u8>>> = sources.iter().map(|_| Vec::new()).collect();
    let mut sources = sources;
    let mut buf = vec![0u8; 1 << 16];
    let mut bytes = 0u64;
    let mut cut_at_ns = None;
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        for (i, source) in sources.iter_mut().enumerate() {
            if !(stopping || source.fill.over()) {
                continue;
            }
            drain(&mut source.pipe, &mut buf, |chunk| {
                bytes += chunk.len() as u64;
                pieces[i].push(chunk.to_vec());
            })?;
        }
        if bytes >= budget_bytes && cut_at_ns.is_none() {
            cut_at_ns = Some(monotonic_ns());
            for source in &sources {
                let _ = std::fs::write(&source.tracing_on, "0");
            }
        }
        if stopping {
            break;
        }
        std::thread::park_timeout(CHECK_INTERVAL);
    }
    let mut parsed = ParsedTrace::default();
    let mut text = keep_text.then(String::new);
    for source_pieces in pieces {
        let mut parser = TraceParser::default();
        for piece in source_pieces {
            parser.feed(&piece);
            if let Some(t) = text.as_mut() {
                t.push_str(&String::from_utf8_lossy(&piece));
            }
        }
        let part = parser.finish();
        if parsed.events.is_empty() {
            parsed.events = part.events;
        } else {
            parsed.events.extend(part.events);
        }
        parsed.lost_events += part.lost_events;
        parsed.unparsed_lines += part.unparsed_lines;
    }
    // Each instance's events are in time order; together they must be too. The sort is
    // stable: a stack stays after the switch it belongs to.
    if sources.len() > 1 {
        parsed.events.sort_by_key(|e| e.ts_ns);
    }
    Ok(Read {
        parsed,
        text,
        cpu_ns: thread_cpu_ns(),
        bytes,
        cut_at_ns,
    })
}

/// Reads `trace_pipe` (non-blocking) until it is empty, giving each piece to `take`.
fn drain(pipe: &mut std::fs::File, buf: &mut [u8], mut take: impl FnMut(&[u8])) -> Result<()> {
    loop {
        match pipe.read(buf) {
            Ok(0) => return Ok(()),
            Ok(n) => take(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) => return Err(anyhow::anyhow!("cannot read trace_pipe: {e}")),
        }
    }
}

/// CPU time (user + system) of the calling thread, ns (`getrusage(RUSAGE_THREAD)`).
pub(crate) fn thread_cpu_ns() -> u64 {
    use nix::sys::resource::{getrusage, UsageWho};
    let Ok(ru) = getrusage(UsageWho::RUSAGE_THREAD) else {
        return 0;
    };
    let tv = |t: nix::sys::time::TimeVal| t.tv_sec() as u64 * 1_000_000_000 + t.tv_usec() as u64 * 1_000;
    tv(ru.user_time()) + tv(ru.system_time())
}
