//! What the device did between two marks, as the result records it: the model's counters
//! and the daemon's timings, differenced, with the cache occupancy samples thinned to at
//! most `MAX_SAMPLES`.

use super::super::model::Nanos;
use super::DeviceMark;
use crate::environment::DeviceActivity;
use crate::units::ms;

/// Occupancy samples kept in a result.
const MAX_SAMPLES: usize = 600;

pub(super) fn activity(from: &DeviceMark, to: &DeviceMark, samples: &[(Nanos, u64)]) -> DeviceActivity {
    let (a, b) = (&from.model, &to.model);
    let (ta, tb) = (&from.timing, &to.timing);
    let window_ns = to.at.saturating_sub(from.at).max(1);
    let flushes = tb.flush_count - ta.flush_count;
    let per_bucket = samples.len().div_ceil(MAX_SAMPLES).max(1);
    let occupancy = samples
        .chunks(per_bucket)
        .map(|c| {
            let t = c[0].0;
            let max = c.iter().map(|s| s.1).max().unwrap_or(0);
            [((t - from.at) as f64 / 1e9 * 1e3).round() / 1e3, max as f64]
        })
        .collect();
    DeviceActivity {
        duration_s: window_ns as f64 / 1e9,
        reads: b.reads - a.reads,
        read_bytes: b.read_bytes - a.read_bytes,
        read_cache_hits: b.read_hits - a.read_hits,
        writes: b.writes - a.writes,
        write_bytes: b.write_bytes - a.write_bytes,
        write_through: b.write_through - a.write_through,
        writes_waited_for_room: tb.room_waits - ta.room_waits,
        room_wait_ms: ms(tb.room_wait_ns_total - ta.room_wait_ns_total),
        overwritten_in_cache_bytes: b.overwritten_bytes - a.overwritten_bytes,
        flushes,
        flush_ms_mean: (flushes > 0).then(|| ms(tb.flush_ns_total - ta.flush_ns_total) / flushes as f64),
        flush_ms_total: ms(tb.flush_ns_total - ta.flush_ns_total),
        flush_ms_max: (flushes > 0).then(|| ms(tb.flush_ns_max)),
        flush_pending_bytes_total: tb.flush_pending_bytes_total - ta.flush_pending_bytes_total,
        flush_pending_bytes_max: (flushes > 0).then_some(tb.flush_pending_bytes_max),
        media_ops: b.media_ops - a.media_ops,
        media_bytes: b.media_bytes - a.media_bytes,
        seeks: b.seeks - a.seeks,
        short_skips: b.skips - a.skips,
        rewinds: b.rewinds - a.rewinds,
        sequential: b.sequential - a.sequential,
        positioning_ms: ms(b.positioning_ns - a.positioning_ns),
        transfer_ms: ms(b.transfer_ns - a.transfer_ns),
        media_busy_fraction: ((b.positioning_ns + b.transfer_ns) - (a.positioning_ns + a.transfer_ns)) as f64
            / window_ns as f64,
        cache_max_bytes: b.cache_max_bytes,
        cache_mean_bytes: ((b.cache_byte_ns - a.cache_byte_ns) / window_ns as u128) as u64,
        cache_occupancy: occupancy,
        drain_lag_ms_max: ms(tb.drain_lag_ns_max),
        failed_writes: b.failed_writes - a.failed_writes,
        failed_reads: b.failed_reads - a.failed_reads,
        failed_flushes: b.failed_flushes - a.failed_flushes,
        flushes_ignored: b.flushes_ignored - a.flushes_ignored,
        refused_after_cut: tb.refused_after_cut - ta.refused_after_cut,
        power_cut: to.cut.clone().filter(|_| from.cut.is_none()),
    }
}
