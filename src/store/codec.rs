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
//! Columns rather than rows so that like values sit together, for a general-purpose
//! compressor to work on should one be added as format 2. None is today: on a real
//! fsync-tps run (575,704 calls of five kinds, started out of order across threads) the
//! format takes 5.98 bytes a sample and encodes in 58–250 ns a sample
//! (`flock /tmp/fsynclab-machine.lock cargo bench --bench store_cost -- RESULT.json`).

use std::collections::HashMap;

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
    /// The errno name (`EIO`) when the call failed.
    fn error(&self) -> Option<&str>;
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
    fn error(&self) -> Option<&str> {
        self.4.as_ref().map(AsRef::as_ref)
    }
}

pub const FORMAT: u8 = 1;

/// Why a block cannot be decoded: the store is damaged or was written by a newer version.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CodecError {
    #[error("sample block format {0} is unknown to this fsynclab (it knows {FORMAT}); a newer version wrote it")]
    UnknownFormat(u8),
    #[error("sample block is damaged: {0}")]
    Damaged(&'static str),
}

/// Samples decoded from one or more blocks, column by column, with the names once each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SampleColumns {
    pub op_names: Vec<String>,
    pub error_names: Vec<String>,
    pub t_ns: Vec<u64>,
    /// Index into `op_names`.
    pub op: Vec<u32>,
    pub latency_ns: Vec<u64>,
    pub bytes: Vec<u64>,
    /// 0 for success, else 1 + index into `error_names`.
    pub error: Vec<u32>,
}

/// One sample of [`SampleColumns`], borrowing its names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleRef<'a> {
    pub t_ns: u64,
    pub op: &'a str,
    pub latency_ns: u64,
    pub bytes: u64,
    pub error: Option<&'a str>,
}

impl SampleRecord for SampleRef<'_> {
    fn t_ns(&self) -> u64 {
        self.t_ns
    }
    fn op(&self) -> &str {
        self.op
    }
    fn latency_ns(&self) -> u64 {
        self.latency_ns
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
    fn error(&self) -> Option<&str> {
        self.error
    }
}

fn intern(names: &mut Vec<String>, index: &mut HashMap<String, u32>, name: &str) -> u32 {
    if let Some(&i) = index.get(name) {
        return i;
    }
    let i = names.len() as u32;
    names.push(name.to_string());
    index.insert(name.to_string(), i);
    i
}

impl SampleColumns {
    pub fn len(&self) -> usize {
        self.t_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_ns.is_empty()
    }

    pub fn get(&self, i: usize) -> SampleRef<'_> {
        SampleRef {
            t_ns: self.t_ns[i],
            op: &self.op_names[self.op[i] as usize],
            latency_ns: self.latency_ns[i],
            bytes: self.bytes[i],
            error: match self.error[i] {
                0 => None,
                e => Some(&self.error_names[e as usize - 1]),
            },
        }
    }

    /// Writes the samples as CSV (RFC 4180): a header `t_ns,op,latency_ns,bytes,error`, then
    /// one line a call, `error` empty for a call that succeeded. `out` should be buffered.
    pub fn write_csv<W: std::io::Write>(&self, mut out: W) -> std::io::Result<()> {
        fn field(s: &str) -> std::borrow::Cow<'_, str> {
            if s.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", s.replace('"', "\"\"")).into()
            } else {
                s.into()
            }
        }
        let ops: Vec<_> = self.op_names.iter().map(|n| field(n)).collect();
        let errors: Vec<_> = self.error_names.iter().map(|n| field(n)).collect();
        writeln!(out, "t_ns,op,latency_ns,bytes,error")?;
        for i in 0..self.len() {
            let error = match self.error[i] {
                0 => "",
                e => &errors[e as usize - 1],
            };
            writeln!(
                out,
                "{},{},{},{},{error}",
                self.t_ns[i], ops[self.op[i] as usize], self.latency_ns[i], self.bytes[i]
            )?;
        }
        out.flush()
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = SampleRef<'_>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// The columns of any samples (a run not stored yet, a result file).
    pub fn from_records<S: SampleRecord>(samples: &[S]) -> SampleColumns {
        let mut out = SampleColumns::default();
        let (mut ops, mut errors) = (HashMap::new(), HashMap::new());
        for s in samples {
            out.t_ns.push(s.t_ns());
            out.op.push(intern(&mut out.op_names, &mut ops, s.op()));
            out.latency_ns.push(s.latency_ns());
            out.bytes.push(s.bytes());
            out.error.push(
                s.error()
                    .map_or(0, |e| 1 + intern(&mut out.error_names, &mut errors, e)),
            );
        }
        out
    }

    /// Appends `other` (the next block of the same run), mapping its names onto ours.
    pub fn append(&mut self, other: SampleColumns) {
        let mut ops: HashMap<String, u32> = self.op_names.iter().cloned().zip(0..).collect();
        let mut errors: HashMap<String, u32> = self.error_names.iter().cloned().zip(0..).collect();
        let op_map: Vec<u32> = other
            .op_names
            .iter()
            .map(|n| intern(&mut self.op_names, &mut ops, n))
            .collect();
        let err_map: Vec<u32> = other
            .error_names
            .iter()
            .map(|n| intern(&mut self.error_names, &mut errors, n))
            .collect();
        self.t_ns.extend(other.t_ns);
        self.op.extend(other.op.iter().map(|&o| op_map[o as usize]));
        self.latency_ns.extend(other.latency_ns);
        self.bytes.extend(other.bytes);
        self.error.extend(
            other
                .error
                .iter()
                .map(|&e| if e == 0 { 0 } else { 1 + err_map[e as usize - 1] }),
        );
    }
}

#[inline]
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
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
        let ei = s.error().map_or(0, |e| 1 + intern(&mut error_names, &mut errors, e));
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
    let mut out = Vec::with_capacity(32 + times.len() + codes.len() + latencies.len() + bytes.len());
    out.push(FORMAT);
    put_varint(&mut out, n as u64);
    put_names(&mut out, &op_names);
    put_names(&mut out, &error_names);
    for column in [&times, &codes, &latencies, &bytes] {
        put_varint(&mut out, column.len() as u64);
        out.extend_from_slice(column);
    }
    out
}

/// Reads varints and names from a block, refusing to run past its end.
struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, CodecError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self
                .data
                .get(self.at)
                .ok_or(CodecError::Damaged("a number runs past the end"))?;
            self.at += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(CodecError::Damaged("a number is longer than 64 bits"))
    }

    fn take(&mut self, len: u64) -> Result<&'a [u8], CodecError> {
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| self.at.checked_add(l))
            .filter(|&e| e <= self.data.len())
            .ok_or(CodecError::Damaged("a field runs past the end"))?;
        let s = &self.data[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn names(&mut self) -> Result<Vec<String>, CodecError> {
        let count = self.varint()?;
        if count > self.data.len() as u64 {
            return Err(CodecError::Damaged("more names than bytes"));
        }
        (0..count)
            .map(|_| {
                let len = self.varint()?;
                let bytes = self.take(len)?;
                String::from_utf8(bytes.to_vec()).map_err(|_| CodecError::Damaged("a name is not UTF-8"))
            })
            .collect()
    }
}

/// Decodes one block made by [`encode`].
pub fn decode(block: &[u8]) -> Result<SampleColumns, CodecError> {
    let format = *block.first().ok_or(CodecError::Damaged("empty block"))?;
    if format != FORMAT {
        return Err(CodecError::UnknownFormat(format));
    }
    let mut r = Reader { data: block, at: 1 };
    let n = r.varint()?;
    // Every sample takes at least three bytes (time, code, latency): a count beyond that
    // is damage, and must not make us allocate for it.
    if n > block.len() as u64 / 3 {
        return Err(CodecError::Damaged("more samples than the block can hold"));
    }
    let n = n as usize;
    let op_names = r.names()?;
    let error_names = r.names()?;
    let mut columns = Vec::with_capacity(4);
    for _ in 0..4 {
        let len = r.varint()?;
        columns.push(Reader {
            data: r.take(len)?,
            at: 0,
        });
    }
    let [mut times, mut codes, mut latencies, mut bytes_col] =
        <[Reader; 4]>::try_from(columns).map_err(|_| CodecError::Damaged("columns"))?;
    let slots = error_names.len() as u64 + 1;
    let mut out = SampleColumns {
        t_ns: Vec::with_capacity(n),
        op: Vec::with_capacity(n),
        latency_ns: Vec::with_capacity(n),
        bytes: Vec::with_capacity(n),
        error: Vec::with_capacity(n),
        ..SampleColumns::default()
    };
    let mut last_bytes = vec![0u64; op_names.len()];
    let mut t = 0u64;
    for _ in 0..n {
        t = t.wrapping_add(unzigzag(times.varint()?) as u64);
        let code = codes.varint()?;
        let (same, pair) = (code & 1 == 1, code >> 1);
        let (oi, ei) = ((pair / slots) as usize, pair % slots);
        if oi >= op_names.len() {
            return Err(CodecError::Damaged("an op kind outside the dictionary"));
        }
        let b = if same { last_bytes[oi] } else { bytes_col.varint()? };
        last_bytes[oi] = b;
        out.t_ns.push(t);
        out.op.push(oi as u32);
        out.latency_ns.push(latencies.varint()?);
        out.bytes.push(b);
        out.error.push(ei as u32);
    }
    if [&times, &codes, &latencies, &bytes_col]
        .iter()
        .any(|c| c.at != c.data.len())
        || r.at != block.len()
    {
        return Err(CodecError::Damaged("bytes left over after the last sample"));
    }
    out.op_names = op_names;
    out.error_names = error_names;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::stats::SplitMix64;

    type Tuple = (u64, String, u64, u64, Option<String>);

    fn as_tuples(c: &SampleColumns) -> Vec<Tuple> {
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
    fn issue11_codec_round_trips_random_samples_exactly() {
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
    fn blocks_append_with_their_own_dictionaries() {
        let a: Vec<Tuple> = vec![
            (1, "write".into(), 2, 3, None),
            (2, "fsync".into(), 4, 0, Some("EIO".into())),
        ];
        let b: Vec<Tuple> = vec![
            (3, "fsync".into(), 5, 0, None),
            (4, "fdatasync".into(), 6, 0, Some("ENOSPC".into())),
        ];
        let mut cols = decode(&encode(&a)).unwrap();
        cols.append(decode(&encode(&b)).unwrap());
        let all: Vec<Tuple> = a.into_iter().chain(b).collect();
        assert_eq!(as_tuples(&cols), all);
        assert_eq!(cols.op_names, ["write", "fsync", "fdatasync"]);
        assert_eq!(as_tuples(&SampleColumns::from_records(&all)), all);
    }

    #[test]
    fn samples_as_csv() {
        let samples: Vec<Tuple> = vec![
            (1, "write".into(), 2, 4096, None),
            (5, "fsync".into(), 900, 0, Some("EIO".into())),
            (7, "odd,\"op\"".into(), 1, 0, None),
        ];
        let mut out = Vec::new();
        SampleColumns::from_records(&samples).write_csv(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "t_ns,op,latency_ns,bytes,error\n1,write,2,4096,\n5,fsync,900,0,EIO\n7,\"odd,\"\"op\"\"\",1,0,\n"
        );
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
        put_varint(&mut huge, u64::MAX >> 1);
        assert!(decode(&huge).is_err());
    }
}
