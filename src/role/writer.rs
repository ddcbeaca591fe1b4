//! Background writers that load the page cache and writeback while the prober measures.
//!
//! - [`StreamWriter`]: sequential overwrite of a `file_size` file in `chunk` writes, looping:
//!   the role of Linus's `overwrite.c` in seed 000 (whose source is lost; this is the model
//!   SEEDS.md prescribes).
//! - [`RandomWriter`]: 4 KiB buffered `pwrite`s at 4 KiB-aligned offsets drawn from a
//!   fixed-seed generator, into a preallocated file: Chris Mason's forked child in seed 003.
//!
//! A writer runs on its own thread ([`Background`]) until told to stop, timing each call and
//! counting bytes per second. It stops at its first failed call and reports the error.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::stop::Stop;
use crate::measure::{LatencyHistogram, LatencySummary, PerSecond, RunClock, SecondBucket};
use crate::observe::{Event, Observer, Unit};
use crate::params::{Kind, ParamSpec, Params};
use crate::sync::SyncMethod;
use crate::sys;
use crate::units::Bytes;

/// Block size of the random writer and of its file's setup (the seed's `bigbuf`).
pub const RANDOM_BLOCK: u64 = 4096;

/// One background workload: `step` issues one write.
pub trait Writer: Send {
    /// `stream` or `random`.
    fn kind(&self) -> &'static str;
    /// Issues one write and returns the bytes it covered.
    fn step(&mut self) -> io::Result<u64>;
}

/// The parameters of the stream writer, shared by every scenario that can run it.
pub const STREAM_PARAMS: [ParamSpec; 2] = [
    ParamSpec::new(
        "file_size",
        Kind::Size,
        "4G",
        "stream writer: size of the file it overwrites sequentially, looping (overwrite.c's size is not known)",
    ),
    ParamSpec::new(
        "chunk",
        Kind::Size,
        "1M",
        "stream writer: bytes per write (overwrite.c's chunk is not known)",
    ),
];

/// The parameters of the random writer, shared by every scenario that can run it.
pub const RANDOM_PARAMS: [ParamSpec; 2] = [
    ParamSpec::new(
        "random_file_size",
        Kind::Size,
        "512M",
        "random writer: size of the preallocated file it writes 4 KiB blocks into",
    )
    .seed("8G"),
    ParamSpec::new(
        "seed",
        Kind::Count,
        "1",
        "random writer: seed of the offset generator (fixed, so runs are repeatable)",
    ),
];

pub struct StreamWriter {
    file: File,
    buf: Vec<u8>,
    file_size: u64,
    offset: u64,
}

impl StreamWriter {
    pub const FILE: &'static str = "stream-writer.dat";

    pub fn open(dir: &Path, params: &Params) -> Result<StreamWriter> {
        let path = dir.join(Self::FILE);
        let file = SyncMethod::None
            .open(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        Ok(StreamWriter {
            file,
            buf: vec![b's'; params.size("chunk").get() as usize],
            file_size: params.size("file_size").get(),
            offset: 0,
        })
    }
}

impl Writer for StreamWriter {
    fn kind(&self) -> &'static str {
        "stream"
    }

    fn step(&mut self) -> io::Result<u64> {
        let len = (self.buf.len() as u64).min(self.file_size - self.offset);
        sys::pwrite_all(&self.file, &self.buf[..len as usize], self.offset, false)?;
        self.offset += len;
        if self.offset >= self.file_size {
            self.offset = 0;
        }
        Ok(len)
    }
}

/// SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators", 2014):
/// small, fast, and the same sequence for the same seed on every machine.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

pub struct RandomWriter {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    blocks: u64,
    rng: SplitMix64,
}

impl RandomWriter {
    pub const FILE: &'static str = "fsync-tester.rnd-file";

    pub fn open(dir: &Path, params: &Params) -> Result<RandomWriter> {
        let path = dir.join(Self::FILE);
        let file = SyncMethod::None
            .open(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        let size = params.size("random_file_size").get();
        Ok(RandomWriter {
            file,
            path,
            buf: vec![0u8; RANDOM_BLOCK as usize],
            blocks: (size / RANDOM_BLOCK).max(1),
            rng: SplitMix64::new(params.count("seed")),
        })
    }

    /// Writes the file sequentially in 4 KiB writes up to its full size if it is smaller, as
    /// the seed does, printing the seed's two setup lines. Returns false if stopped first.
    pub fn set_up(&mut self, stop: &Stop, observer: &mut dyn Observer) -> Result<bool> {
        let total = self.blocks * RANDOM_BLOCK;
        let have = self
            .file
            .metadata()
            .with_context(|| format!("cannot stat {}", self.path.display()))?
            .len();
        if have >= total {
            return Ok(true);
        }
        observer.event(Event::SeedLine("setting up random write file"));
        observer.event(Event::Phase {
            name: "setting up random write file",
            total: Some(total),
            unit: Unit::Bytes,
        });
        let mut offset = 0;
        while offset < total {
            if stop.is_set() {
                return Ok(false);
            }
            sys::pwrite_all(&self.file, &self.buf, offset, false)
                .with_context(|| format!("setting up {} at {}", self.path.display(), Bytes(offset)))?;
            offset += RANDOM_BLOCK;
            if offset % (8 * Bytes::MIB) == 0 {
                observer.event(Event::Progress { done: offset });
            }
        }
        observer.event(Event::SeedLine("done setting up random write file"));
        Ok(true)
    }
}

impl Writer for RandomWriter {
    fn kind(&self) -> &'static str {
        "random"
    }

    fn step(&mut self) -> io::Result<u64> {
        let offset = (self.rng.next_u64() % self.blocks) * RANDOM_BLOCK;
        sys::pwrite_all(&self.file, &self.buf, offset, false)?;
        Ok(RANDOM_BLOCK)
    }
}

/// What a background writer did over the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BackgroundReport {
    /// `stream` or `random`.
    pub kind: String,
    pub bytes: u64,
    pub ops: u64,
    pub errors: u64,
    /// The error that stopped the writer, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long the writer ran.
    pub seconds: f64,
    /// Mebibytes (2^20 bytes) per second over `seconds`.
    pub mb_per_s: f64,
    pub ops_per_s: f64,
    /// Latency of the writer's own write calls.
    pub latency_ns: LatencySummary,
    pub per_second: Vec<SecondBucket>,
}

/// A writer running on its own thread.
pub struct Background {
    stop: Stop,
    handle: JoinHandle<BackgroundReport>,
}

impl Background {
    /// Starts `writer` on a new thread; it runs until `stop_and_join` or a signal.
    pub fn start(mut writer: Box<dyn Writer>, clock: RunClock, stop: &Stop) -> Result<Background> {
        let stop = stop.child();
        let thread_stop = stop.clone();
        let handle = std::thread::Builder::new()
            .name(format!("{}-writer", writer.kind()))
            .spawn(move || run_writer(writer.as_mut(), clock, &thread_stop))
            .context("cannot start the background writer thread")?;
        Ok(Background { stop, handle })
    }

    pub fn stop_and_join(self) -> BackgroundReport {
        self.stop.set();
        self.handle.join().unwrap_or_else(|_| BackgroundReport {
            error: Some("background writer panicked".into()),
            errors: 1,
            ..BackgroundReport::default()
        })
    }
}

/// The writer loop: one timed call at a time until stopped or failed.
pub fn run_writer(writer: &mut dyn Writer, clock: RunClock, stop: &Stop) -> BackgroundReport {
    let mut latency = LatencyHistogram::new();
    let mut per_second = PerSecond::new();
    let (mut bytes, mut ops, mut error) = (0u64, 0u64, None);
    let started_ns = clock.now_ns();
    while !stop.is_set() {
        let (outcome, start_ns, latency_ns) = clock.time(|| writer.step());
        match outcome {
            Ok(n) => {
                latency.record(latency_ns);
                per_second.add(start_ns + latency_ns, n);
                bytes += n;
                ops += 1;
            }
            Err(e) => {
                error = Some(sys::error_name(&e));
                break;
            }
        }
    }
    let seconds = (clock.now_ns() - started_ns) as f64 / 1e9;
    let rate = |x: f64| if seconds > 0.0 { x / seconds } else { 0.0 };
    BackgroundReport {
        kind: writer.kind().to_string(),
        bytes,
        ops,
        errors: u64::from(error.is_some()),
        error,
        seconds,
        mb_per_s: rate(bytes as f64 / Bytes::MIB as f64),
        ops_per_s: rate(ops as f64),
        latency_ns: latency.summary(),
        per_second: per_second.into_buckets(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_is_fixed_for_a_seed() {
        let a: Vec<u64> = (0..4).scan(SplitMix64::new(1), |r, _| Some(r.next_u64())).collect();
        let b: Vec<u64> = (0..4).scan(SplitMix64::new(1), |r, _| Some(r.next_u64())).collect();
        assert_eq!(a, b);
        assert_ne!(
            a,
            (0..4)
                .scan(SplitMix64::new(2), |r, _| Some(r.next_u64()))
                .collect::<Vec<_>>()
        );
    }

    struct Failing(u32);
    impl Writer for Failing {
        fn kind(&self) -> &'static str {
            "random"
        }
        fn step(&mut self) -> io::Result<u64> {
            self.0 += 1;
            if self.0 > 3 {
                Err(io::Error::from_raw_os_error(libc::ENOSPC))
            } else {
                Ok(4096)
            }
        }
    }

    #[test]
    fn writer_stops_at_its_first_error_and_reports_it() {
        let r = run_writer(&mut Failing(0), RunClock::start(), &Stop::new());
        assert_eq!(r.ops, 3);
        assert_eq!(r.bytes, 3 * 4096);
        assert_eq!(r.errors, 1);
        assert_eq!(r.error.as_deref(), Some("ENOSPC"));
    }
}
