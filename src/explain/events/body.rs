//! Each event's body, field by field, after the `print fmt` of
//! `events/SYSTEM/EVENT/format` on the running kernel; only the fields the attribution and
//! the explanation's text use.

use std::str::FromStr;

use super::{BalanceDirtyPages, EventKind, GlobalDirtyState, Jbd2Phase, Jbd2RunStats, Word};

/// The names a system-call event's line is given here (its own line names the call).
pub(super) const SYSCALL_ENTER: &str = "syscall enter";
pub(super) const SYSCALL_EXIT: &str = "syscall exit";

impl EventKind {
    /// The kind of the event called `name` with text `body`; unknown events and bodies that
    /// do not match the expected format become [`EventKind::Other`].
    pub(crate) fn parse(name: &str, body: &str) -> EventKind {
        parse_known(name, body).unwrap_or_else(|| EventKind::Other {
            name: name.into(),
            body: body.into(),
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
                prev_comm: p[0].into(),
                prev_pid: p[1].parse().ok()?,
                prev_state: p[3].into(),
                next_comm: n[0].into(),
                next_pid: n[1].parse().ok()?,
            }
        }
        "sched_wakeup" | "sched_waking" | "sched_wakeup_new" => {
            let f = keyed(body, &["comm", "pid", "prio", "target_cpu"])?;
            EventKind::SchedWakeup {
                comm: f[0].into(),
                pid: f[1].parse().ok()?,
                in_interrupt: false,
            }
        }
        "sched_process_fork" => {
            let f = keyed(body, &["comm", "pid", "child_comm", "child_pid"])?;
            EventKind::SchedProcessFork {
                parent_pid: f[1].parse().ok()?,
                child_comm: f[2].into(),
                child_pid: f[3].parse().ok()?,
            }
        }
        "sched_process_exec" => {
            let f = keyed(body, &["filename", "pid", "old_pid"])?;
            EventKind::SchedProcessExec {
                comm: f[0].rsplit('/').next()?.into(),
            }
        }
        SYSCALL_ENTER => {
            // `fsync(fd: 3)`, `openat(dfd: 0xffffff9c, filename: 0x7f.., flags: 0x1001, mode: 0)`.
            let (call, args) = body.strip_suffix(')')?.split_once('(')?;
            let args = args
                .split(", ")
                .filter(|a| !a.is_empty())
                .map(|a| {
                    let (k, v) = a.split_once(": ")?;
                    Some((k.into(), parse_hex(v)?))
                })
                .collect::<Option<Box<[_]>>>()?;
            EventKind::SyscallEnter {
                name: call.into(),
                args,
            }
        }
        SYSCALL_EXIT => {
            // `fsync -> 0x0`, `openat -> 0xfffffffffffffffe` (-ENOENT).
            let (call, ret) = body.split_once(" -> ")?;
            EventKind::SyscallExit {
                name: call.into(),
                ret: parse_hex(ret.trim())? as i64,
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
            EventKind::Jbd2RunStats(Box::new(Jbd2RunStats {
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
            }))
        }
        "balance_dirty_pages" => {
            let (bdi, rest) = bdi_prefix(body)?;
            let kv = KeyValues::new(rest);
            EventKind::BalanceDirtyPages(Box::new(BalanceDirtyPages {
                bdi,
                limit_pages: kv.num("limit")?,
                setpoint_pages: kv.num("setpoint")?,
                dirty_pages: kv.num("dirty")?,
                paused_ms: kv.num("paused")?,
                pause_ms: kv.num("pause")?,
            }))
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
                reason: kv.get("reason")?.into(),
            }
        }
        "global_dirty_state" => {
            let kv = KeyValues::new(body);
            EventKind::GlobalDirtyState(Box::new(GlobalDirtyState {
                dirty_pages: kv.num("dirty")?,
                writeback_pages: kv.num("writeback")?,
                background_thresh_pages: kv.num("bg_thresh")?,
                thresh_pages: kv.num("thresh")?,
            }))
        }
        "block_rq_issue" => {
            // `7,0 WS 4096 () 1048576 + 8 be,0,3 [jbd2/loop0-8]`
            let (head, rest) = body.split_once(" (")?;
            let mut h = head.split_whitespace();
            let dev = h.next()?.parse().ok()?;
            let rwbs = h.next()?.into();
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
            let rwbs = h.next()?.into();
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
                caller: body
                    .split_once(" caller ")
                    .map_or_else(|| "".into(), |(_, c)| symbol(c).into()),
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
pub(super) fn symbol(s: &str) -> &str {
    let s = s.trim();
    let end = s.find(['+', ' ']).unwrap_or(s.len());
    &s[..end]
}

/// `bdi 7:0: rest` → (`7:0`, `rest`).
fn bdi_prefix(body: &str) -> Option<(Word, &str)> {
    let rest = body.strip_prefix("bdi ")?;
    let (bdi, rest) = rest.split_once(": ")?;
    Some((bdi.into(), rest))
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
