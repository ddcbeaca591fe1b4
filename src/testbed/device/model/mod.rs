//! The emulated disk's model: what each request to the media costs, and the drive's write
//! cache. It is a deterministic state machine in virtual time: every method takes the time
//! it happens at (`now`, in nanoseconds on any monotonic clock) and returns when things
//! finish, so the unit tests drive it with hand-picked times and check hand-computed costs,
//! and the FUSE daemon ([`super::fuse`]) drives it with the real clock.
//!
//! A request's life, part by part:
//! - [`access`]: one actuator serves media operations one at a time; each costs positioning
//!   (nothing when sequential, the platter carrying a short gap past, a rotation to come back,
//!   or a seek on the Ruemmler–Wilkes square-root curve plus half a rotation; a fixed cost on
//!   flash) plus transfer at the media rate.
//! - [`cache`]: a write crosses the bus and is acknowledged once it is in the write cache
//!   (or, with no room in any cache, once on the media); a later write supersedes what it
//!   overlaps; a cache of N segments holds at most N separate writes.
//! - [`drain`]: the cache drains in the background whenever the actuator is idle, in C-SCAN
//!   order; a flush completes when every write that entered before it is on the media, then
//!   costs the profile's fixed flush time. A battery-backed cache has nothing to wait for.
//! - [`read`]: a read is served from the cache when it holds every byte, from the media
//!   (with the cached pieces laid over) otherwise.
//! - [`stats`]: what the model counts, for the daemon to report.
//! - [`fault`]: requests the drive fails on purpose (`fail=...`), decided in order of
//!   arrival from the rules and their seeds.
//! - [`cut`]: a power cut: what of the cache survives (nothing, a random part in drain order
//!   or in any order, or a torn write), chosen from a seed.
//!
//! The cache's contents and the order in which writes entered it (their sequence numbers)
//! belong to the model, apart from the image file: the image holds exactly what has been
//! drained, which is what a power cut leaves, plus what [`cut`] says survived.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

mod access;
mod cache;
mod cut;
mod drain;
mod fault;
mod read;
mod stats;

pub(crate) use access::rotation_ns;
use access::transfer_ns;
use cache::Extent;
pub(crate) use cache::{Chunk, WriteOutcome};
pub use cut::Keep;
pub(crate) use drain::DrainOp;
pub(crate) use fault::{FaultKind, FaultRule, FaultStart};
pub(crate) use stats::ModelStats;

/// Nanoseconds on the daemon's clock.
pub(crate) type Nanos = u64;

/// How the media is positioned for an operation.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Mechanics {
    /// A rotating disk.
    Rotating(Spindle),
    /// Flash: a fixed cost per operation.
    Solid { per_request: Duration },
}

/// A rotating disk's figures: spindle speed, seek curve end points, and the capacity the
/// seek distance is a fraction of (the image sits at the start of the drive, its outer zone).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Spindle {
    pub(crate) rpm: u32,
    /// Single-track seek.
    pub(crate) settle: Duration,
    pub(crate) full_stroke: Duration,
    pub(crate) capacity_bytes: u64,
}

impl Spindle {
    /// The average seek over uniformly random start and end points: the mean of
    /// sqrt(|x - y|) for x, y uniform in [0, 1] is 8/15.
    pub(crate) fn average_seek(&self) -> Duration {
        let s = self.settle.as_secs_f64();
        Duration::from_secs_f64(s + (self.full_stroke.as_secs_f64() - s).max(0.0) * 8.0 / 15.0)
    }
}

/// Everything the model needs to know about a disk.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DiskFigures {
    pub(crate) mechanics: Mechanics,
    /// Media transfer rate in bytes per second; unlimited when None.
    pub(crate) media_bytes_per_s: Option<u64>,
    /// Host interface (bus) rate in bytes per second; unlimited when None.
    pub(crate) bus_bytes_per_s: Option<u64>,
    /// Latency added to every request's completion (controller, fabric round trip): the
    /// median when [`DiskFigures::latency_p99`] is set, the latency of every request otherwise.
    pub(crate) command_latency: Duration,
    /// The command latency's 99th percentile: each request's latency is drawn from the
    /// log-normal distribution with median `command_latency` and this p99 (a cloud volume's
    /// round trip, whose tail is what its users feel). None: a fixed latency.
    pub(crate) latency_p99: Option<Duration>,
    /// Write cache size; 0 makes a write-through disk.
    pub(crate) cache_bytes: u64,
    /// How many runs of contiguous writes the cache holds at most (0: as many as fit in its
    /// bytes).
    /// Drives of the era divided their buffer into a fixed number of segments and queued at
    /// most 32 commands (NCQ), so the elevator had few writes to sort.
    pub(crate) cache_segments: u32,
    /// A battery-backed (non-volatile) cache: data in it survives a power cut.
    pub(crate) cache_durable: bool,
    /// Fixed time a flush costs once the cache has drained.
    pub(crate) flush_cost: Duration,
    /// A lying drive: flushes are acknowledged at once, without waiting for the drain.
    pub(crate) ignores_flushes: bool,
    /// The unit a write is persisted in: a power cut tears a write only between sectors.
    pub(crate) sector_bytes: u64,
    /// Requests the drive fails on purpose (`fail=...`).
    pub(crate) faults: Vec<FaultRule>,
}

impl DiskFigures {
    /// A disk with no positioning, no cache, unlimited bandwidth and free flushes: what
    /// `--device KEY=VALUE,...` starts from, and the base the named profiles change.
    pub(crate) fn plain() -> DiskFigures {
        DiskFigures {
            mechanics: Mechanics::Solid {
                per_request: Duration::ZERO,
            },
            media_bytes_per_s: None,
            bus_bytes_per_s: None,
            command_latency: Duration::ZERO,
            latency_p99: None,
            cache_bytes: 0,
            cache_segments: 0,
            cache_durable: false,
            flush_cost: Duration::ZERO,
            ignores_flushes: false,
            sector_bytes: 512,
            faults: Vec::new(),
        }
    }

    /// Bytes that pass under the head in one rotation (rotating disks with a rate).
    pub(crate) fn track_bytes(&self) -> Option<u64> {
        match (&self.mechanics, self.media_bytes_per_s) {
            (Mechanics::Rotating(s), Some(rate)) => {
                Some((rate as u128 * rotation_ns(s.rpm) as u128 / 1_000_000_000) as u64)
            }
            _ => None,
        }
    }

    /// The spindle's figures, for a rotating disk.
    pub(crate) fn spindle(&self) -> Option<&Spindle> {
        match &self.mechanics {
            Mechanics::Rotating(s) => Some(s),
            Mechanics::Solid { .. } => None,
        }
    }

    /// The average seek (rotating disks).
    pub(crate) fn average_seek(&self) -> Option<Duration> {
        self.spindle().map(Spindle::average_seek)
    }

    /// What kind of write cache the disk has: `none`, `volatile` or `battery-backed`.
    pub(crate) fn cache_kind(&self) -> &'static str {
        match (self.cache_bytes, self.cache_durable) {
            (0, _) => "none",
            (_, false) => "volatile",
            (_, true) => "battery-backed",
        }
    }
}

/// The disk: mechanics, the cache and the clocks of the actuator and the bus. The parts
/// above each add the methods of one stage of a request.
#[derive(Clone, Debug)]
pub(crate) struct Disk {
    figures: DiskFigures,
    /// The byte after the last one the head touched.
    head: u64,
    /// When the actuator finishes what it has started.
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
    faults: fault::Faults,
    /// False once the power is cut: the drive holds nothing and serves nothing.
    powered: bool,
    /// Where the command latency's draws come from (`latency_p99`).
    latency_draws: crate::rng::SplitMix64,
}

impl Disk {
    pub(crate) fn new(figures: DiskFigures) -> Disk {
        Disk {
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
            faults: fault::Faults::new(&figures.faults, 0),
            powered: true,
            latency_draws: crate::rng::SplitMix64::new(LATENCY_SEED),
            figures,
        }
    }

    /// The figures the disk was made with.
    pub(crate) fn figures(&self) -> &DiskFigures {
        &self.figures
    }

    /// Crosses the bus: returns when a transfer of `len` bytes arriving at `now` ends.
    fn bus(&mut self, now: Nanos, len: u64) -> Nanos {
        let start = now.max(self.bus_free);
        self.bus_free = start + transfer_ns(len, self.figures.bus_bytes_per_s);
        self.bus_free
    }

    /// Runs a media operation of `len` bytes at `offset` on the actuator, from `start` or
    /// once it is free: moves the head, counts the access, and leaves `actuator_free` at
    /// its end. A write finds the platter where the idle time left it; a read does not
    /// wait for it, as drives read ahead into their track buffer (a sequential reader would
    /// otherwise lose a rotation between requests, which no drive of the era did).
    fn on_media(&mut self, start: Nanos, offset: u64, len: u64, kind: MediaOp) {
        let idle = match kind {
            MediaOp::Write => start.saturating_sub(self.actuator_free),
            MediaOp::Read => 0,
        };
        let a = access::access(&self.figures, self.head, offset, len, idle);
        self.actuator_free = start.max(self.actuator_free) + a.total_ns();
        self.head = offset + len;
        self.count_access(&a, len);
    }

    /// The command latency of the next completion, in ns: the fixed latency, or a draw
    /// from its log-normal distribution.
    fn command_latency_ns(&mut self) -> Nanos {
        let median = self.figures.command_latency.as_nanos() as Nanos;
        match self.figures.latency_p99 {
            Some(p99) if median > 0 => lognormal(&mut self.latency_draws, median, p99.as_nanos() as Nanos),
            _ => median,
        }
    }
}

/// The seed of the command latency's draws: the same disk gives the same sequence of
/// latencies in every run, as its other figures are the same.
const LATENCY_SEED: u64 = 0x006c_6174_656e_6379;

/// The 99th percentile of the standard normal distribution.
const Z_99: f64 = 2.326_347_874;

/// A draw from the log-normal distribution with this median and 99th percentile (both in
/// ns; p99 at or below the median gives the median), by Box–Muller from two uniforms of
/// `draws`. Capped at 1 s, the longest cost a profile may give (`latency=` is at most 1 s).
pub(crate) fn lognormal(draws: &mut crate::rng::SplitMix64, median: Nanos, p99: Nanos) -> Nanos {
    if p99 <= median || median == 0 {
        return median;
    }
    let sigma = (p99 as f64 / median as f64).ln() / Z_99;
    // Uniforms in (0, 1]: 53 random bits, shifted off zero.
    let mut uniform = || ((draws.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
    let (u1, u2) = (uniform(), uniform());
    let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
    let drawn = median as f64 * (sigma * z).exp();
    drawn.min(1e9) as Nanos
}

/// Which way a media operation goes: a write waits for the platter, a read is read ahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MediaOp {
    Read,
    Write,
}

/// Adds one to `key`'s count in a multiset kept as a map of counts.
fn count_in<K: Ord>(counts: &mut BTreeMap<K, u32>, key: K) {
    *counts.entry(key).or_insert(0) += 1;
}

/// Takes one from `key`'s count, dropping the key at zero.
fn count_out<K: Ord>(counts: &mut BTreeMap<K, u32>, key: &K) {
    if let Some(n) = counts.get_mut(key) {
        *n -= 1;
        if *n == 0 {
            counts.remove(key);
        }
    }
}

#[cfg(test)]
mod tests;

/// Disks and data the parts' tests share.
#[cfg(test)]
mod fixtures {
    use super::*;

    pub(super) const MS: Nanos = 1_000_000;
    pub(super) const US: Nanos = 1_000;
    pub(super) const GB: u64 = 1_000_000_000;

    /// A 5400 rpm disk with round figures: 100 MB/s, 1 ms settle, 21 ms full stroke over
    /// 100 GB, 1 MB cache, a 300 MB/s bus.
    pub(super) fn hdd(cache_bytes: u64) -> DiskFigures {
        DiskFigures {
            mechanics: Mechanics::Rotating(Spindle {
                rpm: 5400,
                settle: Duration::from_millis(1),
                full_stroke: Duration::from_millis(21),
                capacity_bytes: 100 * GB,
            }),
            media_bytes_per_s: Some(100_000_000),
            bus_bytes_per_s: Some(300_000_000),
            cache_bytes,
            ..DiskFigures::plain()
        }
    }

    pub(super) fn chunk(len: usize, byte: u8) -> Chunk {
        Chunk::new(vec![byte; len].into())
    }

    /// Starts the next drain operation and completes it at its end.
    pub(super) fn drain_one(disk: &mut Disk) -> DrainOp {
        let op = disk.next_drain(u64::MAX).expect("something to drain");
        disk.complete(op.end);
        op
    }

    /// Drains everything that can start by `until`, completing each op at its end; returns
    /// the ops in order.
    pub(super) fn drain_all(disk: &mut Disk, until: Nanos) -> Vec<DrainOp> {
        let mut ops = Vec::new();
        while let Some(op) = disk.next_drain(until) {
            disk.complete(op.end);
            ops.push(op);
        }
        ops
    }
}
