//! Typed kernel events, parsed from the text tracefs prints (`trace`, `trace_pipe`).
//!
//! Each line is `TASK-PID [CPU] FLAGS SECONDS.MICROS: EVENT: BODY` (Documentation/trace/
//! ftrace.rst, "Output format"); the body of each event follows the `print fmt` in
//! `events/SYSTEM/EVENT/format` of the running kernel. A `stacktrace` trigger adds a line
//! `... SECONDS.MICROS: <stack trace>` followed by one ` => function` line per frame, and a
//! reader that falls behind gets `CPU:N [LOST M EVENTS]`. Events fsynclab does not use are
//! kept as [`EventKind::Other`], so nothing is silently dropped.
//!
//! Only the fields the attribution and the report use are typed; the others are ignored.
//! Task names (comm) may hold spaces and dashes (`lto cgu.10-9946`), so fields are cut at
//! the next known key rather than at whitespace.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A block device number, as the kernel prints it in events (`7,0` or `7:0`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct Dev {
    pub(crate) major: u32,
    pub(crate) minor: u32,
}

impl Dev {
    /// The number as event filters compare it: the kernel's internal `dev_t`, major in the
    /// bits above 20 (`MKDEV`, include/linux/kdev_t.h), not the user-space encoding.
    pub(crate) fn kernel_dev_t(self) -> u64 {
        (u64::from(self.major) << 20) | u64::from(self.minor)
    }
}

impl fmt::Display for Dev {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

impl FromStr for Dev {
    type Err = String;

    fn from_str(s: &str) -> Result<Dev, String> {
        let (major, minor) = s
            .split_once([',', ':'])
            .ok_or_else(|| format!("not a device number: {s}"))?;
        Ok(Dev {
            major: major.parse().map_err(|_| format!("not a device number: {s}"))?,
            minor: minor.parse().map_err(|_| format!("not a device number: {s}"))?,
        })
    }
}

/// One event from the trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Event {
    /// When it fired, ns on the trace clock (`mono`: CLOCK_MONOTONIC); the text format has
    /// microsecond resolution.
    pub(crate) ts_ns: u64,
    pub(crate) cpu: u32,
    /// The task running when it fired (for a stack, the task that is switching out).
    pub(crate) pid: u32,
    /// That task's name as the trace knew it (`<...>` when it did not).
    pub(crate) comm: String,
    pub(crate) kind: EventKind,
}

/// A jbd2 commit phase event: `jbd2_start_commit` ... `jbd2_end_commit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Jbd2Phase {
    Start,
    Locking,
    Flushing,
    Logging,
    End,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub(crate) enum EventKind {
    /// `sched:sched_switch`: `prev` leaves the CPU in `prev_state` (`R`/`R+` preempted,
    /// `S` sleeping, `D` uninterruptible), `next` gets it.
    SchedSwitch {
        prev_comm: String,
        prev_pid: u32,
        prev_state: String,
        next_comm: String,
        next_pid: u32,
    },
    /// `sched:sched_wakeup`: task `pid` was made runnable by the event's own task.
    SchedWakeup { comm: String, pid: u32 },
    /// The kernel stack a `stacktrace` trigger printed, innermost frame first, offsets and
    /// module names removed.
    Stack { frames: Vec<String> },
    /// `jbd2:jbd2_{start_commit,commit_locking,commit_flushing,commit_logging,end_commit}`.
    Jbd2Commit {
        phase: Jbd2Phase,
        dev: Dev,
        transaction: u32,
    },
    /// `jbd2:jbd2_run_stats`, at the end of a commit: how long each phase took, in ms
    /// (jiffies converted by the kernel, so one jiffy is the resolution).
    Jbd2RunStats {
        dev: Dev,
        transaction: u32,
        wait_ms: u32,
        request_delay_ms: u32,
        running_ms: u32,
        locked_ms: u32,
        flushing_ms: u32,
        logging_ms: u32,
        handle_count: u32,
        blocks: u32,
        blocks_logged: u32,
    },
    /// `writeback:balance_dirty_pages`: the task dirtied pages and is throttled; `pause_ms`
    /// is the sleep now starting, `paused_ms` what it slept already in this call. Page counts.
    BalanceDirtyPages {
        bdi: String,
        limit_pages: u64,
        setpoint_pages: u64,
        dirty_pages: u64,
        paused_ms: u64,
        pause_ms: i64,
    },
    /// `writeback:folio_wait_writeback`: the task waits for page `index` of inode `ino` to
    /// finish writeback.
    FolioWaitWriteback { bdi: String, ino: u64, index: u64 },
    /// `writeback:writeback_start` / `writeback_written`: a flusher work item on `bdi`.
    Writeback {
        done: bool,
        bdi: String,
        nr_pages: i64,
        reason: String,
    },
    /// `writeback:global_dirty_state`, page counts.
    GlobalDirtyState {
        dirty_pages: u64,
        writeback_pages: u64,
        background_thresh_pages: u64,
        thresh_pages: u64,
    },
    /// `block:block_rq_issue`: a request goes to the driver.
    BlockRqIssue {
        dev: Dev,
        rwbs: String,
        bytes: u64,
        sector: u64,
        sectors: u32,
    },
    /// `block:block_rq_complete`: a request is done (`error` is a negative errno or 0).
    BlockRqComplete {
        dev: Dev,
        rwbs: String,
        sector: u64,
        sectors: u32,
        error: i32,
    },
    /// `ext4:ext4_sync_file_enter` / `ext4_sync_file_exit`.
    Ext4SyncFile { exit: bool, dev: Dev, ino: u64 },
    /// `xfs:xfs_log_force`: a log force up to `lsn` (0: everything), asked by `caller`.
    XfsLogForce { dev: Dev, lsn: u64, caller: String },
    /// `xfs:xfs_file_fsync`.
    XfsFileFsync { dev: Dev, ino: u64 },
    /// `btrfs:btrfs_transaction_commit`: the commit of transaction `generation`.
    BtrfsTransactionCommit { generation: u64 },
    /// `btrfs:btrfs_sync_file`.
    BtrfsSyncFile { ino: u64, datasync: bool },
    /// A line written to `trace_marker`.
    Marker { text: String },
    /// Any other event, unparsed.
    Other { name: String, body: String },
}

/// The request flags of a block event (`rwbs`, block/blk-core.c `blk_fill_rwbs`): an
/// optional leading `F` for a preflush, the operation (`W`, `R`, `D`, `F` for a flush,
/// `N`), then `F` for FUA, `A` readahead, `S` sync, `M` metadata.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Rwbs {
    pub(crate) preflush: bool,
    pub(crate) op: char,
    pub(crate) fua: bool,
}

impl Rwbs {
    pub(crate) fn parse(rwbs: &str) -> Rwbs {
        let b: Vec<char> = rwbs.chars().collect();
        let preflush = b.len() >= 2 && b[0] == 'F';
        let i = usize::from(preflush);
        Rwbs {
            preflush,
            op: b.get(i).copied().unwrap_or('N'),
            fua: b.get(i + 1) == Some(&'F'),
        }
    }

    /// A device cache flush: a flush request, or a write that carries one.
    pub(crate) fn is_flush(self) -> bool {
        self.op == 'F' || self.preflush
    }

    pub(crate) fn is_write(self) -> bool {
        self.op == 'W'
    }
}

impl EventKind {
    /// The kind of the event called `name` with text `body`; unknown events and bodies that
    /// do not match the expected format become [`EventKind::Other`].
    pub(crate) fn parse(name: &str, body: &str) -> EventKind {
        parse_known(name, body).unwrap_or_else(|| EventKind::Other {
            name: name.to_string(),
            body: body.to_string(),
        })
    }
}

fn parse_known(name: &str, body: &str) -> Option<EventKind> {
    let kind = match name {
        "sched_switch" => {
            let (prev, next) = body.split_once(" ==> ")?;
            let p = keyed(prev, &["prev_comm", "prev_pid", "prev_prio", "prev_state"])?;
            let n = keyed(next, &["next_comm", "next_pid", "next_prio"])?;
            EventKind::SchedSwitch {
                prev_comm: p[0].to_string(),
                prev_pid: p[1].parse().ok()?,
                prev_state: p[3].to_string(),
                next_comm: n[0].to_string(),
                next_pid: n[1].parse().ok()?,
            }
        }
        "sched_wakeup" | "sched_waking" | "sched_wakeup_new" => {
            let f = keyed(body, &["comm", "pid", "prio", "target_cpu"])?;
            EventKind::SchedWakeup {
                comm: f[0].to_string(),
                pid: f[1].parse().ok()?,
            }
        }
        "jbd2_start_commit"
        | "jbd2_commit_locking"
        | "jbd2_commit_flushing"
        | "jbd2_commit_logging"
        | "jbd2_end_commit" => {
            let phase = match name {
                "jbd2_start_commit" => Jbd2Phase::Start,
                "jbd2_commit_locking" => Jbd2Phase::Locking,
                "jbd2_commit_flushing" => Jbd2Phase::Flushing,
                "jbd2_commit_logging" => Jbd2Phase::Logging,
                _ => Jbd2Phase::End,
            };
            let w = Words::new(body);
            EventKind::Jbd2Commit {
                phase,
                dev: w.get("dev")?.parse().ok()?,
                transaction: w.get("transaction")?.parse().ok()?,
            }
        }
        "jbd2_run_stats" => {
            let w = Words::new(body);
            let n = |k: &str| w.get(k)?.parse::<u32>().ok();
            EventKind::Jbd2RunStats {
                dev: w.get("dev")?.parse().ok()?,
                transaction: n("tid")?,
                wait_ms: n("wait")?,
                request_delay_ms: n("request_delay")?,
                running_ms: n("running")?,
                locked_ms: n("locked")?,
                flushing_ms: n("flushing")?,
                logging_ms: n("logging")?,
                handle_count: n("handle_count")?,
                blocks: n("blocks")?,
                blocks_logged: n("blocks_logged")?,
            }
        }
        "balance_dirty_pages" => {
            let (bdi, rest) = bdi_prefix(body)?;
            let kv = KeyValues::new(rest);
            EventKind::BalanceDirtyPages {
                bdi,
                limit_pages: kv.num("limit")?,
                setpoint_pages: kv.num("setpoint")?,
                dirty_pages: kv.num("dirty")?,
                paused_ms: kv.num("paused")?,
                pause_ms: kv.num("pause")?,
            }
        }
        "folio_wait_writeback" => {
            let (bdi, rest) = bdi_prefix(body)?;
            let kv = KeyValues::new(rest);
            EventKind::FolioWaitWriteback {
                bdi,
                ino: kv.num("ino")?,
                index: kv.num("index")?,
            }
        }
        "writeback_start" | "writeback_written" => {
            let (bdi, rest) = bdi_prefix(body)?;
            let kv = KeyValues::new(rest);
            EventKind::Writeback {
                done: name == "writeback_written",
                bdi,
                nr_pages: kv.num("nr_pages")?,
                reason: kv.get("reason")?.to_string(),
            }
        }
        "global_dirty_state" => {
            let kv = KeyValues::new(body);
            EventKind::GlobalDirtyState {
                dirty_pages: kv.num("dirty")?,
                writeback_pages: kv.num("writeback")?,
                background_thresh_pages: kv.num("bg_thresh")?,
                thresh_pages: kv.num("thresh")?,
            }
        }
        "block_rq_issue" => {
            // `7,0 WS 4096 () 1048576 + 8 be,0,3 [jbd2/loop0-8]`
            let (head, rest) = body.split_once(" (")?;
            let mut h = head.split_whitespace();
            let dev = h.next()?.parse().ok()?;
            let rwbs = h.next()?.to_string();
            let bytes = h.next()?.parse().ok()?;
            let (sector, sectors) = sector_range(rest)?;
            EventKind::BlockRqIssue {
                dev,
                rwbs,
                bytes,
                sector,
                sectors,
            }
        }
        "block_rq_complete" => {
            // `7,0 FF () 18446744073709551615 + 0 none,0,0 [0]`
            let (head, rest) = body.split_once(" (")?;
            let mut h = head.split_whitespace();
            let dev = h.next()?.parse().ok()?;
            let rwbs = h.next()?.to_string();
            let (sector, sectors) = sector_range(rest)?;
            let error = rest.rsplit_once('[')?.1.trim_end().strip_suffix(']')?.parse().ok()?;
            EventKind::BlockRqComplete {
                dev,
                rwbs,
                sector,
                sectors,
                error,
            }
        }
        "ext4_sync_file_enter" | "ext4_sync_file_exit" => {
            let w = Words::new(body);
            EventKind::Ext4SyncFile {
                exit: name == "ext4_sync_file_exit",
                dev: w.get("dev")?.parse().ok()?,
                ino: w.get("ino")?.parse().ok()?,
            }
        }
        "xfs_log_force" => {
            let w = Words::new(body);
            EventKind::XfsLogForce {
                dev: w.get("dev")?.parse().ok()?,
                lsn: parse_hex(w.get("lsn")?)?,
                caller: body.split_once(" caller ").map(|(_, c)| symbol(c)).unwrap_or_default(),
            }
        }
        "xfs_file_fsync" => {
            let w = Words::new(body);
            EventKind::XfsFileFsync {
                dev: w.get("dev")?.parse().ok()?,
                ino: parse_hex(w.get("ino")?)?,
            }
        }
        "btrfs_transaction_commit" => {
            let kv = KeyValues::new(body.split_once(": ")?.1);
            EventKind::BtrfsTransactionCommit {
                generation: kv.num("gen")?,
            }
        }
        "btrfs_sync_file" => {
            let kv = KeyValues::new(body.split_once(": ")?.1);
            EventKind::BtrfsSyncFile {
                ino: kv.num("ino")?,
                datasync: kv.num::<u32>("datasync")? != 0,
            }
        }
        "tracing_mark_write" => EventKind::Marker {
            text: body.trim_end().to_string(),
        },
        _ => return None,
    };
    Some(kind)
}

/// `0x1a` or `1a` as a number.
fn parse_hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

/// A kernel symbol as a stack or `%pS` prints it (`ext4_sync_file+0x1b3/0x2a0 [ext4]`),
/// without offset and module.
fn symbol(s: &str) -> String {
    let s = s.trim();
    let end = s.find(['+', ' ']).unwrap_or(s.len());
    s[..end].to_string()
}

/// `bdi 7:0: rest` → (`7:0`, `rest`).
fn bdi_prefix(body: &str) -> Option<(String, &str)> {
    let rest = body.strip_prefix("bdi ")?;
    let (bdi, rest) = rest.split_once(": ")?;
    Some((bdi.to_string(), rest))
}

/// `) 1048576 + 8 ...` after a block event's command → (sector, sectors).
fn sector_range(after_cmd: &str) -> Option<(u64, u32)> {
    let (_, rest) = after_cmd.split_once(") ")?;
    let mut t = rest.split_whitespace();
    let sector = t.next()?.parse().ok()?;
    if t.next()? != "+" {
        return None;
    }
    Some((sector, t.next()?.parse().ok()?))
}

/// The values of `keys`, in order, in `k1=v1 k2=v2 ...`, each value running up to ` k_next=`
/// so that a task name with spaces stays whole; the last value ends at whitespace.
fn keyed<'a>(body: &'a str, keys: &[&str]) -> Option<Vec<&'a str>> {
    let mut out = Vec::with_capacity(keys.len());
    let mut pos = 0;
    for (i, key) in keys.iter().enumerate() {
        let tag = format!("{key}=");
        let at = if i == 0 {
            body.find(&tag).filter(|&p| p == 0 || body.as_bytes()[p - 1] == b' ')?
        } else {
            pos + body[pos..].find(&format!(" {tag}"))? + 1
        };
        let start = at + tag.len();
        let end = match keys.get(i + 1) {
            Some(next) => start + body[start..].find(&format!(" {next}="))?,
            None => start + body[start..].find(' ').unwrap_or(body.len() - start),
        };
        out.push(&body[start..end]);
        pos = end;
    }
    Some(out)
}

/// `key value key value ...` bodies (jbd2, ext4, xfs events).
struct Words<'a>(Vec<&'a str>);

impl<'a> Words<'a> {
    fn new(body: &'a str) -> Words<'a> {
        Words(body.split_whitespace().collect())
    }

    fn get(&self, key: &str) -> Option<&'a str> {
        self.0.windows(2).find(|w| w[0] == key).map(|w| w[1])
    }
}

/// `key=value key=value ...` bodies without spaces in values (writeback events).
struct KeyValues<'a>(Vec<(&'a str, &'a str)>);

impl<'a> KeyValues<'a> {
    fn new(body: &'a str) -> KeyValues<'a> {
        KeyValues(body.split_whitespace().filter_map(|w| w.split_once('=')).collect())
    }

    fn get(&self, key: &str) -> Option<&'a str> {
        self.0.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    fn num<T: FromStr>(&self, key: &str) -> Option<T> {
        self.get(key)?.parse().ok()
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Event {
        let p = parse_trace(line);
        assert_eq!(p.unparsed_lines, 0, "{line}");
        assert_eq!(p.events.len(), 1, "{line}");
        p.events.into_iter().next().unwrap()
    }

    #[test]
    fn header_with_spaces_and_dashes_in_the_task_name() {
        let e = one("      lto cgu.10-9946    [001] d..2.  1635.160045: sched_switch: prev_comm=lto cgu.10 prev_pid=9946 prev_prio=120 prev_state=R+ ==> next_comm=jbd2/loop0-8 next_pid=9997 next_prio=120");
        assert_eq!((e.pid, e.cpu, e.comm.as_str()), (9946, 1, "lto cgu.10"));
        assert_eq!(e.ts_ns, 1_635_160_045_000);
        assert_eq!(
            e.kind,
            EventKind::SchedSwitch {
                prev_comm: "lto cgu.10".into(),
                prev_pid: 9946,
                prev_state: "R+".into(),
                next_comm: "jbd2/loop0-8".into(),
                next_pid: 9997
            }
        );
        let e = one(" memfd:sealed-91-1068    [000] d..2.  1635.688768: sched_wakeup: comm=jbd2/loop0-8 pid=9997 prio=120 target_cpu=000");
        assert_eq!((e.pid, e.comm.as_str()), (1068, "memfd:sealed-91"));
        assert_eq!(
            e.kind,
            EventKind::SchedWakeup {
                comm: "jbd2/loop0-8".into(),
                pid: 9997
            }
        );
    }

    #[test]
    fn stack_frames_follow_their_header() {
        let text = "    jbd2/loop0-8-9997    [000] d..2.  1635.690027: <stack trace>\n => trace_event_raw_event_sched_switch\n => jbd2_journal_commit_transaction+0x1b3/0x2a0 [jbd2]\n => kjournald2\n              dd-10020   [001] .....  1635.710272: ext4_sync_file_exit: dev 7,0 ino 13 ret 0\n";
        let p = parse_trace(text);
        assert_eq!(p.events.len(), 2);
        assert_eq!(p.events[0].pid, 9997);
        assert_eq!(
            p.events[0].kind,
            EventKind::Stack {
                frames: vec![
                    "trace_event_raw_event_sched_switch".into(),
                    "jbd2_journal_commit_transaction".into(),
                    "kjournald2".into()
                ]
            }
        );
        assert_eq!(
            p.events[1].kind,
            EventKind::Ext4SyncFile {
                exit: true,
                dev: Dev { major: 7, minor: 0 },
                ino: 13
            }
        );
    }

    #[test]
    fn jbd2_events() {
        let e = one("    jbd2/loop0-8-9997    [000] ...1.  1635.710242: jbd2_run_stats: dev 7,0 tid 2 wait 0 request_delay 0 running 1048 locked 0 flushing 0 logging 20 handle_count 150 blocks 6 blocks_logged 8");
        let EventKind::Jbd2RunStats {
            transaction,
            running_ms,
            logging_ms,
            blocks_logged,
            ..
        } = e.kind
        else {
            panic!("{e:?}")
        };
        assert_eq!((transaction, running_ms, logging_ms, blocks_logged), (2, 1048, 20, 8));
        let e = one(
            "    jbd2/loop0-8-9997    [000] .....  1635.710246: jbd2_end_commit: dev 7,0 transaction 2 sync 0 head 2",
        );
        assert_eq!(
            e.kind,
            EventKind::Jbd2Commit {
                phase: Jbd2Phase::End,
                dev: Dev { major: 7, minor: 0 },
                transaction: 2
            }
        );
    }

    #[test]
    fn block_events_and_their_flags() {
        let e = one("    kworker/0:0H-10      [000] .....  1635.696106: block_rq_issue: 7,0 FF 0 () 0 + 0 none,0,0 [kworker/0:0H]");
        let EventKind::BlockRqIssue { rwbs, bytes, .. } = &e.kind else {
            panic!("{e:?}")
        };
        assert_eq!((rwbs.as_str(), *bytes), ("FF", 0));
        assert!(Rwbs::parse(rwbs).is_flush());
        let e = one(
            "     ksoftirqd/1-22      [001] ..s..  1635.709086: block_rq_complete: 7,0 WS () 1048584 + 56 none,0,0 [0]",
        );
        assert_eq!(
            e.kind,
            EventKind::BlockRqComplete {
                dev: Dev { major: 7, minor: 0 },
                rwbs: "WS".into(),
                sector: 1048584,
                sectors: 56,
                error: 0
            }
        );
        assert_eq!(
            Rwbs::parse("FWFS"),
            Rwbs {
                preflush: true,
                op: 'W',
                fua: true
            }
        );
        assert_eq!(
            Rwbs::parse("WFS"),
            Rwbs {
                preflush: false,
                op: 'W',
                fua: true
            }
        );
        assert!(!Rwbs::parse("WS").is_flush());
        assert!(Rwbs::parse("F").is_flush());
    }

    #[test]
    fn writeback_events() {
        let e = one("              dd-10022   [001] .....  1635.972068: folio_wait_writeback: bdi 7:0: ino=13 index=0");
        assert_eq!(
            e.kind,
            EventKind::FolioWaitWriteback {
                bdi: "7:0".into(),
                ino: 13,
                index: 0
            }
        );
        let e = one("    kworker/u8:4-7261    [001] ...1.  1635.747410: writeback_start: bdi 7:0: sb_dev 7:0 nr_pages=258139 sync_mode=0 kupdate=0 range_cyclic=0 background=0 reason=fs_free_space cgroup_ino=1");
        assert_eq!(
            e.kind,
            EventKind::Writeback {
                done: false,
                bdi: "7:0".into(),
                nr_pages: 258139,
                reason: "fs_free_space".into()
            }
        );
        let e = one("           <...>-31      [000] .....   100.000001: balance_dirty_pages: bdi 7:0: limit=1169243 setpoint=1000 dirty=1200 wb_setpoint=900 wb_dirty=1100 dirty_ratelimit=4 task_ratelimit=0 dirtied=32 dirtied_pause=32 paused=0 pause=200 period=200 think=0 cgroup_ino=1");
        let EventKind::BalanceDirtyPages {
            pause_ms, dirty_pages, ..
        } = e.kind
        else {
            panic!("{e:?}")
        };
        assert_eq!((pause_ms, dirty_pages), (200, 1200));
    }

    #[test]
    fn lost_events_markers_and_unknown_lines() {
        let text = "CPU:1 [LOST 123 EVENTS]\n           <...>-5      [000] .....   2.5: tracing_mark_write: hello there\n           <...>-5      [000] .....   2.500001: some_event: x=1\ngarbage\n";
        let p = parse_trace(text);
        assert_eq!(p.lost_events, 123);
        assert_eq!(p.unparsed_lines, 1);
        assert_eq!(p.events[0].ts_ns, 2_500_000_000);
        assert_eq!(
            p.events[0].kind,
            EventKind::Marker {
                text: "hello there".into()
            }
        );
        assert_eq!(
            p.events[1].kind,
            EventKind::Other {
                name: "some_event".into(),
                body: "x=1".into()
            }
        );
    }

    #[test]
    fn dev_numbers() {
        let d: Dev = "7,3".parse().unwrap();
        assert_eq!(d, "7:3".parse().unwrap());
        assert_eq!(d.kernel_dev_t(), (7 << 20) | 3);
        assert_eq!(d.to_string(), "7:3");
        assert!("7".parse::<Dev>().is_err());
    }
}
