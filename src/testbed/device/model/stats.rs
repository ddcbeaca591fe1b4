//! What the model counts: requests, media operations by kind of positioning, and the
//! cache's occupancy over time. Cumulative; the daemon takes differences between marks.

use super::access::{Access, Positioning};
use super::{Disk, Nanos};

/// Counters of what the model did (cumulative; the daemon takes differences).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ModelStats {
    pub(crate) reads: u64,
    pub(crate) read_bytes: u64,
    /// Reads served entirely from the cache.
    pub(crate) read_hits: u64,
    pub(crate) writes: u64,
    pub(crate) write_bytes: u64,
    pub(crate) write_through: u64,
    pub(crate) flushes: u64,
    /// Media operations (drains, write-through writes, read misses).
    pub(crate) media_ops: u64,
    pub(crate) media_bytes: u64,
    pub(crate) seeks: u64,
    pub(crate) skips: u64,
    pub(crate) rewinds: u64,
    pub(crate) sequential: u64,
    pub(crate) positioning_ns: u64,
    pub(crate) transfer_ns: u64,
    /// Bytes superseded in the cache by a later write before reaching the media.
    pub(crate) overwritten_bytes: u64,
    pub(crate) cache_max_bytes: u64,
    /// Integral of cache occupancy over time, in byte-nanoseconds (for the mean).
    pub(crate) cache_byte_ns: u128,
    /// Requests failed on purpose ([`super::fault`]), by kind.
    pub(crate) failed_writes: u64,
    pub(crate) failed_reads: u64,
    pub(crate) failed_flushes: u64,
    /// Flushes a lying drive acknowledged without waiting for the drain.
    pub(crate) flushes_ignored: u64,
}

impl Disk {
    pub(crate) fn stats(&self) -> &ModelStats {
        &self.stats
    }

    /// Starts a new stretch for the peak figures (the largest occupancy so far).
    pub(crate) fn reset_peaks(&mut self) {
        self.stats.cache_max_bytes = self.cached_bytes;
    }

    /// Brings the occupancy integral up to `now` (before reading the statistics).
    pub(crate) fn settle_stats(&mut self, now: Nanos) {
        self.account_occupancy(now);
    }

    pub(super) fn count_access(&mut self, access: &Access, len: u64) {
        let s = &mut self.stats;
        s.media_ops += 1;
        s.media_bytes += len;
        s.positioning_ns += access.positioning_ns;
        s.transfer_ns += access.transfer_ns;
        match access.positioning {
            Positioning::Seek => s.seeks += 1,
            Positioning::ForwardSkip => s.skips += 1,
            Positioning::Rewind => s.rewinds += 1,
            Positioning::Sequential => s.sequential += 1,
            Positioning::Request => {}
        }
    }

    fn account_occupancy(&mut self, now: Nanos) {
        if now > self.occupancy_since {
            self.stats.cache_byte_ns += self.cached_bytes as u128 * (now - self.occupancy_since) as u128;
            self.occupancy_since = now;
        }
    }

    /// `bytes` entered the cache at `now`.
    pub(super) fn add_cached(&mut self, now: Nanos, bytes: u64) {
        self.account_occupancy(now);
        self.cached_bytes += bytes;
        self.stats.cache_max_bytes = self.stats.cache_max_bytes.max(self.cached_bytes);
    }

    /// `bytes` left the cache at `now`.
    pub(super) fn remove_cached(&mut self, now: Nanos, bytes: u64) {
        self.account_occupancy(now);
        self.cached_bytes = self.cached_bytes.saturating_sub(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{chunk, drain_one, hdd};
    use super::super::DiskFigures;
    use super::*;

    #[test]
    fn occupancy_is_integrated_over_time() {
        let mut d = Disk::new(DiskFigures {
            bus_bytes_per_s: None,
            ..hdd(1 << 20)
        });
        d.write(0, 0, chunk(1000, 1));
        let op = drain_one(&mut d);
        d.settle_stats(op.end);
        assert_eq!(d.stats().cache_byte_ns, 1000 * op.end as u128);
        assert_eq!(d.stats().cache_max_bytes, 1000);
    }
}
