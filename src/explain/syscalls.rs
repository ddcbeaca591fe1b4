//! A traced command's sync calls, read from the system-call events of its process tree
//! (`exec --explain`): each entry paired with its thread's next exit of the same call.
//!
//! What counts as a sync call: `fsync`, `fdatasync`, `sync_file_range`, `syncfs`, `sync`,
//! `msync` with MS_SYNC, and the writes (`write`, `pwrite64`, `writev`, `pwritev`,
//! `pwritev2`) to a file opened with O_SYNC or O_DSYNC, or made with RWF_DSYNC/RWF_SYNC.
//! Which descriptors are such files is followed per process (thread group): an `open` or
//! `openat` with O_DSYNC (which O_SYNC includes) that returned a descriptor adds it, a copy
//! (`dup`, `dup2`, `dup3`, `fcntl(F_DUPFD)`: what `dd oflag=dsync` does to make the file
//! its standard output) adds the new one, a `close` removes it, and a process made by
//! `fork` starts with its parent's. Not followed: descriptors an `execve` closes
//! (O_CLOEXEC), files opened before tracing started, `openat2`, and sync work a program
//! hands to io_uring or Linux AIO, which makes no system call per operation.
//!
//! Timestamps come from the trace's text, to the microsecond.

use std::collections::HashMap;

use super::events::{Event, EventKind, Word};
use super::tracefs::{F_DUPFD, F_DUPFD_CLOEXEC, MS_SYNC, O_DSYNC, O_SYNC_ONLY};
use crate::measure::{OpKind, Sample};
use crate::sys::Errno;

/// `pwritev2(2)` flags that make the write durable (include/uapi/linux/fs.h).
const RWF_DSYNC: u64 = 0x2;
const RWF_SYNC: u64 = 0x4;

/// The kind of a sync system call, by its name in the trace.
fn sync_kind(call: &str) -> Option<OpKind> {
    Some(match call {
        "fsync" => OpKind::Fsync,
        "fdatasync" => OpKind::Fdatasync,
        "sync_file_range" => OpKind::SyncFileRange,
        "syncfs" => OpKind::Syncfs,
        "sync" => OpKind::Sync,
        "msync" => OpKind::Msync,
        _ => return None,
    })
}

fn is_write(call: &str) -> bool {
    matches!(call, "write" | "pwrite64" | "writev" | "pwritev" | "pwritev2")
}

/// The descriptor a call copies, when it is a copy (`dup`, `dup2`, `dup3`, `fcntl` with
/// F_DUPFD or F_DUPFD_CLOEXEC); the copy is what it returns.
fn copied_fd(call: &str, args: &[(Word, u64)]) -> Option<u64> {
    match call {
        "dup" => arg(args, "fildes"),
        "dup2" | "dup3" => arg(args, "oldfd"),
        "fcntl" if matches!(arg(args, "cmd"), Some(F_DUPFD | F_DUPFD_CLOEXEC)) => arg(args, "fd"),
        _ => None,
    }
}

fn arg(args: &[(Word, u64)], name: &str) -> Option<u64> {
    args.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
}

/// The sync calls in `events` (in time order) as samples on the run clock, whose zero is
/// CLOCK_MONOTONIC `origin_ns`, in order of their start. The calls of thread `root` (the
/// one that started the command) are left out.
pub(crate) fn sync_calls(events: &[Event], origin_ns: u64, root: u32) -> Vec<Sample> {
    // The entry event of the call each thread is in.
    let mut entered: HashMap<u32, &Event> = HashMap::new();
    // Per process: its descriptors of files opened O_SYNC or O_DSYNC, and their kind.
    let mut sync_fds: HashMap<u32, HashMap<u64, OpKind>> = HashMap::new();
    // Tasks forked and not seen since, with a copy of the forking process's descriptors
    // as they were at the fork.
    let mut forked: HashMap<u32, (u32, HashMap<u64, OpKind>)> = HashMap::new();
    let mut out = Vec::new();
    for e in events {
        let tgid = e.tgid.unwrap_or(e.pid);
        if let Some((parent, copy)) = forked.remove(&e.pid) {
            // A new process starts with a copy of its parent's descriptors; a new thread
            // shares them (its thread group is its parent's).
            if tgid == e.pid && tgid != parent {
                sync_fds.insert(tgid, copy);
            }
        }
        match &e.kind {
            EventKind::SchedProcessFork { child_pid, .. } => {
                let copy = sync_fds.get(&tgid).cloned().unwrap_or_default();
                forked.insert(*child_pid, (tgid, copy));
            }
            EventKind::SyscallEnter { name, args } if *name == "close" => {
                if let (Some(fd), Some(fds)) = (arg(args, "fd"), sync_fds.get_mut(&tgid)) {
                    fds.remove(&fd);
                }
            }
            EventKind::SyscallEnter { .. } => {
                entered.insert(e.pid, e);
            }
            EventKind::SyscallExit { name, ret } => {
                let name = name.as_str();
                let Some(enter) = entered.remove(&e.pid) else {
                    continue;
                };
                let EventKind::SyscallEnter { name: enter_name, args } = &enter.kind else {
                    continue;
                };
                if enter_name.as_str() != name {
                    continue;
                }
                if let Some(old) = copied_fd(name, args) {
                    // The new descriptor is what the old one was; one a dup2 replaced is
                    // no longer a sync file.
                    let fds = sync_fds.entry(tgid).or_default();
                    if *ret >= 0 {
                        match fds.get(&old).copied() {
                            Some(kind) => fds.insert(*ret as u64, kind),
                            None => fds.remove(&(*ret as u64)),
                        };
                    }
                    continue;
                }
                if matches!(name, "open" | "openat") {
                    let flags = arg(args, "flags").unwrap_or(0);
                    if *ret >= 0 && flags & O_DSYNC != 0 {
                        let kind = if flags & O_SYNC_ONLY != 0 {
                            OpKind::WriteOsync
                        } else {
                            OpKind::WriteOdsync
                        };
                        sync_fds.entry(tgid).or_default().insert(*ret as u64, kind);
                    }
                    continue;
                }
                let (op, bytes) = if let Some(op) = sync_kind(name) {
                    if op == OpKind::Msync && arg(args, "flags").unwrap_or(0) & MS_SYNC == 0 {
                        continue;
                    }
                    let bytes = match op {
                        OpKind::SyncFileRange => arg(args, "nbytes").unwrap_or(0),
                        OpKind::Msync => arg(args, "len").unwrap_or(0),
                        _ => 0,
                    };
                    (op, bytes)
                } else if is_write(name) {
                    let fd = arg(args, "fd").unwrap_or(u64::MAX);
                    let by_file = sync_fds.get(&tgid).and_then(|fds| fds.get(&fd)).copied();
                    let by_flags = (name == "pwritev2"
                        && arg(args, "flags").unwrap_or(0) & (RWF_DSYNC | RWF_SYNC) != 0)
                        .then_some(OpKind::WriteRwfDsync);
                    match by_file.or(by_flags) {
                        Some(op) => (op, (*ret).max(0) as u64),
                        None => continue,
                    }
                } else {
                    continue;
                };
                if e.pid == root {
                    continue;
                }
                out.push(Sample {
                    t_ns: enter.ts_ns.saturating_sub(origin_ns),
                    op,
                    latency_ns: e.ts_ns.saturating_sub(enter.ts_ns),
                    bytes,
                    error: (*ret < 0).then(|| Errno(ret.unsigned_abs().min(i32::MAX as u64) as i32)),
                    process: Some(enter.comm),
                    tid: e.pid,
                });
            }
            _ => {}
        }
    }
    out.sort_by_key(|s| s.t_ns);
    out
}

#[cfg(test)]
mod tests {
    use super::super::events::parse_trace;
    use super::*;

    /// A shell that starts dd (O_DSYNC writes, then an fsync), a thread of a second
    /// process that fdatasyncs, and the descriptor rules: a close forgets, a fork inherits.
    const TRACE: &str = "\
        fsynclab-100   (    100) [000] .....  10.000000: sched_process_fork: comm=fsynclab pid=100 child_comm=fsynclab child_pid=200
              sh-200   (    200) [000] .....  10.000010: sys_fsync(fd: 3)
              sh-200   (    200) [000] .....  10.000030: sys_fsync -> 0x0
              sh-200   (    200) [000] .....  10.000100: sched_process_fork: comm=sh pid=200 child_comm=sh child_pid=300
              dd-300   (    300) [001] .....  10.001000: sys_openat(dfd: 0xffffff9c, filename: 0x7ffd, flags: 0x1041, mode: 0x1b6)
              dd-300   (    300) [001] .....  10.001010: sys_openat -> 0x3
              dd-300   (    300) [001] .....  10.001011: sys_dup2(oldfd: 3, newfd: 1)
              dd-300   (    300) [001] .....  10.001012: sys_dup2 -> 0x1
              dd-300   (    300) [001] .....  10.001013: sys_close(fd: 3)
              dd-300   (    300) [001] .....  10.001020: sys_write(fd: 1, buf: 0x5645, count: 0x1000)
              dd-300   (    300) [001] .....  10.007020: sys_write -> 0x1000
              dd-300   (    300) [001] .....  10.007030: sys_write(fd: 2, buf: 0x5645, count: 0x10)
              dd-300   (    300) [001] .....  10.007031: sys_write -> 0x10
              dd-300   (    300) [001] .....  10.007100: sched_process_fork: comm=dd pid=300 child_comm=dd child_pid=400
              dd-400   (    400) [000] .....  10.007200: sys_pwrite64(fd: 1, buf: 0x5645, count: 0x1000, pos: 0)
              dd-400   (    400) [000] .....  10.009200: sys_pwrite64 -> 0xffffffffffffffe4
              dd-300   (    300) [001] .....  10.008000: sys_close(fd: 1)
              dd-300   (    300) [001] .....  10.008010: sys_write(fd: 1, buf: 0x5645, count: 0x1000)
              dd-300   (    300) [001] .....  10.008020: sys_write -> 0x1000
              dd-300   (    300) [001] .....  10.009000: sys_msync(start: 0x7f00, len: 0x2000, flags: 0x1)
              dd-300   (    300) [001] .....  10.009001: sys_msync -> 0x0
              dd-300   (    300) [001] .....  10.009010: sys_msync(start: 0x7f00, len: 0x2000, flags: 0x4)
              dd-300   (    300) [001] .....  10.009510: sys_msync -> 0x0
        postgres-500   (    500) [001] .....  10.010000: sys_fdatasync(fd: 7)
        postgres-501   (    500) [000] .....  10.010100: sys_pwritev2(fd: 9, vec: 0x1, vlen: 1, pos_l: 0, pos_h: 0, flags: 0x2)
        postgres-501   (    500) [000] .....  10.011100: sys_pwritev2 -> 0x2000
        postgres-500   (    500) [001] .....  10.018000: sys_fdatasync -> 0x0
        fsynclab-100   (    100) [000] .....  10.020000: sys_fsync(fd: 5)
        fsynclab-100   (    100) [000] .....  10.020100: sys_fsync -> 0x0
";

    /// tid, process, op, start, latency, bytes, error.
    type Call<'a> = (u32, &'a str, &'a str, u64, u64, u64, Option<Errno>);

    #[test]
    /// Issue 16.
    fn sync_calls_of_a_process_tree() {
        let events = parse_trace(TRACE).events;
        let calls = sync_calls(&events, 10_000_000_000, 100);
        let got: Vec<Call> = calls
            .iter()
            .map(|s| {
                (
                    s.tid,
                    s.process.map(|p| p.as_str()).unwrap_or(""),
                    s.op.name(),
                    s.t_ns,
                    s.latency_ns,
                    s.bytes,
                    s.error,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (200, "sh", "fsync", 10_000, 20_000, 0, None),
                // O_DSYNC (0x1000) without O_SYNC's other bit: write_odsync.
                (300, "dd", "write_odsync", 1_020_000, 6_000_000, 4096, None),
                // The child inherited descriptor 1; its write failed with ENOSPC.
                (
                    400,
                    "dd",
                    "write_odsync",
                    7_200_000,
                    2_000_000,
                    0,
                    Some(Errno(libc::ENOSPC))
                ),
                // MS_SYNC only, not MS_ASYNC.
                (300, "dd", "msync", 9_010_000, 500_000, 0x2000, None),
                (500, "postgres", "fdatasync", 10_000_000, 8_000_000, 0, None),
                (501, "postgres", "write_rwf_dsync", 10_100_000, 1_000_000, 0x2000, None),
            ]
        );
    }
}
