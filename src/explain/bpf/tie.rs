//! A run's (or a command's) chosen calls tied to the kernel's records of them, after the
//! run: a sync call or a write takes its own record, any other call (fsync-tps's commit) the
//! records of the sync calls its thread made inside it, and a group commit
//! with no sync call of its own the sync calls of the leaders it waited for, by time.

use std::cmp::Reverse;

use super::attribute::attribution;
use super::record::{SlowCall, SyncKind};
use super::run::{Followed, STACK_OVER};
use super::symbols::KernelSymbols;
use crate::explain::attribution::{Attribution, Call, Cause, Part, Share, Span, ThreadCall};

/// Slack for the kernel's record to sit inside the time user space measured (both read
/// CLOCK_MONOTONIC; this covers their rounding).
const SLACK_NS: u64 = 2_000;

/// The chosen `calls` of the run (start on the run clock, which began at `origin_ns`)
/// explained from the kernel's records, and the notes on those that could not be. A sync
/// call or a write takes its own record; any other call (fsync-tps's commit) the records of
/// the sync calls its thread made inside it.
pub(crate) fn explain(
    followed: &Followed,
    calls: &[Call],
    syncs: &[Span],
    origin_ns: u64,
) -> (Vec<Attribution>, Vec<String>) {
    let mut explained = Vec::new();
    let (mut no_sync_inside, mut not_recorded, mut by_time) = (0usize, 0usize, 0usize);
    for call in calls {
        let kind = SyncKind::ALL.into_iter().find(|k| k.name() == call.op);
        let begin = origin_ns + call.start_ns;
        let end = begin + call.latency_ns;
        let mut inside: Vec<&SlowCall> = followed
            .calls
            .iter()
            .filter(|k| k.tid == call.tid && (kind.is_none() || k.kind == kind))
            .filter(|k| k.start_ns + SLACK_NS >= begin && k.start_ns + k.latency_ns <= end + SLACK_NS)
            .collect();
        if kind.is_some() {
            // The call itself: the longest record inside it (there is one).
            inside.sort_by_key(|k| Reverse(k.latency_ns));
            inside.truncate(1);
        }
        // A commit waits for the leaders' sync calls that ended inside it, beside its own
        // calls: a follower for the leader's, a leader first for the previous group's.
        let leaders = match kind {
            None => leaders_calls(call, syncs),
            _ => Vec::new(),
        };
        match (inside.is_empty(), kind) {
            (_, None) if !leaders.is_empty() => {
                by_time += 1;
                explained.push(as_follower(call, &leaders, &inside, followed, origin_ns));
            }
            (false, _) => explained.push(as_measured(&inside, call, &followed.symbols, origin_ns)),
            (true, Some(_)) => not_recorded += 1,
            (true, None) => no_sync_inside += 1,
        }
    }
    let mut notes = Vec::new();
    if by_time > 0 {
        notes.push(format!(
            "commits tied to another thread's sync call by time alone (it ended inside them; the BPF tracer does not follow a wait in user space, --tracer tracefs ties it by the wakeup): {by_time}"
        ));
    }
    if no_sync_inside > 0 {
        notes.push(format!(
            "calls chosen but not explained, having no call the BPF tracer follows of their own inside (sync calls, writes, and open, close, rename, truncate, unlink, mkdir, link, fallocate; --tracer tracefs explains every kind): {no_sync_inside}"
        ));
    }
    if not_recorded > 0 {
        notes.push(format!(
            "calls chosen but not explained, the kernel having sent no record of them (their time inside the system call was under the threshold it held then; the run ranks calls by all of their latency): {not_recorded}"
        ));
    }
    (explained, notes)
}

/// The sync calls of other threads that a group commit with no sync call of its own waited
/// for, latest first: the last to end inside it (the leader's, whose end releases the
/// followers), then the one that ended inside it before that one began (an earlier group's
/// leader, which the commit came too late to join), and so on. Only a commit (fsync-tps's)
/// waits for another's sync call; a write does not.
fn leaders_calls<'a>(call: &Call, syncs: &'a [Span]) -> Vec<&'a Span> {
    if call.op != crate::measure::OpKind::Commit.name() {
        return Vec::new();
    }
    let end = call.start_ns + call.latency_ns;
    let mut ended: Vec<&Span> = syncs
        .iter()
        .filter(|s| s.tid != call.tid)
        .filter(|s| {
            let s_end = s.start_ns + s.latency_ns;
            s_end > call.start_ns && s_end <= end
        })
        .collect();
    ended.sort_by_key(|s| Reverse(s.start_ns + s.latency_ns));
    let mut chain: Vec<&Span> = Vec::new();
    for s in ended {
        if chain
            .last()
            .is_none_or(|later| s.start_ns + s.latency_ns <= later.start_ns)
        {
            chain.push(s);
        }
    }
    chain
}

/// A commit that waited for other threads' sync calls: its own calls the kernel recorded
/// inside it (`own`: a follower's write, a leader's write and fdatasync), with their parts;
/// the parts of the rest the leaders' sync calls covered, each with that call's own parts
/// where the kernel kept its record; and what is left.
fn as_follower(call: &Call, leaders: &[&Span], own: &[&SlowCall], followed: &Followed, origin_ns: u64) -> Attribution {
    let call_end = call.start_ns + call.latency_ns;
    let mut a = Attribution {
        tid: call.tid,
        process: None,
        op: call.op.clone(),
        start_ns: call.start_ns,
        latency_ns: call.latency_ns,
        parts: Vec::new(),
        notes: vec!["tied to the leaders' calls by time: each ended inside this commit".into()],
    };
    // The follower's own calls, on the run clock: a leader's share leaves them out.
    let own_spans: Vec<(u64, u64)> = own
        .iter()
        .map(|k| {
            let start = k.start_ns.saturating_sub(origin_ns);
            (start, start + k.latency_ns)
        })
        .collect();
    if !own.is_empty() {
        let mine = as_measured(own, call, &followed.symbols, origin_ns);
        a.parts.extend(mine.parts.into_iter().filter(|p| !is_outside(&p.cause)));
        a.notes.extend(mine.notes);
    }
    for leader in leaders {
        let (l_start, l_end) = (leader.start_ns, leader.start_ns + leader.latency_ns);
        let record = followed.calls.iter().find(|k| {
            k.tid == leader.tid
                && k.kind.is_some_and(|kind| kind.name() == leader.op)
                && k.start_ns + SLACK_NS >= origin_ns + l_start
                && k.start_ns + k.latency_ns <= origin_ns + l_end + SLACK_NS
        });
        let parts = record
            .map(|r| {
                attribution(r, &followed.symbols, origin_ns, STACK_OVER)
                    .parts
                    .into_iter()
                    .map(|p| Share {
                        what: p.cause.to_string(),
                        ns: p.ns,
                    })
                    .collect()
            })
            .unwrap_or_default();
        a.parts.push(Part {
            cause: Cause::WaitedForThread {
                thread: leader.tid,
                call: Some(ThreadCall {
                    op: leader.op.to_string(),
                    start_ns: l_start,
                    latency_ns: leader.latency_ns,
                    parts,
                }),
            },
            ns: covered(l_start.max(call.start_ns), l_end.min(call_end), &own_spans),
            waits: 1,
        });
    }
    a.parts.retain(|p| p.ns > 0);
    let rest = call.latency_ns.saturating_sub(a.parts.iter().map(|p| p.ns).sum());
    if rest > 0 {
        a.parts.push(Part {
            cause: Cause::Unattributed {
                reason: "the rest of the commit: its own write, and the waits between the leaders' calls".into(),
            },
            ns: rest,
            waits: 0,
        });
    }
    a.parts.sort_by_key(|p| Reverse(p.ns));
    a
}

/// Whether a part is [`as_measured`]'s time outside the records (which a follower's own
/// records leave to the leaders' calls and the rest).
fn is_outside(cause: &Cause) -> bool {
    matches!(cause, Cause::Unattributed { reason } if reason.starts_with("outside "))
}

/// The time from `start` to `end` outside every span of `spans` (which do not overlap).
fn covered(start: u64, end: u64, spans: &[(u64, u64)]) -> u64 {
    let inside: u64 = spans
        .iter()
        .map(|&(s, e)| e.min(end).saturating_sub(s.max(start)))
        .sum();
    end.saturating_sub(start).saturating_sub(inside)
}

/// `call` as the run measured it, from the kernel's records of the sync calls inside it
/// (the call itself, when it is one): their parts, and the time outside them, which make up
/// the latency user space measured.
fn as_measured(records: &[&SlowCall], call: &Call, symbols: &KernelSymbols, origin_ns: u64) -> Attribution {
    let mut a = Attribution {
        tid: call.tid,
        process: None,
        op: call.op.clone(),
        start_ns: call.start_ns,
        latency_ns: 0,
        parts: Vec::new(),
        notes: Vec::new(),
    };
    for record in records {
        let one = attribution(record, symbols, origin_ns, STACK_OVER);
        a.latency_ns += one.latency_ns;
        for part in one.parts {
            match a.parts.iter_mut().find(|p| p.cause.key() == part.cause.key()) {
                Some(p) => {
                    p.ns += part.ns;
                    p.waits += part.waits;
                }
                None => a.parts.push(part),
            }
        }
        a.notes.extend(one.notes);
    }
    let outside = call.latency_ns.saturating_sub(a.latency_ns);
    if outside > 0 {
        // A call that is one system call: a sync call or a write of its own kind, or one of
        // the others (a create is an open, a close a close).
        let one_call = |k: SyncKind| k.name() == call.op || k == SyncKind::Other;
        let reason = if records.len() == 1 && records[0].kind.is_some_and(one_call) {
            "outside the system call: user space on either side of it, entering and leaving the kernel".to_string()
        } else {
            let names: Vec<&str> = records.iter().filter_map(|r| r.kind.map(SyncKind::name)).collect();
            format!("outside its {}: the rest of the {}", names.join(" and "), call.op)
        };
        a.parts.push(Part {
            cause: Cause::Unattributed { reason },
            ns: outside,
            waits: 0,
        });
        a.latency_ns = call.latency_ns;
    }
    a.parts.sort_by_key(|p| Reverse(p.ns));
    a
}

#[cfg(test)]
#[path = "tie_tests.rs"]
mod tests;
