//! A power cut: the drive loses its volatile cache. What is on the media stays (the image
//! holds exactly what has drained); of the writes the drive still holds, what survives is a
//! choice ([`Keep`]): nothing, as a drive whose cache simply loses power; or some of them, as
//! a drive that got that far with its drain before the power went, either in the order it
//! drains (a prefix) or in any order (drives reorder their writes, and a cut part-way through
//! a sweep leaves any subset); or a torn write, persisted in part, between two sectors.
//!
//! The writes held are taken in the order the drive would have drained them: those being
//! drained first (oldest first), then the others in C-SCAN order from the head. A write the
//! cache split (a later write superseded part of it) counts as the pieces left. A
//! battery-backed cache survives whatever [`Keep`] says. The draws come from a seed, in a
//! fixed order, so the same cut of the same state keeps the same writes.

use super::cache::{Chunk, Extent};
use super::Disk;
use super::Nanos;
use crate::rng::SplitMix64;

/// What survives of the writes the drive holds when the power goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Keep {
    /// Nothing: the cache is lost.
    #[default]
    Nothing,
    /// The first k of the n writes in drain order, k drawn from 0..=n.
    Prefix,
    /// k of the n writes, k drawn from 0..=n, which ones drawn too: drives drain out of order.
    Any,
    /// The first k in drain order, k drawn from 0..n, and the next one torn: its first
    /// sectors (as many as drawn, at least one) reach the media and the rest does not, as the
    /// write the drive was making when the power went. A write within one sector cannot tear:
    /// it is lost.
    Torn,
}

impl Keep {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Keep::Nothing => "none",
            Keep::Prefix => "prefix",
            Keep::Any => "any",
            Keep::Torn => "torn",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<Keep> {
        match name {
            "none" => Some(Keep::Nothing),
            "prefix" => Some(Keep::Prefix),
            "any" => Some(Keep::Any),
            "torn" => Some(Keep::Torn),
            _ => None,
        }
    }
}

/// What became of the writes the drive held at a cut: writes (or the pieces of them the cache
/// still held) and bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CutCounts {
    pub(crate) held_writes: u64,
    pub(crate) held_bytes: u64,
    /// Reached the media whole.
    pub(crate) kept_writes: u64,
    pub(crate) kept_bytes: u64,
    /// None of it reached the media.
    pub(crate) lost_writes: u64,
    pub(crate) lost_bytes: u64,
    /// Reached the media in part.
    pub(crate) torn_writes: u64,
    pub(crate) torn_bytes_kept: u64,
    pub(crate) torn_bytes_lost: u64,
    /// Of the writes held, those not yet acknowledged (write-through, waiting for the media).
    pub(crate) unacknowledged_writes: u64,
}

/// A cut's outcome: what to put on the media, and the counts.
#[derive(Clone, Debug, Default)]
pub(crate) struct CutOutcome {
    /// `(offset, data)` to write to the image, in this order (older writes first, so that a
    /// newer one kept over an older one ends on top).
    pub(crate) survivors: Vec<(u64, Chunk)>,
    pub(crate) counts: CutCounts,
}

/// What a cut does to one write held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Lost,
    Kept,
    /// Its first `n` bytes reach the media.
    Torn(u64),
}

impl Disk {
    /// The writes the drive holds, in the order it would drain them: those being drained
    /// (oldest first), then the others in C-SCAN order from the head.
    fn held_in_drain_order(&self) -> Vec<Extent> {
        let upward = self.pending.range(self.head..).map(|(_, e)| e);
        let wrapped = self.pending.range(..self.head).map(|(_, e)| e);
        self.draining.iter().chain(upward).chain(wrapped).cloned().collect()
    }

    /// Whether the drive has power (false once [`Disk::cut`] has run).
    #[cfg(test)]
    pub(crate) fn powered(&self) -> bool {
        self.powered
    }

    /// Cuts the power at `now`: decides from `keep` and `seed` which of the writes held
    /// survive, and empties the drive. The caller has already put on the media every drain
    /// operation that ended by `now` ([`Disk::complete`]); what is still draining counts as
    /// held. Afterwards the drive holds nothing and [`Disk::powered`] is false.
    pub(crate) fn cut(&mut self, now: Nanos, keep: Keep, seed: u64) -> CutOutcome {
        if !self.powered {
            return CutOutcome::default();
        }
        let held = self.held_in_drain_order();
        let fates = self.fates(&held, keep, seed);
        let mut out = CutOutcome::default();
        let c = &mut out.counts;
        let mut survivors: Vec<(u64, u64, Chunk)> = Vec::new();
        for (e, fate) in held.iter().zip(&fates) {
            let len = e.data.len() as u64;
            c.held_writes += 1;
            c.held_bytes += len;
            c.unacknowledged_writes += u64::from(e.through);
            match *fate {
                Fate::Lost => {
                    c.lost_writes += 1;
                    c.lost_bytes += len;
                }
                Fate::Kept => {
                    c.kept_writes += 1;
                    c.kept_bytes += len;
                    survivors.push((e.seq, e.offset, e.data.clone()));
                }
                Fate::Torn(n) => {
                    c.torn_writes += 1;
                    c.torn_bytes_kept += n;
                    c.torn_bytes_lost += len - n;
                    survivors.push((e.seq, e.offset, e.data.slice(0, n as usize)));
                }
            }
        }
        survivors.sort_by_key(|(seq, _, _)| *seq);
        out.survivors = survivors.into_iter().map(|(_, offset, data)| (offset, data)).collect();
        self.power_off(now);
        out
    }

    /// The fate of each write of `held` (in drain order).
    fn fates(&self, held: &[Extent], keep: Keep, seed: u64) -> Vec<Fate> {
        let n = held.len();
        let mut fates = vec![Fate::Lost; n];
        if self.figures.cache_durable {
            // The battery keeps the cache; a write-through write was on its way to the
            // media, not in the cache, and had not been acknowledged.
            for (fate, e) in fates.iter_mut().zip(held) {
                if !e.through {
                    *fate = Fate::Kept;
                }
            }
            return fates;
        }
        let mut draws = SplitMix64::new(seed);
        match keep {
            Keep::Nothing => {}
            Keep::Prefix => {
                let k = draws.below(n + 1);
                fates[..k].fill(Fate::Kept);
            }
            Keep::Any => {
                let k = draws.below(n + 1);
                // The first k places of a Fisher–Yates shuffle: a uniform k-subset.
                let mut order: Vec<usize> = (0..n).collect();
                for i in 0..k {
                    let j = i + draws.below(n - i);
                    order.swap(i, j);
                    fates[order[i]] = Fate::Kept;
                }
            }
            Keep::Torn if n > 0 => {
                let k = draws.below(n);
                fates[..k].fill(Fate::Kept);
                let e = &held[k];
                let sector = self.figures.sector_bytes.max(1);
                let (from, end) = (e.offset, e.end());
                // The sector boundaries strictly inside the write.
                let first = (from / sector + 1) * sector;
                if first < end {
                    let boundaries = (end - 1 - first) / sector + 1;
                    let at = first + draws.below(boundaries as usize) as u64 * sector;
                    fates[k] = Fate::Torn(at - from);
                }
            }
            Keep::Torn => {}
        }
        fates
    }

    /// Empties the drive: the cache's contents are gone.
    fn power_off(&mut self, now: Nanos) {
        let cached = self.cached_bytes;
        self.remove_cached(now, cached);
        self.pending.clear();
        self.pending_ready.clear();
        self.draining.clear();
        self.held_seqs.clear();
        self.held_bytes = 0;
        self.powered = false;
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{chunk, drain_one, hdd, GB};
    use super::super::DiskFigures;
    use super::*;

    /// A disk with no bus time (writes are in the drive at once), 1 MiB of cache, `sector`.
    fn disk(sector: u64) -> Disk {
        Disk::new(DiskFigures {
            bus_bytes_per_s: None,
            sector_bytes: sector,
            ..hdd(1 << 20)
        })
    }

    /// Writes at 30, 10 and 20 GB, drains the one at 10 GB (the elevator's first), then a
    /// write at 5 GB: held in drain order are 20, 30 (upwards from the head) and 5 GB (the
    /// next sweep). Each write's bytes carry its offset in GB.
    fn three_held() -> Disk {
        let mut d = disk(512);
        for gb in [30, 10, 20] {
            d.write(0, gb * GB, chunk(4096, gb as u8));
        }
        assert_eq!(drain_one(&mut d).offset, 10 * GB);
        d.write(0, 5 * GB, chunk(4096, 5));
        d
    }

    fn offsets(out: &CutOutcome) -> Vec<u64> {
        out.survivors.iter().map(|(o, _)| o / GB).collect()
    }

    #[test]
    fn by_default_the_cache_is_lost_and_the_drive_is_empty() {
        let mut d = three_held();
        let out = d.cut(0, Keep::Nothing, 0);
        assert!(out.survivors.is_empty());
        let c = out.counts;
        assert_eq!(
            (c.held_writes, c.held_bytes, c.lost_writes, c.lost_bytes),
            (3, 12288, 3, 12288)
        );
        assert_eq!((c.kept_writes, c.torn_writes, c.unacknowledged_writes), (0, 0, 0));
        assert!(!d.powered());
        assert_eq!(d.cached_bytes(), 0);
        assert!((0..5).all(|seq| !d.is_pending(seq)), "nothing held any more");
        assert!(
            d.cut(0, Keep::Prefix, 0).survivors.is_empty(),
            "a second cut finds nothing"
        );
    }

    #[test]
    fn a_prefix_keeps_the_first_k_in_drain_order() {
        // SplitMix64 from seed 1 first gives 0x910A2DEC89025CC1: below(4) = its top two bits,
        // 0b10 = 2. So 20 and 30 GB survive, 5 GB (the next sweep) is lost.
        let mut d = three_held();
        let out = d.cut(0, Keep::Prefix, 1);
        assert_eq!(
            offsets(&out),
            [30, 20],
            "written oldest first: 30 GB entered before 20 GB"
        );
        assert_eq!(out.survivors[0].1.as_slice(), &[30u8; 4096][..]);
        let c = out.counts;
        assert_eq!(
            (c.kept_writes, c.kept_bytes, c.lost_writes, c.lost_bytes),
            (2, 8192, 1, 4096)
        );
    }

    #[test]
    fn any_order_keeps_a_drawn_subset() {
        // Seed 4 draws 0x6E73E372E2338ACA: k = below(4) = 1; then 0xE474C66A4B98B030:
        // j = 0 + below(3) = 2. The third in drain order, 5 GB, is the only survivor, which
        // no prefix could leave.
        let mut d = three_held();
        let out = d.cut(0, Keep::Any, 4);
        assert_eq!(offsets(&out), [5]);
        assert_eq!((out.counts.kept_writes, out.counts.lost_writes), (1, 2));
    }

    #[test]
    fn a_torn_write_keeps_its_first_sectors() {
        // One 16 KiB write on a 4 KiB-sector drive: the boundaries inside it are at 4, 8
        // and 12 KiB. Seed 0: k = below(1) = 0 (0xE220A8397B1DCDAF), then the boundary,
        // below(3) of 0x6E789E6AA1B965F4 = 1: 8 KiB reach the media.
        let mut d = disk(4096);
        d.write(0, 0, chunk(16384, 9));
        let out = d.cut(0, Keep::Torn, 0);
        assert_eq!(out.survivors.len(), 1);
        assert_eq!((out.survivors[0].0, out.survivors[0].1.len()), (0, 8192));
        let c = out.counts;
        assert_eq!((c.torn_writes, c.torn_bytes_kept, c.torn_bytes_lost), (1, 8192, 8192));
        assert_eq!((c.kept_writes, c.lost_writes), (0, 0));
        // A write within one sector cannot tear: lost.
        let mut d = disk(4096);
        d.write(0, 4096, chunk(4096, 9));
        let out = d.cut(0, Keep::Torn, 0);
        assert!(out.survivors.is_empty());
        assert_eq!((out.counts.torn_writes, out.counts.lost_writes), (0, 1));
    }

    #[test]
    fn a_kept_older_write_being_drained_is_what_a_lost_newer_one_leaves() {
        // 0 KB is being drained (1) when a newer write to the same block arrives (2): held in
        // drain order are the old one, then the new one.
        let mut d = disk(512);
        d.write(0, 0, chunk(4096, 1));
        let op = d.next_drain(u64::MAX).expect("draining");
        d.write(0, 0, chunk(4096, 2));
        assert!(op.end > 0);
        // Prefix with k = 1 (seed 1: below(3) of 0x910A2DEC89025CC1): only the old data.
        let out = d.clone().cut(0, Keep::Prefix, 1);
        assert_eq!(out.survivors.len(), 1);
        assert_eq!(out.survivors[0].1.as_slice()[0], 1, "the write the drive was draining");
        // Both kept (seed 0: below(3) of 0xE220A8397B1DCDAF = 2): the newer one ends on top.
        let out = d.cut(0, Keep::Prefix, 0);
        let on_top: Vec<u8> = out.survivors.iter().map(|(_, c)| c.as_slice()[0]).collect();
        assert_eq!(on_top, [1, 2], "older first, so the newer one is written last");
    }

    #[test]
    fn a_battery_backed_cache_survives_but_not_a_write_on_its_way_through() {
        let mut d = Disk::new(DiskFigures {
            bus_bytes_per_s: None,
            cache_durable: true,
            ..hdd(8192)
        });
        d.write(0, 0, chunk(4096, 1));
        d.write(0, GB, chunk(16384, 2)); // larger than the cache: write-through
        let out = d.cut(0, Keep::Nothing, 0);
        assert_eq!(offsets(&out), [0]);
        let c = out.counts;
        assert_eq!((c.kept_writes, c.lost_writes, c.unacknowledged_writes), (1, 1, 1));
        assert_eq!(c.lost_bytes, 16384);
    }
}
