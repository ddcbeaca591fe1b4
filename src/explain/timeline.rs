//! The timeline: the machine's writeback state sampled at a fixed interval on the run
//! clock, cheap enough to run beside every measurement.
//!
//! Each point holds what the kernel's own counters say at that moment:
//! - `/proc/meminfo` Dirty and Writeback ([`crate::kernel::meminfo`]);
//! - `/proc/vmstat` nr_dirty_threshold and nr_dirty_background_threshold, the limits the
//!   kernel computed for dirty pages, in pages ([`crate::kernel::vmstat`]);
//! - `/proc/pressure/io` some and full, cumulative stall time in µs
//!   ([`crate::kernel::pressure`]);
//! - `/sys/class/block/DEV/stat` of the device under test: requests in flight and the
//!   completed reads, writes and flushes ([`crate::kernel::block_stat`]).
//!
//! Cumulative counters are stored as read; rates come from differences between points.
//! The background writer's throughput is already kept per second by the run and can be
//! joined on the same clock. Files are kept open and re-read at offset 0, which the kernel
//! regenerates for /proc seq files and sysfs attributes, so a sample costs a few reads.

use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

use super::tracefs::thread_cpu_ns;
use crate::kernel::{BlockStat, Meminfo, Pressure, Vmstat};
use crate::measure::RunClock;

/// One sample.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct TimelinePoint {
    /// When it was taken, ns on the run clock.
    pub(crate) t_ns: u64,
    pub(crate) dirty_bytes: Option<u64>,
    pub(crate) writeback_bytes: Option<u64>,
    /// The kernel's dirty limit and background limit now (vmstat, pages × page size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) dirty_threshold_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) dirty_background_threshold_bytes: Option<u64>,
    /// Cumulative time some / all non-idle tasks stalled on I/O, µs (PSI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) io_some_total_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) io_full_total_us: Option<u64>,
    /// The device under test: requests in flight now, and cumulative completions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) device_in_flight: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) device_writes_completed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) device_sectors_written: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) device_flushes_completed: Option<u64>,
}

/// A finished timeline.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct TimelineRecord {
    pub(crate) interval_ns: u64,
    /// The device sampled (`loop0`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) device: Option<String>,
    pub(crate) points: Vec<TimelinePoint>,
    /// CPU time the sampling thread used, ns, and per second of sampling.
    pub(crate) sampler_cpu_ns: u64,
    pub(crate) sampler_cpu_ns_per_s: u64,
}

/// The files a sample reads, kept open.
struct Sources {
    meminfo: Option<File>,
    vmstat: Option<File>,
    pressure: Option<File>,
    disk: Option<File>,
    page_size: u64,
    buf: Vec<u8>,
}

impl Sources {
    fn open(device: Option<&str>) -> Sources {
        let page_size = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
            .ok()
            .flatten()
            .unwrap_or(0);
        Sources {
            meminfo: File::open("/proc/meminfo").ok(),
            vmstat: File::open("/proc/vmstat").ok(),
            pressure: File::open("/proc/pressure/io").ok(),
            disk: device.and_then(|d| File::open(format!("/sys/class/block/{d}/stat")).ok()),
            page_size: if page_size > 0 { page_size as u64 } else { 4096 },
            buf: vec![0; 16 << 10],
        }
    }

    /// The file's whole text, read from offset 0.
    fn read<T: FromStr>(buf: &mut Vec<u8>, file: &Option<File>) -> Option<T> {
        let file = file.as_ref()?;
        let mut len = 0;
        loop {
            if len == buf.len() {
                buf.resize(buf.len() * 2, 0);
            }
            match file.read_at(&mut buf[len..], len as u64) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(_) => return None,
            }
        }
        std::str::from_utf8(&buf[..len]).ok()?.parse().ok()
    }

    fn sample(&mut self, t_ns: u64) -> TimelinePoint {
        let mem: Option<Meminfo> = Self::read(&mut self.buf, &self.meminfo);
        let vm: Option<Vmstat> = Self::read(&mut self.buf, &self.vmstat);
        let psi: Option<Pressure> = Self::read(&mut self.buf, &self.pressure);
        let disk: Option<BlockStat> = Self::read(&mut self.buf, &self.disk);
        TimelinePoint {
            t_ns,
            dirty_bytes: mem.and_then(|m| m.dirty_bytes),
            writeback_bytes: mem.and_then(|m| m.writeback_bytes),
            dirty_threshold_bytes: vm.map(|v| v.dirty_threshold_pages * self.page_size),
            dirty_background_threshold_bytes: vm.map(|v| v.dirty_background_threshold_pages * self.page_size),
            io_some_total_us: psi.map(|p| p.some_total_us),
            io_full_total_us: psi.and_then(|p| p.full_total_us),
            device_in_flight: disk.map(|d| d.in_flight),
            device_writes_completed: disk.map(|d| d.writes_completed),
            device_sectors_written: disk.map(|d| d.sectors_written),
            device_flushes_completed: disk.and_then(|d| d.flushes_completed),
        }
    }
}

/// The sampler running in its own thread.
pub(crate) struct Timeline {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<TimelineRecord>>,
}

/// The default sampling interval.
pub(crate) const DEFAULT_INTERVAL: Duration = Duration::from_millis(100);

impl Timeline {
    /// Starts sampling every `interval` on `clock`, the device under test being `device`
    /// (its kernel name, `loop0`; None: no device counters).
    pub(crate) fn start(clock: RunClock, interval: Duration, device: Option<&str>) -> Result<Timeline> {
        let interval = interval.max(Duration::from_millis(1));
        let device = device.map(str::to_string);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("timeline".into())
            .spawn(move || sample_until(clock, interval, device, &flag))
            .context("cannot start the timeline sampler thread")?;
        Ok(Timeline {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops sampling (at once, not at the next tick) and returns the points.
    pub(crate) fn stop(mut self) -> TimelineRecord {
        self.finish().unwrap_or_default()
    }

    fn finish(&mut self) -> Option<TimelineRecord> {
        self.stop.store(true, Ordering::SeqCst);
        let handle = self.handle.take()?;
        handle.thread().unpark();
        handle.join().ok()
    }
}

impl Drop for Timeline {
    fn drop(&mut self) {
        self.finish();
    }
}

fn sample_until(clock: RunClock, interval: Duration, device: Option<String>, stop: &AtomicBool) -> TimelineRecord {
    let mut sources = Sources::open(device.as_deref());
    let started = Instant::now();
    let cpu_before = thread_cpu_ns();
    let mut points = Vec::new();
    let mut tick = 0u32;
    while !stop.load(Ordering::SeqCst) {
        points.push(sources.sample(clock.now_ns()));
        // Deadlines from the start, so that the interval does not drift by the sample's cost.
        tick += 1;
        let next = started + interval * tick;
        while !stop.load(Ordering::SeqCst) {
            let now = Instant::now();
            if now >= next {
                break;
            }
            std::thread::park_timeout(next - now);
        }
    }
    let cpu_ns = thread_cpu_ns().saturating_sub(cpu_before);
    let secs = started.elapsed().as_secs_f64();
    TimelineRecord {
        interval_ns: interval.as_nanos() as u64,
        device,
        points,
        sampler_cpu_ns: cpu_ns,
        sampler_cpu_ns_per_s: if secs > 0.0 { (cpu_ns as f64 / secs) as u64 } else { 0 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_at_the_interval_and_stops_at_once() {
        let clock = RunClock::start();
        let t = Timeline::start(clock, Duration::from_millis(10), None).unwrap();
        std::thread::sleep(Duration::from_millis(105));
        let asked = Instant::now();
        let rec = t.stop();
        assert!(asked.elapsed() < Duration::from_millis(50), "stop waited for a tick");
        assert!((8..=13).contains(&rec.points.len()), "{} points", rec.points.len());
        assert!(rec.points.windows(2).all(|w| w[1].t_ns > w[0].t_ns));
        assert!(rec.points[0].dirty_bytes.is_some());
        assert_eq!(rec.interval_ns, 10_000_000);
    }
}
