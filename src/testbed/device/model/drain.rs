//! The drain, and flushes that wait for it.
//!
//! The cache drains in the background, whenever the actuator is idle, in C-SCAN order (the
//! elevator that sweeps upwards from the head and jumps back to the lowest offset, as drives
//! reorder what they hold; it never starves a block the way shortest-seek-first can).
//! Write-through writes queue in the same elevator. A flush completes when every write that
//! entered the drive before it is on the media, then costs the profile's fixed flush time
//! on the actuator. A battery-backed cache is durable: a flush has nothing to wait for.

use super::cache::Chunk;
use super::{Disk, Nanos};

/// A media operation the drain has started: write `data` at `offset` to the image, wait
/// until `end`, then call [`Disk::complete`].
#[derive(Clone, Debug)]
pub(crate) struct DrainOp {
    pub(crate) offset: u64,
    pub(crate) data: Chunk,
    pub(crate) end: Nanos,
}

/// A flush in progress: it waits for every write that entered the drive before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FlushTicket {
    before_seq: u64,
    pub(crate) arrived: Nanos,
    /// Bytes it had to wait for when it arrived.
    pub(crate) pending_bytes: u64,
}

impl Disk {
    /// When the next drain operation could start, if there is anything to drain.
    pub(crate) fn next_drain_start(&self) -> Option<Nanos> {
        let earliest = *self.pending_ready.first_key_value()?.0;
        Some(self.actuator_free.max(earliest))
    }

    /// Starts the next drain operation if it can start by `until`: the pending write the
    /// C-SCAN elevator reaches first from the head, among those in the drive by then.
    pub(crate) fn next_drain(&mut self, until: Nanos) -> Option<DrainOp> {
        let start = self.next_drain_start()?;
        if start > until {
            return None;
        }
        let ready = |e: &&super::Extent| e.ready <= start;
        let key = self
            .pending
            .range(self.head..)
            .map(|(_, e)| e)
            .find(ready)
            .or_else(|| self.pending.values().find(ready))
            .map(|e| e.offset)?;
        let extent = self.remove_pending(key)?;
        self.on_media(start, extent.offset, extent.data.len() as u64, super::MediaOp::Write);
        let op = DrainOp {
            offset: extent.offset,
            data: extent.data.clone(),
            end: self.actuator_free,
        };
        self.draining.push_back(extent);
        Some(op)
    }

    /// Marks the oldest drain operation done (its data is on the media) at `now`.
    pub(crate) fn complete(&mut self, now: Nanos) {
        let Some(e) = self.draining.pop_front() else { return };
        self.release(now, &e, e.data.len() as u64);
    }

    /// A flush arriving at `now`.
    pub(crate) fn flush(&mut self, now: Nanos) -> FlushTicket {
        self.stats.flushes += 1;
        let before_seq = if self.figures.cache_durable {
            // Nothing volatile to wait for (write-through writes are acknowledged
            // only once on the media anyway).
            0
        } else if self.figures.ignores_flushes {
            // A lying drive: acknowledged at once, the cache left as it is.
            self.stats.flushes_ignored += 1;
            0
        } else {
            self.next_seq
        };
        // Everything held entered before the flush.
        let pending_bytes = if before_seq == 0 { 0 } else { self.held_bytes };
        FlushTicket {
            before_seq,
            arrived: now,
            pending_bytes,
        }
    }

    /// Whether every write that entered the drive before `ticket` is on the media.
    pub(crate) fn flush_drained(&self, ticket: &FlushTicket) -> bool {
        self.held_seqs
            .first_key_value()
            .is_none_or(|(seq, _)| *seq >= ticket.before_seq)
    }

    /// Ends a drained flush at `now`: the fixed flush cost on the actuator, then the
    /// command latency. Returns when the flush completes.
    pub(crate) fn finish_flush(&mut self, now: Nanos) -> Nanos {
        let cost = if self.figures.ignores_flushes {
            0
        } else {
            self.figures.flush_cost.as_nanos() as Nanos
        };
        let end = if cost > 0 {
            let start = now.max(self.actuator_free);
            self.actuator_free = start + cost;
            self.actuator_free
        } else {
            now
        };
        end + self.command_latency_ns()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::access::{rotation_ns, seek_ns, transfer_ns};
    use super::super::fixtures::{chunk, drain_all, drain_one, hdd, GB, MS, US};
    use super::super::{DiskFigures, WriteOutcome};
    use super::*;

    #[test]
    fn drain_follows_the_c_scan_elevator() {
        // No bus time: the writes are all in the drive when the drain starts.
        let mut d = Disk::new(DiskFigures {
            bus_bytes_per_s: None,
            ..hdd(1 << 20)
        });
        // Head at 0; writes arrive at 30, 10, 20, 5 GB at once.
        for off in [30 * GB, 10 * GB, 20 * GB, 5 * GB] {
            d.write(0, off, chunk(4096, 1));
        }
        let order: Vec<u64> = drain_all(&mut d, u64::MAX).iter().map(|o| o.offset / GB).collect();
        assert_eq!(order, [5, 10, 20, 30], "upward sweep from the head");
        // With the head at 30 GB, writes below it wait for the next sweep.
        for off in [40 * GB, GB, 35 * GB] {
            d.write(d.actuator_free, off, chunk(4096, 1));
        }
        let order: Vec<u64> = drain_all(&mut d, u64::MAX).iter().map(|o| o.offset / GB).collect();
        assert_eq!(order, [35, 40, 1]);
    }

    #[test]
    fn a_flush_waits_for_exactly_what_entered_before_it() {
        let mut d = Disk::new(hdd(1 << 20));
        d.write(0, 10 * GB, chunk(4096, 1));
        d.write(0, 20 * GB, chunk(4096, 2));
        let ticket = d.flush(0);
        assert_eq!(ticket.pending_bytes, 8192);
        // A later write, lower on the disk than the head will be.
        d.write(0, 15 * GB, chunk(4096, 3));
        assert!(!d.flush_drained(&ticket));
        let first = drain_one(&mut d);
        assert_eq!(first.offset, 10 * GB);
        assert!(!d.flush_drained(&ticket));
        // The elevator serves the later write at 15 GB next: the flush still waits.
        let second = drain_one(&mut d);
        assert_eq!(second.offset, 15 * GB);
        assert!(!d.flush_drained(&ticket));
        let third = drain_one(&mut d);
        assert!(d.flush_drained(&ticket), "both earlier writes are on the media");
        // The flush costs the drain: from 0 to the end of the third op.
        let rot = rotation_ns(5400);
        let seek =
            |from: u64, to: u64| seek_ns(Duration::from_millis(1), Duration::from_millis(21), 100 * GB, to - from);
        let xfer = 40_960;
        let bus = transfer_ns(4096, Some(300_000_000));
        // The first op starts once the first write has crossed the bus.
        let expected = bus
            + seek(0, 10 * GB)
            + rot / 2
            + xfer
            + seek(10 * GB + 4096, 15 * GB)
            + rot / 2
            + xfer
            + seek(15 * GB + 4096, 20 * GB)
            + rot / 2
            + xfer;
        assert_eq!(d.finish_flush(third.end), expected);
        // A flush with nothing before it is done at once.
        let empty = d.flush(third.end);
        assert!(d.flush_drained(&empty));
    }

    #[test]
    fn without_a_cache_writes_go_through_in_order_of_the_elevator() {
        let mut d = Disk::new(hdd(0));
        let WriteOutcome::WriteThrough { seq } = d.write(0, 0, chunk(4096, 1)) else {
            panic!("cache=0 writes through")
        };
        assert!(d.is_pending(seq));
        assert_eq!(d.cached_bytes(), 0);
        let op = drain_one(&mut d);
        assert!(!d.is_pending(seq));
        // A flush on a write-through disk has nothing to wait for.
        let t = d.flush(op.end);
        assert!(d.flush_drained(&t));
        assert_eq!(d.finish_flush(op.end), op.end);
    }

    #[test]
    fn random_writes_cost_positioning_sequential_ones_only_transfer() {
        // Write-through, 4 KB each, all queued at once: 100 random writes over 4 GB vs 100
        // sequential ones, which stream past the head back to back.
        let run = |offsets: Vec<u64>| {
            let mut d = Disk::new(hdd(0));
            for off in offsets {
                d.write(0, off, chunk(4096, 1));
            }
            drain_all(&mut d, u64::MAX);
            d.actuator_free
        };
        let mut x: u64 = 12345;
        let random: Vec<u64> = (0..100)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (x >> 33) % (4 << 30) / 4096 * 4096
            })
            .collect();
        let sequential: Vec<u64> = (0..100).map(|i| i * 4096).collect();
        let (r, s) = (run(random), run(sequential));
        // (The first sequential write waits for the platter once: 11 ms of the 15.)
        assert!(r > 40 * s, "random {r} ns vs sequential {s} ns");
    }

    #[test]
    fn a_small_write_flushed_each_time_costs_a_rotation() {
        // Write-through, 4 KB each, sequential, the next one sent 100 us after the previous
        // one is on the media (a commit loop: write, flush, write...): the platter has gone
        // on, so each waits most of a rotation. This is seed 002's slow disk: about 90
        // commits a second at 5400 rpm, not the thousands a stream would allow.
        let mut d = Disk::new(hdd(0));
        let mut done = 0;
        for i in 0..10 {
            d.write(done + 100_000, i * 4096, chunk(4096, 1));
            drain_all(&mut d, u64::MAX);
            done = d.actuator_free;
        }
        let per_write = done / 10;
        assert!(
            per_write > 10_000_000 && per_write < 11_400_000,
            "{per_write} ns a write"
        );
    }

    #[test]
    fn a_battery_backed_cache_needs_no_drain_on_flush() {
        let mut d = Disk::new(DiskFigures {
            cache_durable: true,
            command_latency: Duration::from_micros(300),
            ..hdd(1 << 20)
        });
        d.write(0, 0, chunk(4096, 1));
        let t = d.flush(0);
        assert!(d.flush_drained(&t));
        assert_eq!(d.finish_flush(0), 300 * US);
    }

    #[test]
    fn a_lying_drive_acknowledges_a_flush_at_once_and_keeps_its_cache() {
        let mut d = Disk::new(DiskFigures {
            ignores_flushes: true,
            flush_cost: Duration::from_millis(2),
            command_latency: Duration::from_micros(100),
            ..hdd(1 << 20)
        });
        d.write(0, 10 * GB, chunk(4096, 1));
        let t = d.flush(0);
        assert!(d.flush_drained(&t), "nothing to wait for");
        assert_eq!(t.pending_bytes, 0);
        // Neither the fixed cost nor the drain: only the command latency.
        assert_eq!(d.finish_flush(0), 100 * US);
        assert_eq!(d.cached_bytes(), 4096, "the write is still only in the cache");
        assert_eq!((d.stats().flushes, d.stats().flushes_ignored), (1, 1));
    }

    #[test]
    fn fixed_flush_cost_is_paid_on_the_actuator() {
        let mut d = Disk::new(DiskFigures {
            flush_cost: Duration::from_millis(20),
            ..hdd(0)
        });
        let t = d.flush(5 * MS);
        assert!(d.flush_drained(&t));
        assert_eq!(d.finish_flush(5 * MS), 25 * MS);
        // A second flush right behind it queues after the first.
        assert_eq!(d.finish_flush(5 * MS), 45 * MS);
    }
}
