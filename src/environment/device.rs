//! The block device under a filesystem (its sysfs queue attributes, read with
//! [`crate::kernel::block`]), and what a scratch testbed adds: the emulated disk's profile, its model's figures and its counts.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt as _;

use serde::{Deserialize, Serialize};

use crate::kernel::{block, read_trimmed, MountInfo};

/// A scratch filesystem as requested; what the kernel made of the mount options is in
/// [`super::FilesystemInfo`], the scheduler in [`DeviceInfo`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScratchInfo {
    pub fstype: String,
    /// Mount options as given after `FS:` (empty for the defaults).
    pub mount_options: String,
    /// `--mkfs-opts`, as given.
    pub mkfs_options: String,
    pub size_bytes: u64,
    /// The image file behind the loop device.
    pub image: String,
    pub loop_device: String,
    /// `--scheduler`, when given (its name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
    /// The scheduler tunables `--scheduler NAME:TUNABLE=VALUE,...` set, as read back from
    /// `queue/iosched/`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scheduler_tunables: BTreeMap<String, String>,
    /// The per-device dirty limits `--bdi` set: every knob of the loop device's bdi as read
    /// back after setting them (`max_bytes` reads as the bytes its ratio comes to now).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub bdi: BTreeMap<String, u64>,
    /// What the filesystem let an application do after a run in which calls or the disk
    /// failed, when it was no longer writable (`read-only`, `refuses changes (EIO)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_after_run: Option<String>,
    /// What the kernel logged about the scratch device during the run (`/dev/kmsg`, as
    /// root): I/O errors, a journal aborted, a filesystem shut down.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_messages: Vec<String>,
}

/// The device profile as the result records it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceProfileInfo {
    /// `host`, `ram`, or the emulated profile as typed (`hdd-5400`, `flush=5ms`).
    pub name: String,
    /// The emulated fixed flush cost in ms (emulated profiles only): what a flush costs
    /// once the write cache has drained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_ms: Option<f64>,
    /// The emulated media transfer rate in bytes per second, when limited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_bytes_per_s: Option<u64>,
    /// Device cache flushes counted during the run (setup included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flushes: Option<u64>,
    /// Who counted them: `emulated device` (the FUSE daemon's fsyncs of the image) or
    /// `block layer` (flush requests completed on the loop device, /sys/block/NAME/stat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flushes_counted_by: Option<String>,
    /// Device flushes per foreground sync call of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flushes_per_sync: Option<f64>,
    /// The emulated disk's figures (emulated profiles only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<DiskModelInfo>,
    /// What the emulated disk did during the run (emulated profiles only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<DeviceActivity>,
}

/// An emulated disk's figures, as docs/disk-model.md describes them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskModelInfo {
    /// `rotating` (seeks and rotation) or `solid` (a cost per request).
    pub mechanics: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seek_settle_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seek_full_stroke_ms: Option<f64>,
    /// The seek curve's mean over random start and end points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seek_average_ms: Option<f64>,
    /// The capacity seek distances are a fraction of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_bytes_per_s: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus_bytes_per_s: Option<u64>,
    /// The median command latency when `command_latency_p99_us` is set.
    pub command_latency_us: f64,
    /// The command latency's 99th percentile (`latency-p99=`): latencies drawn from a
    /// log-normal distribution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_latency_p99_us: Option<f64>,
    pub cache_bytes: u64,
    /// The separate writes the cache holds at most (`segments=`; absent: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_segments: Option<u32>,
    /// `volatile`, `battery-backed`, or `none` (write-through).
    pub cache: String,
    pub flush_cost_ms: f64,
    /// The unit a write is persisted in (a power cut tears writes only between sectors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sector_bytes: Option<u64>,
    /// A lying drive (`flush=ignore`): flushes acknowledged without draining the cache.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignores_flushes: bool,
    /// The injected faults (`fail=...`), each as `fail=` takes it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<String>,
}

/// What an emulated disk did during a run: the daemon's counts and times.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceActivity {
    /// The stretch of time these figures cover.
    pub duration_s: f64,
    pub reads: u64,
    pub read_bytes: u64,
    /// Reads served entirely from the write cache.
    pub read_cache_hits: u64,
    pub writes: u64,
    pub write_bytes: u64,
    /// Writes acknowledged only once on the media (no cache, or larger than the cache).
    pub write_through: u64,
    /// Writes that found the cache full, and how long they waited for room in total.
    pub writes_waited_for_room: u64,
    pub room_wait_ms: f64,
    /// Bytes a later write replaced in the cache before they reached the media.
    pub overwritten_in_cache_bytes: u64,
    pub flushes: u64,
    /// Flush times: arrival to completion (the drain they waited for plus the fixed cost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_ms_mean: Option<f64>,
    pub flush_ms_total: f64,
    /// The longest flush of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_ms_max: Option<f64>,
    /// Bytes the flushes found waiting for the media, in total and at most.
    pub flush_pending_bytes_total: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_pending_bytes_max: Option<u64>,
    /// Media operations (drains, write-through writes, read misses) and their bytes.
    pub media_ops: u64,
    pub media_bytes: u64,
    /// How the media operations were positioned: seeks, short skips ahead on the track,
    /// rewinds (waiting for the platter to come round), sequential.
    pub seeks: u64,
    pub short_skips: u64,
    pub rewinds: u64,
    pub sequential: u64,
    pub positioning_ms: f64,
    pub transfer_ms: f64,
    /// (positioning + transfer) / duration: how busy the actuator was.
    pub media_busy_fraction: f64,
    /// The largest cache occupancy during the run, and the mean.
    pub cache_max_bytes: u64,
    pub cache_mean_bytes: u64,
    /// Cache occupancy over the run: [seconds since the run started, bytes], sampled every
    /// 100 ms (the largest of each stretch when thinned to at most 600 points).
    pub cache_occupancy: Vec<[f64; 2]>,
    /// How far the daemon's writes to the media fell behind the model's schedule at most:
    /// large values mean the daemon (CPU, memory bandwidth), not the profile, set the pace.
    pub drain_lag_ms_max: f64,
    /// Requests the drive failed on purpose (`fail=...`), by kind.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed_writes: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed_reads: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed_flushes: u64,
    /// Flushes a lying drive (`flush=ignore`) acknowledged without draining.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub flushes_ignored: u64,
    /// Requests answered with EIO because the power had been cut.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refused_after_cut: u64,
    /// The power cut during the run, if there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_cut: Option<PowerCut>,
}

/// A power cut of the emulated disk: when it came, what the drive held, and what of it
/// reached the media. A write the cache had split (a later write replaced part of it) counts
/// as the pieces it held.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PowerCut {
    /// Seconds since the device started.
    pub at_s: f64,
    /// What made it: `now`, `after 2s`, `after 100 flushes`, `at 1.234s (random within 5s, seed 7)`.
    pub trigger: String,
    /// What the cut kept of the cache: `none`, `prefix`, `any`, `torn`, or `battery` for a
    /// battery-backed cache (which keeps it whole).
    pub keep: String,
    pub seed: u64,
    /// Writes and flushes the drive had acknowledged since it started.
    pub writes_before: u64,
    pub flushes_before: u64,
    /// What the drive held (in its cache, or on its way through to the media).
    pub held_writes: u64,
    pub held_bytes: u64,
    /// Reached the media whole, not at all, or in part.
    pub kept_writes: u64,
    pub kept_bytes: u64,
    pub lost_writes: u64,
    pub lost_bytes: u64,
    pub torn_writes: u64,
    pub torn_bytes_kept: u64,
    pub torn_bytes_lost: u64,
    /// Of the writes held, those the host had not been told were done (write-through).
    pub unacknowledged_writes: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// Kernel name of the whole disk (`vda`, `loop3`, `nvme0n1`).
    pub name: String,
    /// `major:minor` of the device the filesystem is on (a partition's own numbers).
    pub dev: String,
    /// The active I/O scheduler (`mq-deadline`, `none`, ...).
    pub scheduler: Option<String>,
    /// Every scheduler the device offers.
    pub schedulers: Vec<String>,
    /// `write back` (volatile cache: flushes matter) or `write through`.
    pub write_cache: Option<String>,
    pub rotational: Option<bool>,
    /// For a loop device, the file behind it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing_file: Option<String>,
    /// The drive's model and firmware revision, where the kernel says them
    /// (`device/model`; NVMe's `device/firmware_rev`, SCSI and ATA's `device/rev`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<String>,
}

/// The device numbers behind a mount: those of its source when that is a block device
/// (btrfs reports anonymous numbers in mountinfo), else mountinfo's own.
pub(crate) fn device_numbers(m: &MountInfo) -> (u32, u32) {
    if m.source.starts_with("/dev/") {
        if let Ok(meta) = std::fs::metadata(&m.source) {
            use std::os::unix::fs::FileTypeExt;
            if meta.file_type().is_block_device() {
                let rdev = meta.rdev();
                return (libc::major(rdev), libc::minor(rdev));
            }
        }
    }
    (m.major, m.minor)
}

/// The block device `major:minor` is on (the whole disk for a partition): its name,
/// scheduler, write-cache mode, rotational flag, and a loop device's backing file.
pub fn device_info(major: u32, minor: u32) -> Option<DeviceInfo> {
    let dir = block::disk_dir(major, minor)?;
    let queue = dir.join("queue");
    let (scheduler, schedulers) = read_trimmed(queue.join("scheduler"))
        .map(|s| block::parse_scheduler(&s))
        .unwrap_or_default();
    Some(DeviceInfo {
        name: dir.file_name()?.to_string_lossy().into_owned(),
        dev: format!("{major}:{minor}"),
        scheduler,
        schedulers,
        write_cache: read_trimmed(queue.join("write_cache")),
        rotational: read_trimmed(queue.join("rotational")).map(|r| block::parse_rotational(&r)),
        backing_file: read_trimmed(dir.join("loop/backing_file")),
        model: read_trimmed(dir.join("device/model")).filter(|m| !m.is_empty()),
        firmware: read_trimmed(dir.join("device/firmware_rev"))
            .or_else(|| read_trimmed(dir.join("device/rev")))
            .filter(|f| !f.is_empty()),
    })
}

/// Counts of what did not happen are left out of a result, as results before them had none.
fn is_zero(n: &u64) -> bool {
    *n == 0
}
