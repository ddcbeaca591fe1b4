//! Reads: served from the cache when the drive holds every byte of the range (a hit costs
//! only the bus), otherwise from the media on the actuator, with the pieces the drive still
//! holds laid over what the media returns (they are newer).

use super::cache::{Chunk, Extent};
use super::{Disk, Nanos};

/// A read: wait until `at`, read the image, then lay the cached pieces over it. (Whether
/// the media was read shows in the statistics: a read hit or a media operation.)
#[derive(Clone, Debug)]
pub(crate) struct ReadPlan {
    pub(crate) at: Nanos,
    /// Pieces of the range still in the drive, in the order to apply them (older first).
    pub(crate) overlay: Vec<(u64, Chunk)>,
}

impl Disk {
    /// A read of `len` bytes at `offset` arriving at `now`.
    pub(crate) fn read(&mut self, now: Nanos, offset: u64, len: u64) -> ReadPlan {
        let end = offset + len;
        self.stats.reads += 1;
        self.stats.read_bytes += len;
        let clip = |e: &Extent| -> Option<(u64, Chunk)> {
            let from = e.offset.max(offset);
            let to = e.end().min(end);
            (from < to).then(|| (from, e.data.slice((from - e.offset) as usize, (to - from) as usize)))
        };
        // Oldest first: what is draining, then the pending writes (newer at any offset).
        let mut overlay: Vec<(u64, Chunk)> = self.draining.iter().filter_map(clip).collect();
        overlay.extend(self.overlapping(offset, end).filter_map(clip));
        let ready = if covers(&overlay, offset, end) {
            self.stats.read_hits += 1;
            now
        } else {
            self.on_media(now, offset, len, super::MediaOp::Read);
            self.actuator_free
        };
        let at = self.bus(ready, len) + self.command_latency_ns();
        ReadPlan { at, overlay }
    }
}

/// Whether `pieces` cover every byte of `[offset, end)`.
fn covers(pieces: &[(u64, Chunk)], offset: u64, end: u64) -> bool {
    let mut spans: Vec<(u64, u64)> = pieces.iter().map(|(o, c)| (*o, *o + c.len() as u64)).collect();
    spans.sort_unstable();
    let mut reached = offset;
    for (from, to) in spans {
        if from > reached {
            return false;
        }
        reached = reached.max(to);
    }
    reached >= end
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{chunk, hdd};
    use super::*;

    #[test]
    fn reads_of_cached_data_come_from_the_cache() {
        let mut d = Disk::new(hdd(1 << 20));
        d.write(0, 8192, chunk(4096, 7));
        let plan = d.read(0, 8192, 4096);
        assert_eq!((d.stats().read_hits, d.stats().media_ops), (1, 0), "a hit");
        assert_eq!(plan.overlay.len(), 1);
        assert_eq!(plan.overlay[0].1.as_slice(), &[7u8; 4096][..]);
        // Half cached: the media is read and the cached half laid over it.
        let plan = d.read(0, 4096, 8192);
        assert_eq!(d.stats().media_ops, 1, "a miss");
        assert_eq!(plan.overlay[0].0, 8192);
        assert_eq!(plan.overlay[0].1.len(), 4096);
        assert_eq!(d.stats().read_hits, 1);
    }
}
