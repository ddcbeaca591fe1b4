//! The reader: a thread that drains each instance's trace pipe when one of its per-CPU
//! buffers is half full and hands the text to a parser thread that reads it into events as
//! it comes (the text is not kept); stops tracing when the trace reaches its budget; and
//! counts what the kernel overwrote or dropped.

use std::io::Read as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use anyhow::Result;

use super::super::events::{Event, ParsedTrace, TraceParser};
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
/// end, after tracing is off. Each drain's text goes to a second thread, the parser, that
/// reads it into events and drops it: the text is never kept (unless `keep_text`), and
/// the drains are not held up by the parsing (a reader that parsed between drains could
/// fall behind a busy run and the kernel would drop events). Once the events read hold
/// `budget_bytes` of memory ([`TraceParser::held_bytes`], plus the text the parser has not
/// read yet), tracing is turned off: what was
/// traced until then is kept and the rest of the run is not explained, so that a run of a
/// million calls cannot fill the memory with its events. The budget counts the events, not
/// the text read, since the text is not kept: an event holds 64 bytes (and its stack
/// shared with the others that took it) for about 170 bytes of text. The CPU time returned
/// is both threads'.
pub(super) fn read_pipes(sources: Vec<Source>, budget_bytes: u64, keep_text: bool, stop: &AtomicBool) -> Result<Read> {
    let (to_parser, pieces) = std::sync::mpsc::channel::<(usize, Vec<u8>)>();
    let count = sources.len();
    // What the parsed events hold, and the text parsed so far (the rest waits in memory).
    let held = std::sync::Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let held_by_parser = std::sync::Arc::clone(&held);
    let parser = std::thread::Builder::new()
        .name("trace-parser".into())
        .spawn(move || parse_pieces(count, &pieces, keep_text, &held_by_parser))
        .map_err(|e| anyhow::anyhow!("cannot start the trace parser thread: {e}"))?;
    let mut sources = sources;
    let mut buf = vec![0u8; 1 << 16];
    let mut bytes = 0u64;
    let mut cut_at_ns = None;
    let drained: Result<()> = (|| loop {
        let stopping = stop.load(Ordering::SeqCst);
        for (i, source) in sources.iter_mut().enumerate() {
            if !(stopping || source.fill.over()) {
                continue;
            }
            let mut piece = Vec::new();
            drain(&mut source.pipe, &mut buf, |chunk| {
                bytes += chunk.len() as u64;
                piece.extend_from_slice(chunk);
                if piece.len() >= PIECE_BYTES {
                    let _ = to_parser.send((i, std::mem::take(&mut piece)));
                }
            })?;
            if !piece.is_empty() {
                let _ = to_parser.send((i, piece));
            }
        }
        let waiting = bytes.saturating_sub(held[1].load(Ordering::Relaxed));
        if held[0].load(Ordering::Relaxed) + waiting >= budget_bytes && cut_at_ns.is_none() {
            cut_at_ns = Some(monotonic_ns());
            for source in &sources {
                let _ = std::fs::write(&source.tracing_on, "0");
            }
        }
        if stopping {
            return Ok(());
        }
        std::thread::park_timeout(CHECK_INTERVAL);
    })();
    drop(to_parser);
    let (parsed, text, parser_cpu_ns) = parser
        .join()
        .map_err(|_| anyhow::anyhow!("the trace parser thread panicked"))?;
    drained?;
    Ok(Read {
        parsed,
        text,
        cpu_ns: thread_cpu_ns() + parser_cpu_ns,
        bytes,
        cut_at_ns,
    })
}

/// The most text the reader gathers before handing it to the parser.
const PIECE_BYTES: usize = 1 << 20;

/// The parser thread: reads the pieces of each of `count` sources into events as they
/// come, keeping `held` up to date with what they hold, until the reader hangs up; returns
/// the events of all sources in time order, the text when asked for, and its own CPU time.
fn parse_pieces(
    count: usize,
    pieces: &std::sync::mpsc::Receiver<(usize, Vec<u8>)>,
    keep_text: bool,
    held: &[AtomicU64; 2],
) -> (ParsedTrace, Option<String>, u64) {
    // The parser gives way to the measured threads: it runs at the lowest priority (nice
    // 19, setpriority(2) on Linux sets the calling thread's), and catches up when they
    // sleep or once tracing is over; the text it has not read yet counts in the budget.
    // SAFETY: setpriority reads only its integer arguments; who = 0 is the calling thread.
    let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
    let mut parsed_bytes = 0u64;
    let mut parsers: Vec<TraceParser> = (0..count).map(|_| TraceParser::default()).collect();
    let mut texts: Vec<String> = vec![String::new(); if keep_text { count } else { 0 }];
    for (i, piece) in pieces {
        if let Some(parser) = parsers.get_mut(i) {
            parser.feed(&piece);
        }
        if let Some(text) = texts.get_mut(i) {
            text.push_str(&String::from_utf8_lossy(&piece));
        }
        parsed_bytes += piece.len() as u64;
        held[0].store(parsers.iter().map(TraceParser::held_bytes).sum(), Ordering::Relaxed);
        held[1].store(parsed_bytes, Ordering::Relaxed);
    }
    let mut parsed = ParsedTrace::default();
    for part in parsers.into_iter().map(TraceParser::finish) {
        parsed.events = merge_by_time(std::mem::take(&mut parsed.events), part.events);
        parsed.lost_events += part.lost_events;
        parsed.unparsed_lines += part.unparsed_lines;
    }
    (parsed, keep_text.then(|| texts.concat()), thread_cpu_ns())
}

/// Two lists of events in time order as one; at equal times, `a`'s first (as a stable sort
/// of `a` then `b` would put them: a stack stays after the switch it belongs to).
pub(super) fn merge_by_time(a: Vec<Event>, b: Vec<Event>) -> Vec<Event> {
    if a.is_empty() {
        return b;
    }
    if b.is_empty() {
        return a;
    }
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if x.ts_ns <= y.ts_ns => a.next(),
            (Some(_), Some(_)) => b.next(),
            (Some(_), None) => a.next(),
            (None, Some(_)) => b.next(),
            (None, None) => return out,
        };
        out.extend(next);
    }
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
