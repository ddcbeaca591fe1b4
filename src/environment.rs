//! The environment fingerprint recorded in every result: kernel, filesystem and mount
//! options of the target, its block device (scheduler, write cache, rotational), the
//! `vm.dirty_*` sysctls, CPUs and memory. Two results can only be compared if these agree.
//!
//! Sources, each parsed by a `FromStr` or a small function with its kernel document:
//! - `/proc/self/mountinfo` — Documentation/filesystems/proc.rst, section 3.5
//! - `/sys/dev/block/MAJ:MIN/queue/{scheduler,write_cache,rotational}` —
//!   Documentation/ABI/stable/sysfs-block
//! - `/proc/sys/vm/dirty_*` — Documentation/admin-guide/sysctl/vm.rst
//! - `/proc/meminfo` — Documentation/filesystems/proc.rst, section 1.2 (MemTotal only)
//! - the journal settings — [`crate::explain::journal`]

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How far behind its model the emulated disk's daemon may fall before a run says that the
/// daemon, not the profile, set the pace.
pub const DAEMON_LAG_MS: f64 = 250.0;

/// The vm sysctls that decide when buffered data is written back.
pub const DIRTY_SYSCTLS: [&str; 6] = [
    "dirty_ratio",
    "dirty_background_ratio",
    "dirty_bytes",
    "dirty_background_bytes",
    "dirty_expire_centisecs",
    "dirty_writeback_centisecs",
];

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub fsynclab_version: String,
    pub kernel: String,
    pub cpus: usize,
    pub memory_bytes: u64,
    /// The directory the run worked in.
    pub target: String,
    pub filesystem: Option<FilesystemInfo>,
    pub device: Option<DeviceInfo>,
    /// `vm.dirty_*` sysctls by name (without the `vm.` prefix).
    pub sysctls: BTreeMap<String, u64>,
    /// The scratch filesystem fsynclab made for the run (`--scratch`), as requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scratch: Option<ScratchInfo>,
    /// The device profile behind the scratch filesystem (`--device`), with flush counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_profile: Option<DeviceProfileInfo>,
    /// The sysctls fsynclab set for the run (`--dirty-ratio`...), restored afterwards.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sysctls_set: BTreeMap<String, u64>,
    /// The filesystem's journal: whether it has one, data mode, commit interval, batch
    /// times (ext4); log buffers (xfs); commit interval (btrfs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<crate::explain::journal::JournalInfo>,
}

/// A scratch filesystem as requested; what the kernel made of the mount options is in
/// [`FilesystemInfo`], the scheduler in [`DeviceInfo`].
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
    pub command_latency_us: f64,
    pub cache_bytes: u64,
    /// `volatile`, `battery-backed`, or `none` (write-through).
    pub cache: String,
    pub flush_cost_ms: f64,
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
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FilesystemInfo {
    pub fstype: String,
    pub mount_point: String,
    /// The mount source (`/dev/vda`, `tmpfs`, `/dev/loop3`).
    pub source: String,
    /// Per-mount options (`rw,relatime`).
    pub mount_options: String,
    /// Per-superblock options (`rw,data=ordered,commit=5`): where ext4 and xfs report theirs.
    pub super_options: String,
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
}

/// One line of `/proc/self/mountinfo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountInfo {
    pub mount_id: u32,
    pub major: u32,
    pub minor: u32,
    pub root: String,
    pub mount_point: String,
    pub mount_options: String,
    pub fstype: String,
    pub source: String,
    pub super_options: String,
}

impl FromStr for MountInfo {
    type Err = String;

    /// `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue`:
    /// mount id, parent id, major:minor, root, mount point, mount options, optional fields
    /// up to `-`, fstype, source, super options. The parent id and optional fields are ignored.
    fn from_str(line: &str) -> Result<Self, Self::Err> {
        let bad = || format!("malformed mountinfo line: {line}");
        let (left, right) = line.split_once(" - ").ok_or_else(bad)?;
        let l: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        if l.len() < 6 || r.len() < 3 {
            return Err(bad());
        }
        let (major, minor) = l[2].split_once(':').ok_or_else(bad)?;
        Ok(MountInfo {
            mount_id: l[0].parse().map_err(|_| bad())?,
            major: major.parse().map_err(|_| bad())?,
            minor: minor.parse().map_err(|_| bad())?,
            root: unescape(l[3]),
            mount_point: unescape(l[4]),
            mount_options: l[5].to_string(),
            fstype: r[0].to_string(),
            source: unescape(r[1]),
            super_options: r[2].to_string(),
        })
    }
}

/// Undoes the octal escapes (`\040` for a space) the kernel uses in mountinfo paths.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 4 <= bytes.len() {
            let digits = std::str::from_utf8(&bytes[i + 1..i + 4]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(digits, 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses all of mountinfo, skipping lines it cannot read.
pub fn parse_mountinfo(text: &str) -> Vec<MountInfo> {
    text.lines().filter_map(|l| l.parse().ok()).collect()
}

/// The mount that holds `path` (canonical): the longest mount point that is a prefix of it;
/// of several mounts on the same point, the last (the one on top).
pub fn mount_of<'a>(mounts: &'a [MountInfo], path: &Path) -> Option<&'a MountInfo> {
    mounts
        .iter()
        .filter(|m| path.starts_with(&m.mount_point))
        .fold(None, |best: Option<&MountInfo>, m| match best {
            Some(b) if b.mount_point.len() > m.mount_point.len() => Some(b),
            _ => Some(m),
        })
}

/// The active scheduler and all offered, from `queue/scheduler`: `mq-deadline kyber [bfq] none`.
pub fn parse_scheduler(text: &str) -> (Option<String>, Vec<String>) {
    let mut active = None;
    let all = text
        .split_whitespace()
        .map(|w| {
            if let Some(inner) = w.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
                active = Some(inner.to_string());
                inner.to_string()
            } else {
                w.to_string()
            }
        })
        .collect();
    (active, all)
}

/// A field of `/proc/meminfo` (`MemFree`, `Active(file)`), in bytes.
pub fn meminfo_field(meminfo: &str, name: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.split(':').next() == Some(name))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// About how many dirty bytes the kernel lets pile up before background writeback starts:
/// `vm.dirty_background_bytes` when set, else `dirty_background_ratio` percent of the
/// dirtyable memory, approximated as MemFree + Active(file) + Inactive(file) (the kernel's
/// `global_dirtyable_memory()` also subtracts reserves; this is an estimate).
pub fn dirty_background_threshold(sysctls: &BTreeMap<String, u64>, meminfo: &str) -> Option<u64> {
    if let Some(bytes) = sysctls.get("dirty_background_bytes").filter(|b| **b > 0) {
        return Some(*bytes);
    }
    let ratio = *sysctls.get("dirty_background_ratio")?;
    let dirtyable = meminfo_field(meminfo, "MemFree")?
        + meminfo_field(meminfo, "Active(file)").unwrap_or(0)
        + meminfo_field(meminfo, "Inactive(file)").unwrap_or(0);
    Some(dirtyable / 100 * ratio)
}

/// The same, for this machine now.
pub fn current_dirty_background_threshold() -> Option<u64> {
    dirty_background_threshold(&read_sysctls(), &std::fs::read_to_string("/proc/meminfo").ok()?)
}

/// Refuses a parameter that sizes an in-memory buffer beyond half the RAM: the allocation
/// would abort the process (or wake the OOM killer) before any cleanup could run.
pub fn check_fits_in_memory(param: &str, bytes: u64) -> Result<(), crate::error::Usage> {
    check_buffers_fit(param, bytes, 1)
}

/// Refuses `count` buffers of `size` bytes (one per worker thread) that together would take
/// more than half the RAM: an allocation that fails aborts the process, and one that
/// succeeds invites the OOM killer (issue 8: 3 x 10 GiB passed a per-buffer check).
pub fn check_buffers_fit(param: &str, size: u64, count: u64) -> Result<(), crate::error::Usage> {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| parse_memtotal(&m));
    let needed = size.saturating_mul(count);
    let shown = crate::units::format_size(crate::units::Bytes(size));
    match total.map(|t| t / 2) {
        Some(limit) if needed > limit && count == 1 => Err(crate::error::Usage(format!(
            "--set {param}={shown}: fsynclab holds one such write in memory; at most half the RAM ({})",
            crate::units::human_size(limit)
        ))),
        Some(limit) if needed > limit => Err(crate::error::Usage(format!(
            "--set {param}={shown}: {count} workers each hold such a buffer, {} in all; at most half the RAM ({}): lower {param} or the thread count",
            crate::units::human_size(needed),
            crate::units::human_size(limit)
        ))),
        _ => Ok(()),
    }
}

/// `MemTotal` from `/proc/meminfo`, in bytes.
pub fn parse_memtotal(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn read_trimmed(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// The sysfs directory of the whole disk for device `major:minor` (a partition's parent).
pub(crate) fn disk_dir(major: u32, minor: u32) -> Option<PathBuf> {
    let dir = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    if dir.join("partition").exists() {
        dir.parent().map(Path::to_path_buf)
    } else {
        Some(dir)
    }
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

pub fn device_info(major: u32, minor: u32) -> Option<DeviceInfo> {
    let dir = disk_dir(major, minor)?;
    let queue = dir.join("queue");
    let (scheduler, schedulers) = read_trimmed(queue.join("scheduler"))
        .map(|s| parse_scheduler(&s))
        .unwrap_or_default();
    Some(DeviceInfo {
        name: dir.file_name()?.to_string_lossy().into_owned(),
        dev: format!("{major}:{minor}"),
        scheduler,
        schedulers,
        write_cache: read_trimmed(queue.join("write_cache")),
        rotational: read_trimmed(queue.join("rotational")).map(|r| r == "1"),
        backing_file: read_trimmed(dir.join("loop/backing_file")),
    })
}

pub fn read_sysctls() -> BTreeMap<String, u64> {
    DIRTY_SYSCTLS
        .iter()
        .filter_map(|name| {
            let v = read_trimmed(format!("/proc/sys/vm/{name}"))?.parse().ok()?;
            Some((name.to_string(), v))
        })
        .collect()
}

fn kernel_release() -> String {
    read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into())
}

/// Takes the fingerprint of the machine and of the filesystem holding `target`.
pub fn fingerprint(target: &Path) -> Fingerprint {
    let canonical = std::fs::canonicalize(target).unwrap_or_else(|_| target.to_path_buf());
    let mounts = parse_mountinfo(&std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default());
    let mount = mount_of(&mounts, &canonical);
    let device = mount.and_then(|m| {
        let (major, minor) = device_numbers(m);
        device_info(major, minor)
    });
    let journal = mount.and_then(|m| {
        let (major, minor) = device_numbers(m);
        // The filesystem's own device name (a partition's, not the disk's): /proc/fs/ext4/NAME.
        let dev_name = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}"))
            .ok()
            .and_then(|p| Some(p.file_name()?.to_string_lossy().into_owned()));
        crate::explain::journal::read(&m.fstype, dev_name.as_deref(), &m.super_options)
    });
    Fingerprint {
        fsynclab_version: env!("CARGO_PKG_VERSION").to_string(),
        kernel: kernel_release(),
        cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        memory_bytes: std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| parse_memtotal(&m))
            .unwrap_or(0),
        target: canonical.display().to_string(),
        filesystem: mount.map(|m| FilesystemInfo {
            fstype: m.fstype.clone(),
            mount_point: m.mount_point.clone(),
            source: m.source.clone(),
            mount_options: m.mount_options.clone(),
            super_options: m.super_options.clone(),
        }),
        device,
        sysctls: read_sysctls(),
        journal,
        ..Fingerprint::default()
    }
}

impl Fingerprint {
    /// One line for reports: `ext4 (rw,relatime) on vda [mq-deadline, write back, ssd]`.
    pub fn target_line(&self) -> String {
        let fs = match &self.filesystem {
            Some(f) => format!(
                "{} ({}; {}) at {}",
                f.fstype, f.mount_options, f.super_options, f.mount_point
            ),
            None => "unknown filesystem".into(),
        };
        let dev = match &self.device {
            Some(d) => format!(
                " on {} [scheduler {}, write cache {}, {}]",
                d.name,
                d.scheduler.as_deref().unwrap_or("?"),
                d.write_cache.as_deref().unwrap_or("?"),
                match d.rotational {
                    Some(true) => "rotational",
                    Some(false) => "non-rotational",
                    None => "rotational ?",
                }
            ),
            None => String::new(),
        };
        let scratch = match (&self.scratch, &self.device_profile) {
            (Some(s), p) => format!(
                "; scratch {} image {} on {}{}",
                s.fstype,
                crate::units::human_size(s.size_bytes),
                s.loop_device,
                p.as_ref().map(|p| format!(", device {}", p.name)).unwrap_or_default()
            ),
            (None, _) => String::new(),
        };
        format!("{fs}{dev}{scratch}")
    }

    /// The finding about the device's cache flushes, when they were counted: how many, and
    /// per foreground sync call (`sync_calls` of them).
    pub fn device_findings(&self, sync_calls: u64) -> Vec<String> {
        let Some(profile) = &self.device_profile else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let lag = profile.activity.as_ref().map(|a| a.drain_lag_ms_max);
        if let Some(lag) = lag.filter(|l| *l > DAEMON_LAG_MS) {
            out.push(format!(
                "device: the emulated disk's daemon fell up to {lag:.0} ms behind its model (CPU or memory bandwidth): throughput figures here are the daemon's ceiling, not the profile's"
            ));
        }
        if let Some(flushes) = profile.flushes {
            out.push(match profile.flushes_per_sync {
                Some(per) => format!(
                    "device: {flushes} cache flushes during the run, {per:.2} per foreground sync call ({sync_calls} calls; setup included)"
                ),
                None => format!("device: {flushes} cache flushes during the run"),
            });
        }
        out
    }

    /// One line for reports: kernel, CPUs, memory, dirty sysctls.
    pub fn machine_line(&self) -> String {
        let s = |k: &str| self.sysctls.get(k).map(u64::to_string).unwrap_or_else(|| "?".into());
        format!(
            "Linux {}, {} CPUs, {:.1} GiB; vm.dirty_ratio={} dirty_background_ratio={} dirty_expire_centisecs={}",
            self.kernel,
            self.cpus,
            self.memory_bytes as f64 / (1u64 << 30) as f64,
            s("dirty_ratio"),
            s("dirty_background_ratio"),
            s("dirty_expire_centisecs"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = include_str!("../tests/fixtures/mountinfo.txt");

    #[test]
    fn parses_mountinfo_fixture() {
        let mounts = parse_mountinfo(MOUNTINFO);
        assert_eq!(mounts.len(), 6);
        let root = &mounts[0];
        assert_eq!(root.fstype, "ext4");
        assert_eq!(root.source, "/dev/vda");
        assert_eq!((root.major, root.minor), (254, 0));
        assert_eq!(root.mount_options, "rw,relatime");
        assert_eq!(root.super_options, "rw");
        let spaced = mounts.iter().find(|m| m.fstype == "xfs").unwrap();
        assert_eq!(spaced.mount_point, "/mnt/with space");
    }

    #[test]
    fn longest_prefix_and_topmost_mount_wins() {
        let mounts = parse_mountinfo(MOUNTINFO);
        assert_eq!(mount_of(&mounts, Path::new("/home/u/x")).unwrap().fstype, "ext4");
        assert_eq!(mount_of(&mounts, Path::new("/tmp/fsynclab-1")).unwrap().fstype, "tmpfs");
        assert_eq!(mount_of(&mounts, Path::new("/mnt/with space/a")).unwrap().fstype, "xfs");
        // Two mounts on /srv: the later one is on top.
        assert_eq!(mount_of(&mounts, Path::new("/srv/db")).unwrap().fstype, "btrfs");
        // A sibling whose name merely starts the same is not inside.
        assert_eq!(mount_of(&mounts, Path::new("/tmpx")).unwrap().fstype, "ext4");
    }

    #[test]
    fn scheduler_marks_the_active_one() {
        let (active, all) = parse_scheduler("mq-deadline kyber [bfq] none");
        assert_eq!(active.as_deref(), Some("bfq"));
        assert_eq!(all, ["mq-deadline", "kyber", "bfq", "none"]);
        assert_eq!(parse_scheduler("none").0, None);
    }

    #[test]
    fn dirty_background_threshold_from_ratio_or_bytes() {
        let meminfo = "MemTotal: 1000 kB\nMemFree: 600 kB\nActive(file): 200 kB\nInactive(file): 200 kB\n";
        let mut sysctls = BTreeMap::from([
            ("dirty_background_ratio".to_string(), 10),
            ("dirty_background_bytes".to_string(), 0),
        ]);
        assert_eq!(
            dirty_background_threshold(&sysctls, meminfo),
            Some(1000 * 1024 / 100 * 10)
        );
        sysctls.insert("dirty_background_bytes".into(), 4096);
        assert_eq!(dirty_background_threshold(&sysctls, meminfo), Some(4096));
    }

    #[test]
    fn memtotal_in_bytes() {
        assert_eq!(
            parse_memtotal("MemTotal:       24563764 kB\nMemFree: 1 kB\n"),
            Some(24563764 * 1024)
        );
        assert_eq!(parse_memtotal("nothing"), None);
    }

    #[test]
    fn fingerprint_of_this_machine_names_a_filesystem() {
        let f = fingerprint(Path::new("."));
        assert!(!f.kernel.is_empty());
        assert!(f.cpus >= 1);
        assert!(f.filesystem.is_some(), "no mount found for .");
        assert!(f.sysctls.contains_key("dirty_ratio"));
        if f.filesystem.as_ref().is_some_and(|fs| fs.fstype == "ext4") {
            let journal = f.journal.expect("an ext4 has journal facts");
            assert!(["jbd2", "none"].contains(&journal.kind.as_str()), "{journal:?}");
        }
    }
}
