//! Reads a C struct's fields from a record's bytes, in order: on a 64-bit machine every
//! field is naturally aligned, so a cursor that reads each at the next offset of its
//! alignment reads it where C put it. A field past the end reads as zeros (the records'
//! lengths are checked before, against their C sizes).

/// Reads native-endian fields one after the other, each at its alignment.
pub(super) struct Cursor<'a> {
    bytes: &'a [u8],
    /// The next field's offset, before its alignment.
    at: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Cursor<'a> {
        Cursor { bytes, at: 0 }
    }

    /// Passes over `bytes` of fields this side does not read (the program's own).
    pub(super) fn skip(&mut self, bytes: usize) {
        self.at += bytes;
    }

    fn take<const N: usize>(&mut self) -> [u8; N] {
        self.at = self.at.next_multiple_of(N.min(8));
        let mut out = [0u8; N];
        if let Some(b) = self.bytes.get(self.at..self.at + N) {
            out.copy_from_slice(b);
        }
        self.at += N;
        out
    }

    pub(super) fn u64(&mut self) -> u64 {
        u64::from_ne_bytes(self.take())
    }

    pub(super) fn u32(&mut self) -> u32 {
        u32::from_ne_bytes(self.take())
    }

    /// A task name: 16 bytes, NUL-terminated unless all 16 are used.
    pub(super) fn comm(&mut self) -> String {
        let raw: [u8; 16] = self.take();
        let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
        String::from_utf8_lossy(&raw[..end]).into_owned()
    }
}
