//! One block of format 1 or 2 back into columns, refusing damage rather than misreading it.

use super::{CodecError, SampleColumns, FORMAT, FORMAT_WITH_TASKS};

#[inline]
fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
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
    if format != FORMAT && format != FORMAT_WITH_TASKS {
        return Err(CodecError::UnknownFormat(format));
    }
    let with_tasks = format == FORMAT_WITH_TASKS;
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
    let task_names = if with_tasks { r.names()? } else { Vec::new() };
    let mut columns = Vec::with_capacity(5);
    for _ in 0..(4 + usize::from(with_tasks)) {
        let len = r.varint()?;
        columns.push(Reader {
            data: r.take(len)?,
            at: 0,
        });
    }
    let mut tasks = if with_tasks { columns.pop() } else { None };
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
        if let Some(tasks) = tasks.as_mut() {
            let task = tasks.varint()?;
            if task > task_names.len() as u64 {
                return Err(CodecError::Damaged("a task outside the dictionary"));
            }
            out.process.push(task as u32);
        }
    }
    if [&times, &codes, &latencies, &bytes_col]
        .iter()
        .chain(tasks.as_ref().as_slice())
        .any(|c| c.at != c.data.len())
        || r.at != block.len()
    {
        return Err(CodecError::Damaged("bytes left over after the last sample"));
    }
    out.op_names = op_names;
    out.error_names = error_names;
    out.process_names = task_names;
    Ok(out)
}
