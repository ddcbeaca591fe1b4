//! The compact encoding of per-call samples in the results store: a run's million calls in a
//! few megabytes, decoded back exactly.
//!
//! A block of samples (format 1) is, in order, all integers LEB128 varints:
//! - the format byte `1`, the sample count;
//! - the op-kind dictionary, then the error-name dictionary: a count, then each name as a
//!   length and UTF-8 bytes. Names, not Rust types: the encoding does not depend on how op
//!   kinds or errors are represented in the program that wrote or reads it;
//! - four columns, each preceded by its length in bytes:
//!   - start times: each the zigzag-encoded difference from the previous start (the first
//!     from 0), a few bytes since samples come in start order (out-of-order starts, as from
//!     merged threads, cost more but round-trip all the same);
//!   - codes: per sample `((op · (errors + 1) + error) · 2 + same_bytes)`, where `error` is 0
//!     for success or 1 + the error's index, and `same_bytes` says the byte count equals that
//!     of the previous call of the same op kind (so it is left out): one byte for any run
//!     with fewer than 64 (op, error) pairs;
//!   - latencies in ns;
//!   - byte counts, only of the samples whose `same_bytes` is 0.
//!
//! Format 2 is format 1 with the task that made each call (`exec --explain`'s `postgres`,
//! `pgbench`): after the error-name dictionary, a task-name dictionary, and after the four
//! columns a fifth, per sample 0 for none or 1 + the name's index. A block is written in
//! format 2 only when some sample names a task, so the scenarios' runs are stored exactly
//! as before; both formats are read.
//!
//! Columns rather than rows so that like values sit together, for a general-purpose
//! compressor to work on should one be added as format 2. None is today: on a real
//! fsync-tps run (575,704 calls of five kinds, started out of order across threads) the
//! format takes 5.98 bytes a sample and encodes in 58–250 ns a sample
//! (`flock /tmp/fsynclab-machine.lock cargo bench --bench store_cost -- RESULT.json`).
//!
//! [`encode`] writes a block, [`decode`] reads one into [`SampleColumns`].

mod columns;
mod decode;
mod encode;

use std::borrow::Cow;
use std::collections::HashMap;

pub use columns::{SampleColumns, SampleRef};
pub use decode::decode;
pub use encode::encode;

/// What a sample must tell the codec. Implemented by the decoded [`SampleRef`] and by
/// `(t_ns, op, latency_ns, bytes, error)` tuples; the run's own sample type implements it
/// to be stored without a copy.
pub trait SampleRecord {
    /// Start of the call, ns since the start of the run.
    fn t_ns(&self) -> u64;
    /// Operation kind as the result names it (`write`, `fsync`...).
    fn op(&self) -> &str;
    fn latency_ns(&self) -> u64;
    fn bytes(&self) -> u64;
    /// The errno name (`EIO`) when the call failed: borrowed where the name is kept, made
    /// when it is not (an errno number without a name becomes `errno 123`).
    fn error(&self) -> Option<Cow<'_, str>>;
    /// The task that made the call (a traced command's process name), if recorded.
    fn process(&self) -> Option<&str> {
        None
    }
}

impl<O: AsRef<str>, E: AsRef<str>> SampleRecord for (u64, O, u64, u64, Option<E>) {
    fn t_ns(&self) -> u64 {
        self.0
    }
    fn op(&self) -> &str {
        self.1.as_ref()
    }
    fn latency_ns(&self) -> u64 {
        self.2
    }
    fn bytes(&self) -> u64 {
        self.3
    }
    fn error(&self) -> Option<Cow<'_, str>> {
        self.4.as_ref().map(|e| Cow::Borrowed(e.as_ref()))
    }
}

/// The format of blocks whose samples name no task.
pub const FORMAT: u8 = 1;
/// The format of blocks with a task column.
pub const FORMAT_WITH_TASKS: u8 = 2;

/// Why a block cannot be decoded: the store is damaged or was written by a newer version.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CodecError {
    #[error("sample block format {0} is unknown to this fsynclab (it knows {FORMAT} and {FORMAT_WITH_TASKS}); a newer version wrote it")]
    UnknownFormat(u8),
    #[error("sample block is damaged: {0}")]
    Damaged(&'static str),
}

pub(crate) fn intern(names: &mut Vec<String>, index: &mut HashMap<String, u32>, name: &str) -> u32 {
    if let Some(&i) = index.get(name) {
        return i;
    }
    let i = names.len() as u32;
    names.push(name.to_string());
    index.insert(name.to_string(), i);
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::stats::SplitMix64;

    pub(super) type Tuple = (u64, String, u64, u64, Option<String>);

    pub(super) fn as_tuples(c: &SampleColumns) -> Vec<Tuple> {
        c.iter()
            .map(|s| {
                (
                    s.t_ns,
                    s.op.to_string(),
                    s.latency_ns,
                    s.bytes,
                    s.error.map(str::to_string),
                )
            })
            .collect()
    }

    #[test]
    fn round_trip_of_a_small_run() {
        let samples: Vec<Tuple> = vec![
            (1000, "write".into(), 5000, 1 << 20, None),
            (7000, "fsync".into(), 3_000_000, 0, None),
            (3_010_000, "write".into(), 5200, 1 << 20, None),
            (3_020_000, "fsync".into(), 2_900_000, 0, Some("EIO".into())),
            (3_000_000, "write".into(), 10, 4096, Some("ENOSPC".into())), // out of order
        ];
        let block = encode(&samples);
        assert_eq!(as_tuples(&decode(&block).unwrap()), samples);
        assert_eq!(as_tuples(&decode(&encode::<Tuple>(&[])).unwrap()), Vec::<Tuple>::new());
    }

    /// Property test: random samples of every shape (any u64 times in any order, huge
    /// latencies and sizes, many op and error names) decode to exactly what was encoded.
    #[test]
    /// Issue 11.
    fn codec_round_trips_random_samples_exactly() {
        let mut rng = SplitMix64::new(11);
        let ops = [
            "write",
            "fsync",
            "fdatasync",
            "sync_file_range",
            "write_osync",
            "é-ünïcode",
        ];
        let errors = ["EIO", "ENOSPC", "EINTR", "EDQUOT"];
        for round in 0..200 {
            let n = rng.below(if round % 10 == 0 { 20_000 } else { 300 });
            let mut t = rng.next_u64() >> rng.below(64);
            let samples: Vec<Tuple> = (0..n)
                .map(|_| {
                    let step = match rng.below(4) {
                        0 => rng.next_u64(), // anywhere, wrapping
                        1 => rng.below(100) as u64,
                        _ => rng.next_u64() >> (20 + rng.below(44)),
                    };
                    t = t.wrapping_add(step);
                    let latency = rng.next_u64() >> rng.below(64);
                    let bytes = match rng.below(3) {
                        0 => 4096,
                        1 => 0,
                        _ => rng.next_u64() >> rng.below(64),
                    };
                    let error = (rng.below(8) == 0).then(|| errors[rng.below(errors.len())].to_string());
                    (t, ops[rng.below(ops.len())].to_string(), latency, bytes, error)
                })
                .collect();
            let decoded = decode(&encode(&samples)).unwrap();
            assert_eq!(as_tuples(&decoded), samples, "round {round}");
        }
    }

    #[test]
    fn damaged_blocks_are_refused_not_misread() {
        let samples: Vec<Tuple> = (0..100)
            .map(|i| (i * 1000, "fsync".to_string(), 5000 + i, 0, None))
            .collect();
        let block = encode(&samples);
        assert_eq!(decode(&[]), Err(CodecError::Damaged("empty block")));
        assert_eq!(decode(&[9]), Err(CodecError::UnknownFormat(9)));
        for cut in [1, 2, block.len() / 2, block.len() - 1] {
            assert!(decode(&block[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = block.clone();
        longer.push(0);
        assert!(decode(&longer).is_err());
        // A huge sample count must not allocate.
        let mut huge = vec![FORMAT];
        encode::put_varint(&mut huge, u64::MAX >> 1);
        assert!(decode(&huge).is_err());
    }
}
