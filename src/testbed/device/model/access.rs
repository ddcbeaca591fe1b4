//! What one media operation costs: positioning plus transfer (`len / media rate`).
//!
//! Positioning of a rotating disk, from the head's position after the previous operation
//! (the byte after it) and the time the actuator then sat idle, during which the platter
//! kept turning and carried `idle x media rate` bytes past the head:
//! - the byte under the head now (a stream of back-to-back operations): nothing;
//! - a little further on the same track: the platter carries the gap past the head
//!   (`gap / media rate`);
//! - on the same track but already gone by (rewriting the block just written, or the next
//!   block once the platter has moved on): the head waits for the platter to come round
//!   (`one rotation - distance / media rate`). This is why a disk without a write cache, or
//!   one flushed after every small write, commits about once a rotation (120 a second at
//!   7200 rpm) even when each write follows the previous one on the media;
//! - anything else: a seek plus, on average, half a rotation. The seek grows with the square
//!   root of the distance, `settle + (full_stroke - settle) * sqrt(distance / capacity)`:
//!   the acceleration-limited part of the seek curve of C. Ruemmler and J. Wilkes, "An
//!   introduction to disk drive modeling", IEEE Computer 27(3), 1994 (their short seeks
//!   grow with sqrt(distance), long ones linearly; anchoring the square root at the
//!   full-stroke figure keeps one curve through the datasheet's two end points).
//!
//! A solid-state profile has no positioning: each operation costs a fixed per-request time.

use std::time::Duration;

use super::{DiskFigures, Mechanics, Nanos};

/// One rotation at `rpm`, in ns.
pub(crate) fn rotation_ns(rpm: u32) -> Nanos {
    60_000_000_000 / u64::from(rpm.max(1))
}

/// `len` bytes at `rate` bytes per second, in ns (0 when unlimited).
pub(super) fn transfer_ns(len: u64, rate: Option<u64>) -> Nanos {
    match rate {
        Some(r) if r > 0 => (len as u128 * 1_000_000_000 / r as u128) as u64,
        _ => 0,
    }
}

/// The seek curve: `settle + (full_stroke - settle) * sqrt(distance / capacity)`, for a
/// distance of at least one byte (capped at the capacity).
pub(super) fn seek_ns(settle: Duration, full_stroke: Duration, capacity_bytes: u64, distance: u64) -> Nanos {
    let settle = settle.as_nanos() as f64;
    let span = (full_stroke.as_nanos() as f64 - settle).max(0.0);
    let fraction = distance.min(capacity_bytes) as f64 / capacity_bytes.max(1) as f64;
    (settle + span * fraction.sqrt()).round() as Nanos
}

/// What positioning an operation needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Positioning {
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
pub(super) struct Access {
    pub(super) positioning: Positioning,
    pub(super) positioning_ns: Nanos,
    pub(super) transfer_ns: Nanos,
}

impl Access {
    pub(super) fn total_ns(&self) -> Nanos {
        self.positioning_ns + self.transfer_ns
    }
}

/// The cost of an operation of `len` bytes at `offset` with the head at `head`, the actuator
/// having been idle `idle_ns` since its previous operation ended.
pub(super) fn access(figures: &DiskFigures, head: u64, offset: u64, len: u64, idle_ns: Nanos) -> Access {
    let transfer = transfer_ns(len, figures.media_bytes_per_s);
    let (positioning, positioning_ns) = match &figures.mechanics {
        Mechanics::Solid { per_request } => (Positioning::Request, per_request.as_nanos() as Nanos),
        Mechanics::Rotating(spindle) => {
            let rotation = rotation_ns(spindle.rpm);
            let track = figures.track_bytes().unwrap_or(0);
            if track > 0 && offset.abs_diff(head) <= track {
                // Where the target is, in bytes ahead of the platter's position now.
                let rate = figures.media_bytes_per_s.unwrap_or(0);
                let passed = (u128::from(idle_ns) * u128::from(rate) / 1_000_000_000 % u128::from(track)) as i128;
                let ahead = i128::from(offset) - i128::from(head) - passed;
                let gap = ahead.rem_euclid(i128::from(track)) as u64;
                let kind = match (gap, ahead >= 0) {
                    (0, _) => Positioning::Sequential,
                    (_, true) => Positioning::ForwardSkip,
                    (_, false) => Positioning::Rewind,
                };
                (kind, transfer_ns(gap, figures.media_bytes_per_s))
            } else {
                let distance = offset.abs_diff(head);
                (
                    Positioning::Seek,
                    seek_ns(spindle.settle, spindle.full_stroke, spindle.capacity_bytes, distance) + rotation / 2,
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

#[cfg(test)]
mod tests {
    use super::super::fixtures::{hdd, MS, US};
    use super::*;

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
        let a = access(&f, 1_000_000, 1_000_000, 4096, 0);
        assert_eq!((a.positioning, a.total_ns()), (Positioning::Sequential, 40_960));
        // 100 KB ahead on the track: the platter carries it past in 1 ms.
        let a = access(&f, 0, 100_000, 4096, 0);
        assert_eq!((a.positioning, a.positioning_ns), (Positioning::ForwardSkip, MS));
        // Rewriting the 4 KB just written: a rotation less the 4 KB.
        let a = access(&f, 4096, 0, 4096, 0);
        assert_eq!(a.positioning, Positioning::Rewind);
        assert!(a.positioning_ns.abs_diff(rot - 40_960) < 10, "{}", a.positioning_ns);
        // The next 4 KB, 100 us after the previous write ended: the platter has carried
        // 10 KB past the head, so the block comes round again after most of a rotation.
        let a = access(&f, 4096, 4096, 4096, 100 * US);
        assert_eq!(a.positioning, Positioning::Rewind);
        assert!(a.positioning_ns.abs_diff(rot - 100 * US) < 10, "{}", a.positioning_ns);
        // 1 MB ahead on a later track is a seek, idle or not.
        assert_eq!(access(&f, 0, 2_000_000, 4096, 100 * US).positioning, Positioning::Seek);
        // 20 KB ahead, 100 us later: the platter brought 10 KB of it, 10 KB are left.
        let a = access(&f, 0, 20_000, 4096, 100 * US);
        assert_eq!(a.positioning, Positioning::ForwardSkip);
        assert!(a.positioning_ns.abs_diff(100 * US) < 10, "{}", a.positioning_ns);
        // A quarter of the disk away: 11 ms seek + 5.56 ms half rotation + transfer.
        let a = access(&f, 0, 25_000_000_000, 4096, 0);
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
        let a = access(&ssd, 0, 25_000_000_000, 4096, 0);
        assert_eq!((a.positioning, a.total_ns()), (Positioning::Request, 75 * US + 40_960));
    }
}
