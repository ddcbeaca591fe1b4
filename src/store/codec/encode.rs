//! Samples into one block of format 1, or 2 when they name tasks (the layout is in [`super`]).

use std::collections::HashMap;

use super::{intern, SampleRecord, FORMAT, FORMAT_WITH_TASKS};

#[inline]
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
pub(crate) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn put_names(out: &mut Vec<u8>, names: &[String]) {
    put_varint(out, names.len() as u64);
    for n in names {
        put_varint(out, n.len() as u64);
        out.extend_from_slice(n.as_bytes());
    }
}

/// Encodes `samples` as one block (see the module documentation for the layout).
pub fn encode<S: SampleRecord>(samples: &[S]) -> Vec<u8> {
    let n = samples.len();
    let (mut op_names, mut error_names) = (Vec::new(), Vec::new());
    let (mut ops, mut errors) = (HashMap::new(), HashMap::new());
    // Names are few and mostly repeat the previous sample's: check that first, so a run of
    // a million calls costs a million string compares, not a million hash lookups.
    let mut last_op: Option<(&str, u32)> = None;
    let mut codes_raw: Vec<(u32, u32)> = Vec::with_capacity(n);
    for s in samples {
        let op = s.op();
        let oi = match last_op {
            Some((name, i)) if name == op => i,
            _ => {
                let i = intern(&mut op_names, &mut ops, op);
                last_op = Some((op, i));
                i
            }
        };
        let ei = s.error().map_or(0, |e| 1 + intern(&mut error_names, &mut errors, &e));
        codes_raw.push((oi, ei));
    }
    let slots = error_names.len() as u64 + 1;
    let (mut times, mut codes, mut latencies, mut bytes) = (
        Vec::with_capacity(n * 3),
        Vec::with_capacity(n),
        Vec::with_capacity(n * 4),
        Vec::new(),
    );
    let mut last_bytes = vec![0u64; op_names.len()];
    let mut prev_t = 0u64;
    for (s, &(oi, ei)) in samples.iter().zip(&codes_raw) {
        let t = s.t_ns();
        put_varint(&mut times, zigzag(t.wrapping_sub(prev_t) as i64));
        prev_t = t;
        let b = s.bytes();
        let same = last_bytes[oi as usize] == b;
        last_bytes[oi as usize] = b;
        put_varint(
            &mut codes,
            ((u64::from(oi) * slots + u64::from(ei)) << 1) | u64::from(same),
        );
        put_varint(&mut latencies, s.latency_ns());
        if !same {
            put_varint(&mut bytes, b);
        }
    }
    let (task_names, tasks) = task_column(samples);
    let mut out = Vec::with_capacity(32 + times.len() + codes.len() + latencies.len() + bytes.len() + tasks.len());
    out.push(if task_names.is_empty() {
        FORMAT
    } else {
        FORMAT_WITH_TASKS
    });
    put_varint(&mut out, n as u64);
    put_names(&mut out, &op_names);
    put_names(&mut out, &error_names);
    if !task_names.is_empty() {
        put_names(&mut out, &task_names);
    }
    for column in [&times, &codes, &latencies, &bytes] {
        put_varint(&mut out, column.len() as u64);
        out.extend_from_slice(column);
    }
    if !task_names.is_empty() {
        put_varint(&mut out, tasks.len() as u64);
        out.extend_from_slice(&tasks);
    }
    out
}

/// The task dictionary and column (0 for none, else 1 + index), both empty when no sample
/// names a task.
fn task_column<S: SampleRecord>(samples: &[S]) -> (Vec<String>, Vec<u8>) {
    if samples.iter().all(|s| s.process().is_none()) {
        return (Vec::new(), Vec::new());
    }
    let (mut names, mut index) = (Vec::new(), HashMap::new());
    let mut column = Vec::with_capacity(samples.len());
    for s in samples {
        let code = s.process().map_or(0, |p| 1 + intern(&mut names, &mut index, p));
        put_varint(&mut column, u64::from(code));
    }
    (names, column)
}
