//! A trace's lines: `TASK-PID [CPU] FLAGS SECONDS.MICROS: EVENT: BODY`, the ` => function`
//! frames of a stack, and `CPU:N [LOST M EVENTS]`, gathered into events in time order.

use std::collections::HashMap;

use super::body::{symbol, SYSCALL_ENTER, SYSCALL_EXIT};
use super::{Event, EventKind, Frames};
use crate::measure::TaskName;

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
        head: Head<'a>,
        name: &'a str,
        body: &'a str,
        /// The flags column's context: a hardirq, a softirq or an NMI.
        in_interrupt: bool,
    },
    StackStart(Head<'a>),
    Frame(&'a str),
    Lost(u64),
    Comment,
}

/// What the start of an event's or a stack's line says: when, on which CPU, in which task.
#[derive(Debug, PartialEq)]
struct Head<'a> {
    ts_ns: u64,
    cpu: u32,
    pid: u32,
    tgid: Option<u32>,
    comm: &'a str,
}

impl Head<'_> {
    /// The event of `kind` the line heads.
    fn event(&self, kind: EventKind) -> Event {
        Event {
            ts_ns: self.ts_ns,
            cpu: self.cpu,
            pid: self.pid,
            tgid: self.tgid,
            comm: self.comm.into(),
            kind,
        }
    }
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
        let (task, tgid) = split_tgid(line[..open].trim());
        let Some((comm, pid)) = task.rsplit_once('-') else {
            continue;
        };
        let Ok(pid) = pid.parse() else { continue };
        let cpu = cpu_text.parse().ok()?;
        let after = &line[close + 2..];
        let mut words = after.trim_start().splitn(2, ' ');
        let flags = words.next()?;
        let rest = words.next()?.trim_start();
        let (ts, rest) = rest.split_once(": ")?;
        let head = Head {
            ts_ns: parse_timestamp(ts)?,
            cpu,
            pid,
            tgid,
            comm,
        };
        if rest.starts_with("<stack trace>") {
            return Some(Line::StackStart(head));
        }
        let (name, body) = match syscall(rest) {
            Some(named) => named,
            None => match rest.split_once(": ") {
                Some((name, body)) => (name, body),
                None => (rest.trim_end().strip_suffix(':').unwrap_or(rest.trim_end()), ""),
            },
        };
        return Some(Line::Event {
            head,
            name,
            body,
            in_interrupt: in_interrupt(flags),
        });
    }
    None
}

/// Whether the flags column (`d..2.`: irqs off, need-resched, the context, the preemption
/// depth...) says the event fired in a hardirq (`h`, or `H` inside a softirq), a softirq
/// (`s`) or an NMI (`z`, `Z`).
fn in_interrupt(flags: &str) -> bool {
    flags.as_bytes().get(2).is_some_and(|c| b"hHszZ".contains(c))
}

/// `comm-123 (    120)` → (`comm-123`, Some(120)); `comm-123 (-------)` → (`comm-123`,
/// None); without the column, the task as it is.
fn split_tgid(task: &str) -> (&str, Option<u32>) {
    let Some(inner) = task.strip_suffix(')') else {
        return (task, None);
    };
    let Some((task, tgid)) = inner.rsplit_once(" (") else {
        return (task, None);
    };
    let tgid = tgid.trim();
    if tgid.chars().all(|c| c == '-') {
        return (task.trim_end(), None);
    }
    match tgid.parse() {
        Ok(t) => (task.trim_end(), Some(t)),
        // Not a tgid column: a task name that ends in parentheses.
        Err(_) => (inner.strip_suffix(')').unwrap_or(inner), None),
    }
}

/// A system-call event's text, `sys_fsync(fd: 3)` or `sys_fsync -> 0x0`, as the name
/// [`SYSCALL_ENTER`] or [`SYSCALL_EXIT`] and the text without `sys_`.
fn syscall(rest: &str) -> Option<(&'static str, &str)> {
    let call = rest.trim_end().strip_prefix("sys_")?;
    let name_end = call.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
    match &call[name_end..] {
        after if after.starts_with('(') && after.ends_with(')') => Some((SYSCALL_ENTER, call)),
        after if after.starts_with(" -> ") => Some((SYSCALL_EXIT, call)),
        _ => None,
    }
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
#[cfg(test)]
pub(crate) fn parse_trace(text: &str) -> ParsedTrace {
    let mut parser = TraceParser::default();
    parser.feed(text.as_bytes());
    parser.finish()
}

/// Reads a trace as it comes, in pieces cut anywhere (what `trace_pipe` gives each read),
/// so that the text need not be kept: a line is read once it is whole, and a stack once
/// the line after its last frame has come. Each distinct stack is kept once, shared by
/// every event that took it.
#[derive(Default)]
pub(crate) struct TraceParser {
    out: ParsedTrace,
    /// The stack being read: its event, and its frames so far, one per line.
    stack: Option<(Event, String)>,
    /// Every distinct stack read so far, by its frames one per line.
    stacks: HashMap<String, Frames>,
    /// What the events read so far hold in memory, stacks counted once.
    held_bytes: u64,
    /// The start of a line whose end has not come yet (bytes: a piece may end inside a
    /// character, never inside a newline).
    partial: Vec<u8>,
}

impl TraceParser {
    /// Reads `text`, the next piece of the trace.
    pub(crate) fn feed(&mut self, text: &[u8]) {
        let Some(last_newline) = text.iter().rposition(|&b| b == b'\n') else {
            self.partial.extend_from_slice(text);
            return;
        };
        let (whole, rest) = text.split_at(last_newline + 1);
        if self.partial.is_empty() {
            self.lines(&String::from_utf8_lossy(whole));
        } else {
            let mut joined = std::mem::take(&mut self.partial);
            joined.extend_from_slice(whole);
            self.lines(&String::from_utf8_lossy(&joined));
        }
        self.partial.extend_from_slice(rest);
    }

    /// The trace read, its events in time order.
    pub(crate) fn finish(mut self) -> ParsedTrace {
        let partial = std::mem::take(&mut self.partial);
        self.lines(&String::from_utf8_lossy(&partial));
        self.end_stack();
        name_unnamed_tasks(&mut self.out.events);
        self.out
    }

    /// What the events read so far hold in memory (their own size, what their kind keeps
    /// on the heap, each distinct stack once): what the trace's budget counts.
    pub(crate) fn held_bytes(&self) -> u64 {
        self.held_bytes
    }

    /// Adds `ev` in time order. trace_pipe merges the per-CPU buffers while they are being
    /// written, so an event can come out after a later one from another CPU; it goes in
    /// after every event not later than itself (as a stable sort would put it), which is
    /// near the end: no sort of the whole trace, and no second buffer for one.
    fn push(&mut self, ev: Event) {
        self.held_bytes += ev.held_bytes();
        let events = &mut self.out.events;
        match events.last() {
            Some(last) if last.ts_ns > ev.ts_ns => {
                let at = events.partition_point(|e| e.ts_ns <= ev.ts_ns);
                events.insert(at, ev);
            }
            _ => events.push(ev),
        }
    }

    fn end_stack(&mut self) {
        if let Some((mut ev, key)) = self.stack.take() {
            let frames = match self.stacks.get(&key) {
                Some(frames) => Frames::clone(frames),
                None => {
                    let frames: Frames = key.lines().map(str::to_string).collect();
                    self.held_bytes += frames
                        .iter()
                        .map(|f| (f.len() + std::mem::size_of::<String>()) as u64)
                        .sum::<u64>();
                    self.stacks.insert(key, Frames::clone(&frames));
                    frames
                }
            };
            ev.kind = EventKind::Stack { frames };
            self.push(ev);
        }
    }

    fn lines(&mut self, text: &str) {
        for line in text.lines() {
            match parse_line(line) {
                Some(Line::Frame(f)) => match &mut self.stack {
                    Some((_, frames)) => {
                        frames.push_str(symbol(f));
                        frames.push('\n');
                    }
                    None => self.out.unparsed_lines += 1,
                },
                Some(Line::StackStart(head)) => {
                    self.end_stack();
                    // Its frames once they have all come (end_stack); a kind that allocates
                    // nothing meanwhile.
                    let marker = EventKind::Marker { text: String::new() };
                    self.stack = Some((head.event(marker), String::new()));
                }
                Some(Line::Event {
                    head,
                    name,
                    body,
                    in_interrupt,
                }) => {
                    self.end_stack();
                    let mut kind = EventKind::parse(name, body);
                    if let EventKind::SchedWakeup { in_interrupt: i, .. } = &mut kind {
                        *i = in_interrupt;
                    }
                    self.push(head.event(kind));
                }
                Some(Line::Lost(n)) => {
                    self.end_stack();
                    self.out.lost_events += n;
                }
                Some(Line::Comment) => {}
                None => self.out.unparsed_lines += 1,
            }
        }
    }
}

/// What the trace prints for a task whose name it did not keep: a line's name comes from a
/// machine-wide cache of a few hundred names (`saved_cmdlines`), read when the line is, and
/// other tracing on the machine can push a task out of it before its lines are read (CI
/// once saw the five O_DSYNC writes of a traced `dd` come as `<...>`).
const UNNAMED: &str = "<...>";

/// Names each event whose task the trace left unnamed ([`UNNAMED`]) from what the events
/// themselves say of it: the names a switch, a wakeup or a fork records, a line's own name
/// where the trace knew it, and the program an exec ran, which renames the task from then
/// on. An event takes the last name its task had before it, or the first one after it
/// where none came before.
fn name_unnamed_tasks(events: &mut [Event]) {
    let unnamed = TaskName::new(UNNAMED);
    if !events.iter().any(|e| e.comm == unnamed) {
        return;
    }
    let named = |pid: u32, comm: TaskName| (comm != unnamed).then_some((pid, comm));
    let told = |e: &Event| -> Vec<(u32, TaskName)> {
        let mut said: Vec<(u32, TaskName)> = named(e.pid, e.comm).into_iter().collect();
        match &e.kind {
            EventKind::SchedSwitch {
                prev_comm,
                prev_pid,
                next_comm,
                next_pid,
                ..
            } => said.extend(
                named(*prev_pid, *prev_comm)
                    .into_iter()
                    .chain(named(*next_pid, *next_comm)),
            ),
            EventKind::SchedWakeup { comm, pid, .. } => said.extend(named(*pid, *comm)),
            EventKind::SchedProcessFork {
                child_pid, child_comm, ..
            } => said.extend(named(*child_pid, *child_comm)),
            // After the exec: it names its task for what follows, not for this event.
            EventKind::SchedProcessExec { .. } => {}
            _ => {}
        }
        said
    };
    // Forward: the last name each task had.
    let mut last: HashMap<u32, TaskName> = HashMap::new();
    for e in events.iter_mut() {
        for (pid, comm) in told(e) {
            last.insert(pid, comm);
        }
        if e.comm == unnamed {
            if let Some(&comm) = last.get(&e.pid) {
                e.comm = comm;
            }
        }
        if let EventKind::SchedProcessExec { comm } = e.kind {
            last.insert(e.pid, comm);
        }
    }
    // Backward: the first name a task had, for its events before any.
    let mut first: HashMap<u32, TaskName> = HashMap::new();
    for e in events.iter_mut().rev() {
        if let EventKind::SchedProcessExec { .. } = e.kind {
            // What the task was called after it ran the program is not its name before.
            first.remove(&e.pid);
        }
        for (pid, comm) in told(e) {
            first.insert(pid, comm);
        }
        if e.comm == unnamed {
            if let Some(&comm) = first.get(&e.pid) {
                e.comm = comm;
            }
        }
    }
}
