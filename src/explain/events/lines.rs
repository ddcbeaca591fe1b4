//! A trace's lines: `TASK-PID [CPU] FLAGS SECONDS.MICROS: EVENT: BODY`, the ` => function`
//! frames of a stack, and `CPU:N [LOST M EVENTS]`, gathered into events in time order.

use super::body::symbol;
use super::{Event, EventKind};

/// What a whole trace text held.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ParsedTrace {
    pub(crate) events: Vec<Event>,
    /// Events the kernel dropped because the reader fell behind (`[LOST N EVENTS]` lines).
    pub(crate) lost_events: u64,
    /// Lines that were neither an event, a stack frame, a comment nor a lost-events note.
    pub(crate) unparsed_lines: u64,
}

/// One line of the trace text, as far as its header goes.
#[derive(Debug, PartialEq)]
enum Line<'a> {
    Event {
        ts_ns: u64,
        cpu: u32,
        pid: u32,
        comm: &'a str,
        name: &'a str,
        body: &'a str,
    },
    StackStart {
        ts_ns: u64,
        cpu: u32,
        pid: u32,
        comm: &'a str,
    },
    Frame(&'a str),
    Lost(u64),
    Comment,
}

fn parse_line(line: &str) -> Option<Line<'_>> {
    if line.starts_with('#') || line.trim().is_empty() {
        return Some(Line::Comment);
    }
    if let Some(frame) = line.strip_prefix(" => ") {
        return Some(Line::Frame(frame));
    }
    if let Some(rest) = line.strip_prefix("CPU:") {
        // `CPU:1 [LOST 123 EVENTS]`
        let n = rest.split_once("[LOST ")?.1.split_whitespace().next()?;
        return Some(Line::Lost(n.parse().ok()?));
    }
    // The CPU column `[001]` ends the task field; the task name may contain anything, so
    // take the first `[digits] ` whose left side ends in `-PID`.
    let mut search = 0;
    while let Some(open) = line[search..].find('[').map(|i| search + i) {
        search = open + 1;
        let Some(close) = line[open..].find("] ").map(|i| open + i) else {
            break;
        };
        let cpu_text = &line[open + 1..close];
        if cpu_text.is_empty() || !cpu_text.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let task = line[..open].trim();
        let Some((comm, pid)) = task.rsplit_once('-') else {
            continue;
        };
        let Ok(pid) = pid.parse() else { continue };
        let cpu = cpu_text.parse().ok()?;
        let after = &line[close + 2..];
        let mut words = after.trim_start().splitn(2, ' ');
        let _flags = words.next()?;
        let rest = words.next()?.trim_start();
        let (ts, rest) = rest.split_once(": ")?;
        let ts_ns = parse_timestamp(ts)?;
        if rest.starts_with("<stack trace>") {
            return Some(Line::StackStart { ts_ns, cpu, pid, comm });
        }
        let (name, body) = match rest.split_once(": ") {
            Some((name, body)) => (name, body),
            None => (rest.trim_end().strip_suffix(':').unwrap_or(rest.trim_end()), ""),
        };
        return Some(Line::Event {
            ts_ns,
            cpu,
            pid,
            comm,
            name,
            body,
        });
    }
    None
}

/// `1635.690016` (seconds, 6 decimals) → ns.
fn parse_timestamp(ts: &str) -> Option<u64> {
    let (secs, frac) = ts.trim().split_once('.')?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac_ns: u64 = format!("{frac:0<9}").parse().ok()?;
    Some(secs.parse::<u64>().ok()? * 1_000_000_000 + frac_ns)
}

/// Parses a whole trace text (from `trace` or everything read from `trace_pipe`).
pub(crate) fn parse_trace(text: &str) -> ParsedTrace {
    let mut out = ParsedTrace::default();
    let mut stack: Option<(Event, Vec<String>)> = None;
    let finish = |stack: &mut Option<(Event, Vec<String>)>, events: &mut Vec<Event>| {
        if let Some((mut ev, frames)) = stack.take() {
            ev.kind = EventKind::Stack { frames };
            events.push(ev);
        }
    };
    for line in text.lines() {
        match parse_line(line) {
            Some(Line::Frame(f)) => match &mut stack {
                Some((_, frames)) => frames.push(symbol(f)),
                None => out.unparsed_lines += 1,
            },
            Some(Line::StackStart { ts_ns, cpu, pid, comm }) => {
                finish(&mut stack, &mut out.events);
                stack = Some((
                    Event {
                        ts_ns,
                        cpu,
                        pid,
                        comm: comm.to_string(),
                        kind: EventKind::Stack { frames: Vec::new() },
                    },
                    Vec::new(),
                ));
            }
            Some(Line::Event {
                ts_ns,
                cpu,
                pid,
                comm,
                name,
                body,
            }) => {
                finish(&mut stack, &mut out.events);
                out.events.push(Event {
                    ts_ns,
                    cpu,
                    pid,
                    comm: comm.to_string(),
                    kind: EventKind::parse(name, body),
                });
            }
            Some(Line::Lost(n)) => {
                finish(&mut stack, &mut out.events);
                out.lost_events += n;
            }
            Some(Line::Comment) => {}
            None => out.unparsed_lines += 1,
        }
    }
    finish(&mut stack, &mut out.events);
    // trace_pipe merges the per-CPU buffers while they are being written, so an event can
    // come out after a later one from another CPU; the attribution reads them in time
    // order. The sort is stable: a stack stays after the switch it belongs to.
    out.events.sort_by_key(|e| e.ts_ns);
    out
}
