//! The emulated disk's model: what each request to the media costs, and the drive's write
//! cache. It is a deterministic state machine in virtual time: every method takes the time
//! it happens at (`now`, in nanoseconds on any monotonic clock) and returns when things
//! finish, so the unit tests below drive it with hand-picked times and check hand-computed
//! costs, and the FUSE daemon ([`super::fuse`]) drives it with the real clock.
//!
//! # Mechanics
//! One actuator: media operations are served one at a time, each starting when the previous
//! one ends. An operation costs positioning plus transfer (`len / media rate`). Positioning
//! of a rotating disk, from the head's position after the previous operation (the byte
//! after it):
//! - the same byte (sequential): nothing;
//! - a little further on the same track: the platter carries the gap past the head
//!   (`gap / media rate`);
//! - a little behind on the same track: the head waits for the platter to come round
//!   (`one rotation - gap / media rate`): rewriting the block just written costs a rotation;
//! - anything else: a seek plus, on average, half a rotation. The seek grows with the square
//!   root of the distance, `settle + (full_stroke - settle) * sqrt(distance / capacity)`:
//!   the acceleration-limited part of the seek curve of C. Ruemmler and J. Wilkes, "An
//!   introduction to disk drive modeling", IEEE Computer 27(3), 1994 (their short seeks
//!   grow with sqrt(distance), long ones linearly; anchoring the square root at the
//!   full-stroke figure keeps one curve through the datasheet's two end points).
//!
//! A solid-state profile has no positioning: each operation costs a fixed per-request time.
//!
//! # The write cache
//! A write crosses the bus (`len / bus rate`, plus the command latency) and is acknowledged
//! once it is in the cache; when the cache is full it waits for room. The cache drains in
//! the background, whenever the actuator is idle, in C-SCAN order (the elevator that sweeps
//! upwards from the head and jumps back to the lowest offset, as drives reorder what they
//! hold; it never starves a block the way shortest-seek-first can). A flush completes when
//! every write that entered the cache before it is on the media, then costs the profile's
//! fixed flush time. With no cache (`cache=0`) or for a write larger than the cache, the
//! write is acknowledged only once on the media (write-through). A battery-backed cache is
//! durable: a flush has nothing to wait for.
//!
//! The cache's contents and the order in which writes entered it (their sequence numbers)
//! belong to the model, apart from the image file: the image holds exactly what has been
//! drained, which is what a power cut would leave.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

/// Nanoseconds on the daemon's clock.
pub type Nanos = u64;

/// How the media is positioned for an operation.
#[derive(Clone, Debug, PartialEq)]
pub enum Mechanics {
    /// A rotating disk: spindle speed, seek curve end points, and the capacity the seek
    /// distance is a fraction of (the image sits at the start of the drive, its outer zone).
    Rotating {
        rpm: u32,
        settle: Duration,
        full_stroke: Duration,
        capacity_bytes: u64,
    },
    /// Flash: a fixed cost per operation.
    Solid { per_request: Duration },
}

/// Everything the model needs to know about a disk.
#[derive(Clone, Debug, PartialEq)]
pub struct DiskFigures {
    pub mechanics: Mechanics,
    /// Media transfer rate in bytes per second; unlimited when None.
    pub media_bytes_per_s: Option<u64>,
    /// Host interface (bus) rate in bytes per second; unlimited when None.
    pub bus_bytes_per_s: Option<u64>,
    /// Latency added to every request's completion (controller, fabric round trip).
    pub command_latency: Duration,
    /// Write cache size; 0 makes a write-through disk.
    pub cache_bytes: u64,
    /// A battery-backed (non-volatile) cache: data in it survives a power cut.
    pub cache_durable: bool,
    /// Fixed time a flush costs once the cache has drained.
    pub flush_cost: Duration,
}

impl DiskFigures {
    /// Bytes that pass under the head in one rotation (rotating disks with a rate).
    pub fn track_bytes(&self) -> Option<u64> {
        match (&self.mechanics, self.media_bytes_per_s) {
            (Mechanics::Rotating { rpm, .. }, Some(rate)) => {
                Some((rate as u128 * rotation_ns(*rpm) as u128 / 1_000_000_000) as u64)
            }
            _ => None,
        }
    }

    /// The average seek over uniformly random start and end points: the mean of
    /// sqrt(|x - y|) for x, y uniform in [0, 1] is 8/15.
    pub fn average_seek(&self) -> Option<Duration> {
        match &self.mechanics {
            Mechanics::Rotating {
                settle, full_stroke, ..
            } => {
                let s = settle.as_secs_f64();
                Some(Duration::from_secs_f64(
                    s + (full_stroke.as_secs_f64() - s).max(0.0) * 8.0 / 15.0,
                ))
            }
            Mechanics::Solid { .. } => None,
        }
    }
}

/// One rotation at `rpm`, in ns.
pub fn rotation_ns(rpm: u32) -> Nanos {
    60_000_000_000 / u64::from(rpm.max(1))
}

/// `len` bytes at `rate` bytes per second, in ns (0 when unlimited).
pub fn transfer_ns(len: u64, rate: Option<u64>) -> Nanos {
    match rate {
        Some(r) if r > 0 => (len as u128 * 1_000_000_000 / r as u128) as u64,
        _ => 0,
    }
}

/// The seek curve: `settle + (full_stroke - settle) * sqrt(distance / capacity)`, for a
/// distance of at least one byte (capped at the capacity).
pub fn seek_ns(settle: Duration, full_stroke: Duration, capacity_bytes: u64, distance: u64) -> Nanos {
    let settle = settle.as_nanos() as f64;
    let span = (full_stroke.as_nanos() as f64 - settle).max(0.0);
    let fraction = distance.min(capacity_bytes) as f64 / capacity_bytes.max(1) as f64;
    (settle + span * fraction.sqrt()).round() as Nanos
}

/// What positioning an operation needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Positioning {
    /// It started where the previous one ended.
    Sequential,
    /// A short gap ahead on the same track.
    ForwardSkip,
    /// A short gap behind: wait for the platter to come round.
    Rewind,
    /// A seek plus half a rotation.
    Seek,
    /// A solid-state per-request cost.
    Request,
}

/// The cost of one media operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub positioning: Positioning,
    pub positioning_ns: Nanos,
    pub transfer_ns: Nanos,
}

impl Access {
    pub fn total_ns(&self) -> Nanos {
        self.positioning_ns + self.transfer_ns
    }
}

/// The cost of an operation of `len` bytes at `offset` with the head at `head`.
pub fn access(figures: &DiskFigures, head: u64, offset: u64, len: u64) -> Access {
    let transfer = transfer_ns(len, figures.media_bytes_per_s);
    let (positioning, positioning_ns) = match &figures.mechanics {
        Mechanics::Solid { per_request } => (Positioning::Request, per_request.as_nanos() as Nanos),
        Mechanics::Rotating {
            rpm,
            settle,
            full_stroke,
            capacity_bytes,
        } => {
            let rotation = rotation_ns(*rpm);
            let track = figures.track_bytes().unwrap_or(0);
            if offset == head {
                (Positioning::Sequential, 0)
            } else if offset > head && offset - head < track {
                (
                    Positioning::ForwardSkip,
                    transfer_ns(offset - head, figures.media_bytes_per_s),
                )
            } else if offset < head && head - offset <= track {
                (
                    Positioning::Rewind,
                    rotation - transfer_ns(head - offset, figures.media_bytes_per_s),
                )
            } else {
                let distance = offset.abs_diff(head);
                (
                    Positioning::Seek,
                    seek_ns(*settle, *full_stroke, *capacity_bytes, distance) + rotation / 2,
                )
            }
        }
    };
    Access {
        positioning,
        positioning_ns,
        transfer_ns: transfer,
    }
}

/// A shared, cheaply sliced piece of a write's data.
#[derive(Clone, Debug)]
pub struct Chunk {
    buf: Arc<[u8]>,
    start: usize,
    len: usize,
}

impl Chunk {
    pub fn new(buf: Arc<[u8]>) -> Chunk {
        let len = buf.len();
        Chunk { buf, start: 0, len }
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn slice(&self, from: usize, len: usize) -> Chunk {
        Chunk {
            buf: self.buf.clone(),
            start: self.start + from,
            len,
        }
    }
}

/// A write held by the drive, not yet on the media.
#[derive(Clone, Debug)]
struct Extent {
    offset: u64,
    data: Chunk,
    /// The order the write entered the drive in (the acknowledgement order of cached writes).
    seq: u64,
    /// When it entered the drive: the drain may not start it earlier.
    ready: Nanos,
    /// Write-through (no room in any cache): acknowledged only once drained.
    through: bool,
}

impl Extent {
    fn end(&self) -> u64 {
        self.offset + self.data.len() as u64
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

/// What became of a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    /// In the cache; acknowledge at `at`.
    Cached { seq: u64, at: Nanos },
    /// Queued for the media; acknowledge once [`Disk::is_pending`] says `seq` has drained.
    WriteThrough { seq: u64 },
    /// The cache is full: wait until the drain frees room, then try again.
    NoRoom,
}

/// A media operation the drain has started: write `data` at `offset` to the image, wait
/// until `end`, then call [`Disk::complete`].
#[derive(Clone, Debug)]
pub struct DrainOp {
    pub offset: u64,
    pub data: Chunk,
    pub start: Nanos,
    pub end: Nanos,
    pub access: Access,
}

/// A read: wait until `at`, read the image, then lay the cached pieces over it.
#[derive(Clone, Debug)]
pub struct ReadPlan {
    pub at: Nanos,
    /// Pieces of the range still in the drive, in the order to apply them (older first).
    pub overlay: Vec<(u64, Chunk)>,
    /// Whether the media was read (false: served from the cache).
    pub media: Option<Access>,
}

/// A flush in progress: it waits for every write that entered the drive before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlushTicket {
    pub before_seq: u64,
    pub arrived: Nanos,
    /// Bytes it had to wait for when it arrived.
    pub pending_bytes: u64,
}

/// Counters of what the model did (cumulative; the daemon takes differences).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelStats {
    pub reads: u64,
    pub read_bytes: u64,
    /// Reads served entirely from the cache.
    pub read_hits: u64,
    pub writes: u64,
    pub write_bytes: u64,
    pub write_through: u64,
    pub flushes: u64,
    /// Media operations (drains, write-through writes, read misses).
    pub media_ops: u64,
    pub media_bytes: u64,
    pub seeks: u64,
    pub skips: u64,
    pub rewinds: u64,
    pub sequential: u64,
    pub positioning_ns: u64,
    pub transfer_ns: u64,
    /// Bytes superseded in the cache by a later write before reaching the media.
    pub overwritten_bytes: u64,
    pub cache_max_bytes: u64,
    /// Integral of cache occupancy over time, in byte-nanoseconds (for the mean).
    pub cache_byte_ns: u128,
}

/// The disk: mechanics, the cache and the clocks of the actuator and the bus.
#[derive(Debug)]
pub struct Disk {
    figures: DiskFigures,
    head: u64,
    actuator_free: Nanos,
    bus_free: Nanos,
    /// Writes held, not yet started to drain, non-overlapping, by offset.
    pending: BTreeMap<u64, Extent>,
    /// The ready times of the pending writes (a multiset), for the earliest one.
    pending_ready: BTreeMap<Nanos, u32>,
    /// Writes being drained, oldest first.
    draining: VecDeque<Extent>,
    /// Sequence numbers still held (pending or draining), with how many extents carry each.
    held_seqs: BTreeMap<u64, u32>,
    /// Bytes in the cache (cached writes, pending or draining).
    cached_bytes: u64,
    /// Bytes held in all: the cache plus write-through writes not yet on the media.
    held_bytes: u64,
    next_seq: u64,
    occupancy_since: Nanos,
    stats: ModelStats,
}

impl Disk {
    pub fn new(figures: DiskFigures) -> Disk {
        Disk {
            figures,
            head: 0,
            actuator_free: 0,
            bus_free: 0,
            pending: BTreeMap::new(),
            pending_ready: BTreeMap::new(),
            draining: VecDeque::new(),
            held_seqs: BTreeMap::new(),
            cached_bytes: 0,
            held_bytes: 0,
            next_seq: 0,
            occupancy_since: 0,
            stats: ModelStats::default(),
        }
    }

    pub fn figures(&self) -> &DiskFigures {
        &self.figures
    }

    pub fn stats(&self) -> &ModelStats {
        &self.stats
    }

    /// Bytes in the write cache now.
    pub fn cached_bytes(&self) -> u64 {
        self.cached_bytes
    }

    /// The byte after the last one the head touched.
    pub fn head(&self) -> u64 {
        self.head
    }

    /// When the actuator finishes what it has started.
    pub fn actuator_free(&self) -> Nanos {
        self.actuator_free
    }

    /// Crosses the bus: returns when a transfer of `len` bytes arriving at `now` ends.
    fn bus(&mut self, now: Nanos, len: u64) -> Nanos {
        let start = now.max(self.bus_free);
        self.bus_free = start + transfer_ns(len, self.figures.bus_bytes_per_s);
        self.bus_free
    }

    fn account_occupancy(&mut self, now: Nanos) {
        if now > self.occupancy_since {
            self.stats.cache_byte_ns += self.cached_bytes as u128 * (now - self.occupancy_since) as u128;
            self.occupancy_since = now;
        }
    }

    fn add_cached(&mut self, now: Nanos, bytes: u64) {
        self.account_occupancy(now);
        self.cached_bytes += bytes;
        self.stats.cache_max_bytes = self.stats.cache_max_bytes.max(self.cached_bytes);
    }

    fn remove_cached(&mut self, now: Nanos, bytes: u64) {
        self.account_occupancy(now);
        self.cached_bytes = self.cached_bytes.saturating_sub(bytes);
    }

    fn hold_seq(&mut self, seq: u64) {
        *self.held_seqs.entry(seq).or_insert(0) += 1;
    }

    fn release_seq(&mut self, seq: u64) {
        if let Some(n) = self.held_seqs.get_mut(&seq) {
            *n -= 1;
            if *n == 0 {
                self.held_seqs.remove(&seq);
            }
        }
    }

    /// The pending (not yet draining) writes `[offset, end)` overlaps, by key. They do not
    /// overlap each other, so going down from `end` the first one that ends at or before
    /// `offset` is the last candidate.
    fn overlapping(&self, offset: u64, end: u64) -> impl Iterator<Item = &Extent> {
        self.pending
            .range(..end)
            .rev()
            .map(|(_, e)| e)
            .take_while(move |e| e.end() > offset)
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
            self.held_bytes -= cut;
            if !e.through {
                self.remove_cached(now, cut);
            }
            self.release_seq(e.seq);
            if e.offset < offset {
                let head = Extent {
                    data: e.data.slice(0, (offset - e.offset) as usize),
                    ..e.clone()
                };
                self.hold_seq(head.seq);
                self.insert_pending(head);
            }
            if e.end() > end {
                let skip = (end - e.offset) as usize;
                let tail = Extent {
                    offset: end,
                    data: e.data.slice(skip, e.data.len() - skip),
                    ..e.clone()
                };
                self.hold_seq(tail.seq);
                self.insert_pending(tail);
            }
        }
    }

    /// A write of `data` at `offset` arriving at `now`.
    pub fn write(&mut self, now: Nanos, offset: u64, data: Chunk) -> WriteOutcome {
        let len = data.len() as u64;
        let end = offset + len;
        let through = len > self.figures.cache_bytes;
        if !through {
            let freed = self.overlapped_bytes(offset, end);
            if self.cached_bytes - freed.min(self.cached_bytes) + len > self.figures.cache_bytes {
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
        self.hold_seq(seq);
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
                at: arrived + self.figures.command_latency.as_nanos() as Nanos,
            }
        }
    }

    /// Whether the write numbered `seq` is still held by the drive (not all on the media).
    pub fn is_pending(&self, seq: u64) -> bool {
        self.held_seqs.contains_key(&seq)
    }

    /// When the next drain operation could start, if there is anything to drain.
    pub fn next_drain_start(&self) -> Option<Nanos> {
        let earliest = *self.pending_ready.first_key_value()?.0;
        Some(self.actuator_free.max(earliest))
    }

    /// Starts the next drain operation if it can start by `until`: the pending write the
    /// C-SCAN elevator reaches first from the head, among those in the drive by then.
    pub fn next_drain(&mut self, until: Nanos) -> Option<DrainOp> {
        let start = self.next_drain_start()?;
        if start > until {
            return None;
        }
        let ready = |e: &&Extent| e.ready <= start;
        let key = self
            .pending
            .range(self.head..)
            .map(|(_, e)| e)
            .find(ready)
            .or_else(|| self.pending.values().find(ready))
            .map(|e| e.offset)?;
        let extent = self.remove_pending(key)?;
        let access = access(&self.figures, self.head, extent.offset, extent.data.len() as u64);
        let end = start + access.total_ns();
        self.actuator_free = end;
        self.head = extent.end();
        self.count_access(&access, extent.data.len() as u64);
        let op = DrainOp {
            offset: extent.offset,
            data: extent.data.clone(),
            start,
            end,
            access,
        };
        self.draining.push_back(extent);
        Some(op)
    }

    fn count_access(&mut self, access: &Access, len: u64) {
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

    /// Marks the oldest drain operation done (its data is on the media) at `now`.
    pub fn complete(&mut self, now: Nanos) {
        let Some(e) = self.draining.pop_front() else { return };
        self.held_bytes -= e.data.len() as u64;
        if !e.through {
            self.remove_cached(now, e.data.len() as u64);
        }
        self.release_seq(e.seq);
    }

    /// A flush arriving at `now`.
    pub fn flush(&mut self, now: Nanos) -> FlushTicket {
        self.stats.flushes += 1;
        let before_seq = if self.figures.cache_durable {
            // Nothing volatile to wait for (write-through writes are acknowledged
            // only once on the media anyway).
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
    pub fn flush_drained(&self, ticket: &FlushTicket) -> bool {
        self.held_seqs
            .first_key_value()
            .is_none_or(|(seq, _)| *seq >= ticket.before_seq)
    }

    /// Ends a drained flush at `now`: the fixed flush cost on the actuator, then the
    /// command latency. Returns when the flush completes.
    pub fn finish_flush(&mut self, now: Nanos) -> Nanos {
        let cost = self.figures.flush_cost.as_nanos() as Nanos;
        let end = if cost > 0 {
            let start = now.max(self.actuator_free);
            self.actuator_free = start + cost;
            self.actuator_free
        } else {
            now
        };
        end + self.figures.command_latency.as_nanos() as Nanos
    }

    /// A read of `len` bytes at `offset` arriving at `now`.
    pub fn read(&mut self, now: Nanos, offset: u64, len: u64) -> ReadPlan {
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
        let hit = covers(&overlay, offset, end);
        let media = if hit {
            self.stats.read_hits += 1;
            None
        } else {
            let start = now.max(self.actuator_free);
            let a = access(&self.figures, self.head, offset, len);
            self.actuator_free = start + a.total_ns();
            self.head = end;
            self.count_access(&a, len);
            Some(a)
        };
        let ready = media.map_or(now, |_| self.actuator_free);
        let at = self.bus(ready, len) + self.figures.command_latency.as_nanos() as Nanos;
        ReadPlan { at, overlay, media }
    }

    fn insert_pending(&mut self, e: Extent) {
        *self.pending_ready.entry(e.ready).or_insert(0) += 1;
        self.pending.insert(e.offset, e);
    }

    fn remove_pending(&mut self, key: u64) -> Option<Extent> {
        let e = self.pending.remove(&key)?;
        if let Some(n) = self.pending_ready.get_mut(&e.ready) {
            *n -= 1;
            if *n == 0 {
                self.pending_ready.remove(&e.ready);
            }
        }
        Some(e)
    }

    /// Starts a new stretch for the peak figures (the largest occupancy so far).
    pub fn reset_peaks(&mut self) {
        self.stats.cache_max_bytes = self.cached_bytes;
    }

    /// Brings the occupancy integral up to `now` (before reading the statistics).
    pub fn settle_stats(&mut self, now: Nanos) {
        self.account_occupancy(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;
    const US: Nanos = 1_000;

    /// A 5400 rpm disk with round figures: 100 MB/s, 1 ms settle, 21 ms full stroke over
    /// 100 GB, 1 MB cache, a 300 MB/s bus.
    fn hdd(cache_bytes: u64) -> DiskFigures {
        DiskFigures {
            mechanics: Mechanics::Rotating {
                rpm: 5400,
                settle: Duration::from_millis(1),
                full_stroke: Duration::from_millis(21),
                capacity_bytes: 100_000_000_000,
            },
            media_bytes_per_s: Some(100_000_000),
            bus_bytes_per_s: Some(300_000_000),
            command_latency: Duration::ZERO,
            cache_bytes,
            cache_durable: false,
            flush_cost: Duration::ZERO,
        }
    }

    fn chunk(len: usize, byte: u8) -> Chunk {
        Chunk::new(vec![byte; len].into())
    }

    /// Drains everything that can start by `until`, completing each op at its end; returns
    /// the ops in order.
    fn drain_all(disk: &mut Disk, until: Nanos) -> Vec<DrainOp> {
        let mut ops = Vec::new();
        while let Some(op) = disk.next_drain(until) {
            disk.complete(op.end);
            ops.push(op);
        }
        ops
    }

    #[test]
    fn seek_curve_is_settle_plus_square_root_of_distance() {
        let (settle, full) = (Duration::from_millis(1), Duration::from_millis(21));
        let cap = 100_000_000_000;
        // A quarter of the stroke: 1 + 20 * sqrt(1/4) = 11 ms.
        assert_eq!(seek_ns(settle, full, cap, cap / 4), 11 * MS);
        assert_eq!(seek_ns(settle, full, cap, cap), 21 * MS);
        assert_eq!(seek_ns(settle, full, cap, 2 * cap), 21 * MS, "capped at full stroke");
        // One hundredth: 1 + 20 * 0.1 = 3 ms.
        assert_eq!(seek_ns(settle, full, cap, cap / 100), 3 * MS);
        let avg = hdd(0).average_seek().unwrap();
        assert_eq!(avg.as_nanos(), 11_666_667, "1 + 20 * 8/15 ms");
    }

    #[test]
    fn rotation_transfer_and_positioning_cases() {
        let f = hdd(0);
        let rot = rotation_ns(5400);
        assert_eq!(rot, 11_111_111);
        // 100 MB/s: 4 KB (4096 B) in 40.96 us.
        assert_eq!(transfer_ns(4096, f.media_bytes_per_s), 40_960);
        let track = f.track_bytes().unwrap();
        assert_eq!(track, 1_111_111);
        // Sequential: transfer only.
        let a = access(&f, 1_000_000, 1_000_000, 4096);
        assert_eq!((a.positioning, a.total_ns()), (Positioning::Sequential, 40_960));
        // 100 KB ahead on the track: the platter carries it past in 1 ms.
        let a = access(&f, 0, 100_000, 4096);
        assert_eq!((a.positioning, a.positioning_ns), (Positioning::ForwardSkip, MS));
        // Rewriting the 4 KB just written: a rotation less the 4 KB.
        let a = access(&f, 4096, 0, 4096);
        assert_eq!((a.positioning, a.positioning_ns), (Positioning::Rewind, rot - 40_960));
        // A quarter of the disk away: 11 ms seek + 5.56 ms half rotation + transfer.
        let a = access(&f, 0, 25_000_000_000, 4096);
        assert_eq!(a.positioning, Positioning::Seek);
        assert_eq!(a.total_ns(), 11 * MS + rot / 2 + 40_960);
        // Solid state: the per-request cost and the transfer, wherever it is.
        let ssd = DiskFigures {
            mechanics: Mechanics::Solid {
                per_request: Duration::from_micros(75),
            },
            media_bytes_per_s: Some(100_000_000),
            ..hdd(0)
        };
        let a = access(&ssd, 0, 25_000_000_000, 4096);
        assert_eq!((a.positioning, a.total_ns()), (Positioning::Request, 75 * US + 40_960));
    }

    #[test]
    fn cached_write_is_acknowledged_after_the_bus_and_drains_in_the_background() {
        let mut d = Disk::new(hdd(1_000_000));
        // 300 KB at 300 MB/s on the bus: 1 ms.
        let w = d.write(0, 0, chunk(300_000, 1));
        assert_eq!(w, WriteOutcome::Cached { seq: 0, at: MS });
        assert_eq!(d.cached_bytes(), 300_000);
        // The drain starts once it has crossed the bus; sequential from head 0: 3 ms.
        let op = d.next_drain(10 * MS).unwrap();
        assert_eq!((op.start, op.end), (MS, 4 * MS));
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
        let op = d.next_drain(u64::MAX).unwrap();
        d.complete(op.end);
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
    fn drain_follows_the_c_scan_elevator() {
        // No bus time: the writes are all in the drive when the drain starts.
        let mut d = Disk::new(DiskFigures {
            bus_bytes_per_s: None,
            ..hdd(1 << 20)
        });
        let gb = 1_000_000_000;
        // Head at 0; writes arrive at 30, 10, 20, 5 GB at once.
        for off in [30 * gb, 10 * gb, 20 * gb, 5 * gb] {
            d.write(0, off, chunk(4096, 1));
        }
        let order: Vec<u64> = drain_all(&mut d, u64::MAX).iter().map(|o| o.offset / gb).collect();
        assert_eq!(order, [5, 10, 20, 30], "upward sweep from the head");
        // With the head at 30 GB, writes below it wait for the next sweep.
        for off in [40 * gb, gb, 35 * gb] {
            d.write(d.actuator_free(), off, chunk(4096, 1));
        }
        let order: Vec<u64> = drain_all(&mut d, u64::MAX).iter().map(|o| o.offset / gb).collect();
        assert_eq!(order, [35, 40, 1]);
    }

    #[test]
    fn a_flush_waits_for_exactly_what_entered_before_it() {
        let mut d = Disk::new(hdd(1 << 20));
        let gb = 1_000_000_000;
        d.write(0, 10 * gb, chunk(4096, 1));
        d.write(0, 20 * gb, chunk(4096, 2));
        let ticket = d.flush(0);
        assert_eq!(ticket.pending_bytes, 8192);
        // A later write, lower on the disk than the head will be.
        d.write(0, 15 * gb, chunk(4096, 3));
        assert!(!d.flush_drained(&ticket));
        let first = d.next_drain(u64::MAX).unwrap();
        d.complete(first.end);
        assert_eq!(first.offset, 10 * gb);
        assert!(!d.flush_drained(&ticket));
        // The elevator serves the later write at 15 GB next: the flush still waits.
        let second = d.next_drain(u64::MAX).unwrap();
        d.complete(second.end);
        assert_eq!(second.offset, 15 * gb);
        assert!(!d.flush_drained(&ticket));
        let third = d.next_drain(u64::MAX).unwrap();
        d.complete(third.end);
        assert!(d.flush_drained(&ticket), "both earlier writes are on the media");
        // The flush costs the drain: from 0 to the end of the third op.
        let rot = rotation_ns(5400);
        let seek =
            |from: u64, to: u64| seek_ns(Duration::from_millis(1), Duration::from_millis(21), 100 * gb, to - from);
        let xfer = 40_960;
        let bus = transfer_ns(4096, Some(300_000_000));
        // The first op starts once the first write has crossed the bus.
        let expected = bus
            + seek(0, 10 * gb)
            + rot / 2
            + xfer
            + seek(10 * gb + 4096, 15 * gb)
            + rot / 2
            + xfer
            + seek(15 * gb + 4096, 20 * gb)
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
        let op = d.next_drain(u64::MAX).unwrap();
        d.complete(op.end);
        assert!(!d.is_pending(seq));
        // A flush on a write-through disk has nothing to wait for.
        let t = d.flush(op.end);
        assert!(d.flush_drained(&t));
        assert_eq!(d.finish_flush(op.end), op.end);
    }

    #[test]
    fn random_writes_cost_positioning_sequential_ones_only_transfer() {
        // Write-through, 4 KB each: 100 random writes over 4 GB vs 100 sequential ones.
        let run = |offsets: Vec<u64>| {
            let mut d = Disk::new(hdd(0));
            for off in offsets {
                d.write(d.actuator_free(), off, chunk(4096, 1));
                drain_all(&mut d, u64::MAX);
            }
            d.actuator_free()
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
        assert!(r > 50 * s, "random {r} ns vs sequential {s} ns");
    }

    #[test]
    fn reads_of_cached_data_come_from_the_cache() {
        let mut d = Disk::new(hdd(1 << 20));
        d.write(0, 8192, chunk(4096, 7));
        let plan = d.read(0, 8192, 4096);
        assert!(plan.media.is_none(), "a hit");
        assert_eq!(plan.overlay.len(), 1);
        assert_eq!(plan.overlay[0].1.as_slice(), &[7u8; 4096][..]);
        // Half cached: the media is read and the cached half laid over it.
        let plan = d.read(0, 4096, 8192);
        assert!(plan.media.is_some());
        assert_eq!(plan.overlay[0].0, 8192);
        assert_eq!(plan.overlay[0].1.len(), 4096);
        assert_eq!(d.stats().read_hits, 1);
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

    #[test]
    fn occupancy_is_integrated_over_time() {
        let mut d = Disk::new(DiskFigures {
            bus_bytes_per_s: None,
            ..hdd(1 << 20)
        });
        d.write(0, 0, chunk(1000, 1));
        let op = d.next_drain(u64::MAX).unwrap();
        d.complete(op.end);
        d.settle_stats(op.end);
        assert_eq!(d.stats().cache_byte_ns, 1000 * op.end as u128);
        assert_eq!(d.stats().cache_max_bytes, 1000);
    }
}
