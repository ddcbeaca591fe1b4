//! The record the BPF program sends for every sync call of a traced command (`struct
//! latency_record`, in the ring `every`), whatever its latency: its time, its task, how it
//! ended. Read field by field like the slow call's record (record.rs).

use super::cursor::Cursor;
use super::kind::SyncKind;

/// sizeof(struct latency_record).
pub(crate) const LATENCY_BYTES: usize = 48;

/// One call of a traced command as the ring `every` carries it (struct latency_record):
/// every sync call's time, whatever its latency, where nothing else measures them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CallLatency {
    /// CLOCK_MONOTONIC at entry.
    pub(crate) start_ns: u64,
    pub(crate) latency_ns: u64,
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    pub(crate) kind: Option<SyncKind>,
    /// The call's -errno, or what a write wrote (at most i32::MAX), or 0.
    pub(crate) ret: i32,
    /// The calling task's name.
    pub(crate) comm: String,
}

impl CallLatency {
    /// Reads one record; an error says what did not fit.
    pub(crate) fn parse(bytes: &[u8]) -> Result<CallLatency, String> {
        if bytes.len() < LATENCY_BYTES {
            return Err(format!(
                "a latency record of {} bytes, expected {LATENCY_BYTES}: the BPF program and fsynclab disagree",
                bytes.len()
            ));
        }
        let mut r = Cursor::new(bytes);
        Ok(CallLatency {
            start_ns: r.u64(),
            latency_ns: r.u64(),
            pid: r.u32(),
            tid: r.u32(),
            kind: SyncKind::from_number(r.u32()),
            ret: r.u32() as i32,
            comm: r.comm(),
        })
    }
}

#[cfg(test)]
#[path = "latency_record_tests.rs"]
mod tests;
