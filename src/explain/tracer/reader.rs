//! The reader: a thread that drains the trace pipe when a per-CPU buffer is half full, and
//! counts what the kernel overwrote or dropped.

use std::io::Read as _;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;

use super::CHECK_INTERVAL;
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

/// The reader thread. Reading `trace_pipe` makes the kernel format every event as text, in
/// this thread, which costs CPU the measurement would feel; so the buffer is drained only
/// when some CPU's buffer is half full (checked every [`CHECK_INTERVAL`]) and once at the
/// end, after tracing is off. Returns the text and the thread's own CPU time.
pub(super) fn read_pipe(mut pipe: std::fs::File, fill: Fill, stop: &AtomicBool) -> Result<(String, u64)> {
    let mut text = Vec::with_capacity(1 << 20);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        if stopping || fill.over() {
            drain(&mut pipe, &mut buf, &mut text)?;
        }
        if stopping {
            break;
        }
        std::thread::park_timeout(CHECK_INTERVAL);
    }
    Ok((String::from_utf8_lossy(&text).into_owned(), thread_cpu_ns()))
}

/// Reads `trace_pipe` (non-blocking) until it is empty.
pub(super) fn drain(pipe: &mut std::fs::File, buf: &mut [u8], text: &mut Vec<u8>) -> Result<()> {
    loop {
        match pipe.read(buf) {
            Ok(0) => return Ok(()),
            Ok(n) => text.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) => return Err(anyhow::anyhow!("cannot read trace_pipe: {e}")),
        }
    }
}

/// CPU time (user + system) of the calling thread, ns (`getrusage(RUSAGE_THREAD)`).
pub(crate) fn thread_cpu_ns() -> u64 {
    // SAFETY: zeroed rusage is a valid value to be overwritten.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return 0;
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}
