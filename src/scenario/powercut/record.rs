//! The records an application pattern writes: fixed-size, each naming itself (a sequence
//! number, the slot it belongs to) and carrying a checksum, so that after a power cut a
//! record reads back as intact, torn (some sectors of it old, or zero) or absent.
//!
//! Layout, little-endian, `size` bytes in all (at least [`MIN_SIZE`]):
//! `magic u32 | seq u64 | slot u32 | size u32 | payload ... | checksum u64`, where the
//! payload is a pattern derived from `seq` (so a torn record cannot pass for another) and
//! the checksum is FNV-1a 64 over everything before it.

/// `FSLR`: what a record begins with.
const MAGIC: u32 = u32::from_le_bytes(*b"FSLR");
/// The header (magic, seq, slot, size) and the checksum.
pub(crate) const MIN_SIZE: usize = 4 + 8 + 4 + 4 + 8;

/// What a record says about itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    /// The pattern's sequence number: one per write the application made.
    pub(crate) seq: u64,
    /// Where it belongs: the slot of an overwritten file, 0 elsewhere.
    pub(crate) slot: u32,
}

/// What a stretch of a file holds where a record was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// A whole record, its checksum right.
    Intact(Record),
    /// Zeros only: never written, or the write was lost (a hole, or unwritten blocks).
    Zero,
    /// Anything else: part of a record (a torn write), or another record's leftovers.
    Torn,
}

/// FNV-1a 64 (Fowler, Noll, Vo): enough to tell a whole record from a torn one; not a
/// defence against anyone.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Record {
    /// The record's bytes, `size` of them (`size` >= [`MIN_SIZE`]).
    pub(crate) fn encode(&self, size: usize) -> Vec<u8> {
        let size = size.max(MIN_SIZE);
        let mut b = Vec::with_capacity(size);
        b.extend_from_slice(&MAGIC.to_le_bytes());
        b.extend_from_slice(&self.seq.to_le_bytes());
        b.extend_from_slice(&self.slot.to_le_bytes());
        b.extend_from_slice(&(size as u32).to_le_bytes());
        let fill = self.seq.to_le_bytes();
        while b.len() < size - 8 {
            let i = b.len();
            b.push(fill[i % 8] ^ (i as u8));
        }
        let sum = fnv1a(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        b
    }

    /// Reads what `bytes` (one record's stretch) holds.
    pub(crate) fn decode(bytes: &[u8]) -> Found {
        if bytes.iter().all(|b| *b == 0) {
            return Found::Zero;
        }
        if bytes.len() < MIN_SIZE {
            return Found::Torn;
        }
        let u32_at = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&bytes[i..i + 8]);
            u64::from_le_bytes(a)
        };
        let size = u32_at(16) as usize;
        if u32_at(0) != MAGIC || size != bytes.len() {
            return Found::Torn;
        }
        let body = &bytes[..size - 8];
        if fnv1a(body) != u64_at(size - 8) {
            return Found::Torn;
        }
        let record = Record {
            seq: u64_at(4),
            slot: u32_at(12),
        };
        // The payload follows from the sequence number: a record is itself, whole.
        if record.encode(size) != bytes {
            return Found::Torn;
        }
        Found::Intact(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_as_itself() {
        let r = Record { seq: 42, slot: 7 };
        for size in [MIN_SIZE, 512, 4096] {
            let b = r.encode(size);
            assert_eq!(b.len(), size);
            assert_eq!(Record::decode(&b), Found::Intact(r));
        }
    }

    #[test]
    fn a_torn_or_zeroed_record_is_told_apart() {
        let r = Record { seq: 9, slot: 0 };
        let mut b = r.encode(4096);
        // The second sector lost: the device persisted only the first 512 bytes.
        b[512..1024].fill(0);
        assert_eq!(Record::decode(&b), Found::Torn);
        assert_eq!(Record::decode(&vec![0u8; 4096]), Found::Zero);
        // The first half from another record: a torn overwrite.
        let mut mixed = Record { seq: 8, slot: 0 }.encode(4096);
        mixed[2048..].copy_from_slice(&r.encode(4096)[2048..]);
        assert_eq!(Record::decode(&mixed), Found::Torn);
    }
}
