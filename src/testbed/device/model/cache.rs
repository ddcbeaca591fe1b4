//! The write cache: how a write enters the drive and what the drive holds until the drain
//! ([`super::drain`]) puts it on the media.
//!
//! A write crosses the bus (`len / bus rate`, plus the command latency) and is acknowledged
//! once it is in the cache; when the cache is full it waits for room. With no cache
//! (`cache=0`) or for a write larger than the cache, the write is acknowledged only once on
//! the media (write-through). A later write supersedes the part of a held one it overlaps:
//! the drive keeps the newest data, and the superseded bytes never reach the media.
//!
//! A cache divided into segments (`segments=N`) holds at most N runs of contiguous writes
//! waiting to drain, whatever their bytes: a write that neither overlaps nor continues one
//! needs a segment of its own, and waits for room when none is free, as a write that does
//! not fit does. Drives of 2008-2010 split their buffer into a fixed number of segments (32 by
//! default in Seagate's desktop mode) and queued at most 32 commands (SATA NCQ), so the
//! elevator sorted a few dozen random writes, not the thousands 32 MB of 4 KiB would hold.

use std::sync::Arc;

use super::{count_in, count_out, Disk, Nanos};

/// A shared, cheaply sliced piece of a write's data.
#[derive(Clone, Debug)]
pub(crate) struct Chunk {
    buf: Arc<[u8]>,
    start: usize,
    len: usize,
}

impl Chunk {
    pub(crate) fn new(buf: Arc<[u8]>) -> Chunk {
        let len = buf.len();
        Chunk { buf, start: 0, len }
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn slice(&self, from: usize, len: usize) -> Chunk {
        Chunk {
            buf: self.buf.clone(),
            start: self.start + from,
            len,
        }
    }
}

/// A write held by the drive, not yet on the media.
#[derive(Clone, Debug)]
pub(super) struct Extent {
    pub(super) offset: u64,
    pub(super) data: Chunk,
    /// The order the write entered the drive in (the acknowledgement order of cached writes).
    pub(super) seq: u64,
    /// When it entered the drive: the drain may not start it earlier.
    pub(super) ready: Nanos,
    /// Write-through (no room in any cache): acknowledged only once drained.
    pub(super) through: bool,
}

impl Extent {
    pub(super) fn end(&self) -> u64 {
        self.offset + self.data.len() as u64
    }
}

/// What became of a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriteOutcome {
    /// In the cache; acknowledge at `at`.
    Cached { seq: u64, at: Nanos },
    /// Queued for the media; acknowledge once [`Disk::is_pending`] says `seq` has drained.
    WriteThrough { seq: u64 },
    /// The cache is full: wait until the drain frees room, then try again.
    NoRoom,
}

impl Disk {
    /// A write of `data` at `offset` arriving at `now`.
    pub(crate) fn write(&mut self, now: Nanos, offset: u64, data: Chunk) -> WriteOutcome {
        let len = data.len() as u64;
        let end = offset + len;
        let through = len > self.figures.cache_bytes;
        if !through {
            let freed = self.overlapped_bytes(offset, end);
            if self.cached_bytes - freed.min(self.cached_bytes) + len > self.figures.cache_bytes {
                return WriteOutcome::NoRoom;
            }
            let segments = self.figures.cache_segments as usize;
            if segments > 0 && !self.joins_a_segment(offset, end) && self.segments_in_use() >= segments {
                return WriteOutcome::NoRoom;
            }
        }
        let arrived = self.bus(now, len);
        self.supersede(now, offset, end);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.stats.writes += 1;
        self.stats.write_bytes += len;
        self.held_bytes += len;
        self.insert_pending(Extent {
            offset,
            data,
            seq,
            ready: arrived,
            through,
        });
        if through {
            self.stats.write_through += 1;
            WriteOutcome::WriteThrough { seq }
        } else {
            self.add_cached(arrived, len);
            WriteOutcome::Cached {
                seq,
                at: arrived + self.command_latency_ns(),
            }
        }
    }

    /// Bytes in the write cache now.
    pub(crate) fn cached_bytes(&self) -> u64 {
        self.cached_bytes
    }

    /// Whether the write numbered `seq` is still held by the drive (not all on the media).
    pub(crate) fn is_pending(&self, seq: u64) -> bool {
        self.held_seqs.contains_key(&seq)
    }

    /// The pending (not yet draining) writes `[offset, end)` overlaps, by key. They do not
    /// overlap each other, so going down from `end` the first one that ends at or before
    /// `offset` is the last candidate.
    pub(super) fn overlapping(&self, offset: u64, end: u64) -> impl Iterator<Item = &Extent> {
        self.pending
            .range(..end)
            .rev()
            .map(|(_, e)| e)
            .take_while(move |e| e.end() > offset)
    }

    /// Cache segments in use: the runs of contiguous cached writes waiting to drain (a drive
    /// fills a segment with contiguous data; a write that continues one stays in it).
    fn segments_in_use(&self) -> usize {
        let mut runs = 0;
        let mut end = None;
        for e in self.pending.values().filter(|e| !e.through) {
            if end != Some(e.offset) {
                runs += 1;
            }
            end = Some(e.end());
        }
        runs
    }

    /// Whether a write of `[offset, end)` overlaps or continues a cached write waiting to
    /// drain, and so goes into its segment.
    fn joins_a_segment(&self, offset: u64, end: u64) -> bool {
        self.pending
            .range(..=end)
            .rev()
            .take_while(|(_, e)| e.end() >= offset)
            .any(|(_, e)| !e.through)
    }

    /// Bytes of pending writes that `[offset, end)` overlaps.
    fn overlapped_bytes(&self, offset: u64, end: u64) -> u64 {
        self.overlapping(offset, end)
            .map(|e| e.end().min(end) - e.offset.max(offset))
            .sum()
    }

    /// Removes what `[offset, end)` overlaps from the pending writes: a later write
    /// supersedes an earlier one there (the drive keeps the newest data).
    fn supersede(&mut self, now: Nanos, offset: u64, end: u64) {
        let hit: Vec<u64> = self.overlapping(offset, end).map(|e| e.offset).collect();
        for key in hit {
            let Some(e) = self.remove_pending(key) else { continue };
            let cut_from = offset.max(e.offset);
            let cut_to = end.min(e.end());
            let cut = cut_to - cut_from;
            self.stats.overwritten_bytes += cut;
            self.release(now, &e, cut);
            if e.offset < offset {
                self.insert_pending(Extent {
                    data: e.data.slice(0, (offset - e.offset) as usize),
                    ..e.clone()
                });
            }
            if e.end() > end {
                let skip = (end - e.offset) as usize;
                self.insert_pending(Extent {
                    offset: end,
                    data: e.data.slice(skip, e.data.len() - skip),
                    ..e.clone()
                });
            }
        }
    }

    /// Holds `e` until the drain takes it: by offset, with its ready time and its sequence
    /// number counted.
    fn insert_pending(&mut self, e: Extent) {
        count_in(&mut self.pending_ready, e.ready);
        count_in(&mut self.held_seqs, e.seq);

        self.pending.insert(e.offset, e);
    }

    /// Takes the pending write at `key` out (to drain it, or to supersede it); its sequence
    /// number stays held until [`Disk::release`].
    pub(super) fn remove_pending(&mut self, key: u64) -> Option<Extent> {
        let e = self.pending.remove(&key)?;
        count_out(&mut self.pending_ready, &e.ready);
        Some(e)
    }

    /// The drive no longer holds `e`'s bytes (on the media, or superseded).
    pub(super) fn release(&mut self, now: Nanos, e: &Extent, bytes: u64) {
        self.held_bytes -= bytes;
        if !e.through {
            self.remove_cached(now, bytes);
        }
        count_out(&mut self.held_seqs, &e.seq);
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{chunk, drain_all, drain_one, hdd, GB, MS};
    use super::super::DiskFigures;
    use super::*;

    #[test]
    fn cached_write_is_acknowledged_after_the_bus_and_drains_in_the_background() {
        let mut d = Disk::new(hdd(1_000_000));
        // 300 KB at 300 MB/s on the bus: 1 ms.
        let w = d.write(0, 0, chunk(300_000, 1));
        assert_eq!(w, WriteOutcome::Cached { seq: 0, at: MS });
        assert_eq!(d.cached_bytes(), 300_000);
        // The drain starts once it has crossed the bus. The head is over byte 0, but the
        // platter turned on during that 1 ms: byte 0 comes round after the rest of a
        // rotation (11.1 ms at 5400 rpm in all), then 3 ms of transfer.
        assert_eq!(d.next_drain_start(), Some(MS));
        let op = d.next_drain(100 * MS).unwrap();
        assert!(op.end.abs_diff(MS + 11_111_111 - MS + 3 * MS) < 10, "{}", op.end);
        assert!(d.is_pending(0), "draining is not yet on the media");
        d.complete(op.end);
        assert!(!d.is_pending(0));
        assert_eq!(d.cached_bytes(), 0);
    }

    #[test]
    fn a_full_cache_makes_writes_wait_for_the_drain() {
        let mut d = Disk::new(hdd(8192));
        assert!(matches!(d.write(0, 0, chunk(4096, 1)), WriteOutcome::Cached { .. }));
        assert!(matches!(
            d.write(0, 50_000_000_000, chunk(4096, 2)),
            WriteOutcome::Cached { .. }
        ));
        assert_eq!(d.write(0, 10_000_000_000, chunk(4096, 3)), WriteOutcome::NoRoom);
        // Room appears when the first drain op ends; the write then fits.
        let op = drain_one(&mut d);
        assert!(matches!(
            d.write(op.end, 10_000_000_000, chunk(4096, 3)),
            WriteOutcome::Cached { .. }
        ));
        // Overwriting a cached block needs no extra room.
        assert!(matches!(
            d.write(op.end, 50_000_000_000, chunk(4096, 4)),
            WriteOutcome::Cached { .. }
        ));
        assert_eq!(d.stats().overwritten_bytes, 4096);
    }

    #[test]
    /// Issue 20.
    fn a_segmented_cache_holds_at_most_that_many_writes() {
        let mut d = Disk::new(DiskFigures {
            cache_segments: 2,
            ..hdd(1 << 20)
        });
        assert!(matches!(d.write(0, 0, chunk(4096, 1)), WriteOutcome::Cached { .. }));
        assert!(matches!(
            d.write(0, 10 * GB, chunk(4096, 2)),
            WriteOutcome::Cached { .. }
        ));
        // Bytes to spare, but no segment.
        assert_eq!(d.write(0, 20 * GB, chunk(4096, 3)), WriteOutcome::NoRoom);
        // A write over a cached one, or continuing it, goes into its segment.
        assert!(matches!(
            d.write(0, 10 * GB, chunk(4096, 4)),
            WriteOutcome::Cached { .. }
        ));
        assert!(matches!(d.write(0, 4096, chunk(4096, 5)), WriteOutcome::Cached { .. }));
        assert!(matches!(
            d.write(0, 10 * GB - 4096, chunk(4096, 6)),
            WriteOutcome::Cached { .. }
        ));
        assert_eq!(d.write(0, 20 * GB, chunk(4096, 3)), WriteOutcome::NoRoom);
        // The drain frees one once a run has drained whole.
        drain_one(&mut d);
        drain_one(&mut d);
        assert!(matches!(
            d.write(MS, 20 * GB, chunk(4096, 3)),
            WriteOutcome::Cached { .. }
        ));
    }

    #[test]
    /// Issue 20.
    fn random_writes_through_a_segmented_cache_cost_about_their_positioning() {
        // 400 random 4 KiB writes over 1 GB of a 100 GB disk, each acknowledged then the
        // next sent (queue depth 1), as fio's rand-4k job does: with the whole cache free
        // for them the elevator sorts hundreds; with 32 segments, 32 at most.
        let rate = |segments: u32| {
            let mut d = Disk::new(DiskFigures {
                cache_segments: segments,
                ..hdd(32 << 20)
            });
            let mut rng = crate::rng::SplitMix64::new(7);
            let mut now = 0;
            for i in 0..4000u64 {
                let offset = rng.below((GB / 4096) as usize) as u64 * 4096;
                loop {
                    while let Some(op) = d.next_drain(now) {
                        d.complete(op.end);
                    }
                    match d.write(now, offset, chunk(4096, i as u8)) {
                        WriteOutcome::Cached { at, .. } => {
                            now = at;
                            break;
                        }
                        _ => now = d.next_drain_start().expect("something drains").max(now + 1),
                    }
                }
            }
            4000.0 / (now as f64 / 1e9)
        };
        let (unbounded, segmented) = (rate(0), rate(32));
        // 5400 rpm: half a turn is 5.6 ms; a short seek over 1 GB of 100 GB about 1.6 ms.
        assert!((100.0..200.0).contains(&segmented), "{segmented:.0} writes/s");
        assert!(unbounded > 2.0 * segmented, "{unbounded:.0} vs {segmented:.0}");
    }

    #[test]
    fn a_later_write_supersedes_the_cached_one_it_overlaps() {
        let mut d = Disk::new(hdd(1 << 20));
        d.write(0, 0, chunk(12288, 1));
        d.write(0, 4096, chunk(4096, 2));
        assert_eq!(d.cached_bytes(), 12288);
        let ops = drain_all(&mut d, u64::MAX);
        let pieces: Vec<(u64, usize, u8)> = ops
            .iter()
            .map(|o| (o.offset, o.data.len(), o.data.as_slice()[0]))
            .collect();
        assert_eq!(pieces, [(0, 4096, 1), (4096, 4096, 2), (8192, 4096, 1)]);
    }
}
