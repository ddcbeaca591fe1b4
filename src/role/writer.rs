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

use super::fill::Filler;
use crate::measure::{LatencyHistogram, LatencySummary, PerSecond, RunClock, SecondBucket};
use crate::observe::{Event, Observer};
use crate::rng::SplitMix64;
use crate::stop::Stop;
use crate::sync::SyncMethod;
use crate::sys::{self, Errno};
use crate::units::Bytes;

/// Block size of the random writer and of its file's setup (the seed's `bigbuf`).
pub(crate) const RANDOM_BLOCK: u64 = 4096;

/// One background workload: `step` issues one write.
pub(crate) trait Writer: Send {
    fn kind(&self) -> WriterKind;
    /// Issues one write and returns the bytes it covered.
    fn step(&mut self) -> io::Result<u64>;
}

/// Which writer loads writeback.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum WriterKind {
    Stream,
    Random,
}

impl std::fmt::Display for WriterKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WriterKind::Stream => "stream",
            WriterKind::Random => "random",
        })
    }
}

/// The stream writer's figures: overwrite.c's are not known, so both are parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StreamConfig {
    pub(crate) file_size: u64,
    pub(crate) chunk: u64,
}

/// The random writer's figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RandomConfig {
    pub(crate) file_size: u64,
    /// Seed of the offset generator (fixed, so runs are repeatable).
    pub(crate) seed: u64,
}

pub(crate) struct StreamWriter {
    file: File,
    buf: Vec<u8>,
    file_size: u64,
    offset: u64,
}

impl StreamWriter {
    pub(crate) const FILE: &'static str = "stream-writer.dat";

    pub(crate) fn open(dir: &Path, config: StreamConfig) -> Result<StreamWriter> {
        let path = dir.join(Self::FILE);
        let file = SyncMethod::None
            .open(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        Ok(StreamWriter {
            file,
            buf: vec![b's'; config.chunk as usize],
            file_size: config.file_size,
            offset: 0,
        })
    }
}

impl Writer for StreamWriter {
    fn kind(&self) -> WriterKind {
        WriterKind::Stream
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

pub(crate) struct RandomWriter {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    blocks: u64,
    rng: SplitMix64,
}

impl RandomWriter {
    pub(crate) const FILE: &'static str = "fsync-tester.rnd-file";

    pub(crate) fn open(dir: &Path, config: RandomConfig) -> Result<RandomWriter> {
        let path = dir.join(Self::FILE);
        let file = SyncMethod::None
            .open(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        Ok(RandomWriter {
            file,
            path,
            buf: vec![0u8; RANDOM_BLOCK as usize],
            blocks: (config.file_size / RANDOM_BLOCK).max(1),
            rng: SplitMix64::new(config.seed),
        })
    }

    /// Writes the file sequentially in 4 KiB writes up to its full size if it is smaller, as
    /// the seed does (without a sync), printing the seed's two setup lines.
    pub(crate) fn set_up(&mut self, stop: &Stop, observer: &mut dyn Observer) -> Result<Setup> {
        let total = self.blocks * RANDOM_BLOCK;
        let have = self
            .file
            .metadata()
            .with_context(|| format!("cannot stat {}", self.path.display()))?
            .len();
        if have >= total {
            return Ok(Setup::NotNeeded);
        }
        observer.event(Event::SeedLine(SETUP_LINES[0]));
        let mut filler = Filler::new("setting up random write file", total, stop, observer);
        if !filler.fill(&self.file, &self.path, &self.buf, total, false)? {
            return Ok(Setup::Interrupted);
        }
        observer.event(Event::SeedLine(SETUP_LINES[1]));
        Ok(Setup::Done)
    }
}

/// The lines the seed prints around writing the random file out.
pub(crate) const SETUP_LINES: [&str; 2] = ["setting up random write file", "done setting up random write file"];

/// Whether the random writer's file had to be written out first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Setup {
    /// The file had its size already (or there is no random writer).
    #[default]
    NotNeeded,
    /// A signal stopped the setup.
    Interrupted,
    Done,
}

impl Setup {
    /// The seed's setup lines this setup printed.
    pub(crate) fn seed_lines(self) -> &'static [&'static str] {
        match self {
            Setup::NotNeeded => &[],
            Setup::Interrupted => &SETUP_LINES[..1],
            Setup::Done => &SETUP_LINES,
        }
    }
}

impl Writer for RandomWriter {
    fn kind(&self) -> WriterKind {
        WriterKind::Random
    }

    fn step(&mut self) -> io::Result<u64> {
        let offset = (self.rng.next_u64() % self.blocks) * RANDOM_BLOCK;
        sys::pwrite_all(&self.file, &self.buf, offset, false)?;
        Ok(RANDOM_BLOCK)
    }
}

/// What a background writer did over the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct BackgroundSummary {
    pub(crate) kind: WriterKind,
    pub(crate) bytes: u64,
    pub(crate) ops: u64,
    pub(crate) errors: u64,
    /// The error that stopped the writer, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<Errno>,
    /// When the call that failed started, ns on the run's clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error_at_ns: Option<u64>,
    /// How long the writer ran.
    pub(crate) seconds: f64,
    /// Mebibytes (2^20 bytes) per second over `seconds`.
    pub(crate) mb_per_s: f64,
    pub(crate) ops_per_s: f64,
    /// Latency of the writer's own write calls.
    pub(crate) latency_ns: LatencySummary,
    pub(crate) per_second: Vec<SecondBucket>,
}

impl BackgroundSummary {
    /// A writer of `kind` that did nothing.
    pub(crate) fn empty(kind: WriterKind) -> BackgroundSummary {
        BackgroundSummary {
            kind,
            bytes: 0,
            ops: 0,
            errors: 0,
            error: None,
            error_at_ns: None,
            seconds: 0.0,
            mb_per_s: 0.0,
            ops_per_s: 0.0,
            latency_ns: LatencySummary::default(),
            per_second: Vec::new(),
        }
    }
}

/// A writer running on its own thread.
pub(crate) struct Background {
    kind: WriterKind,
    stop: Stop,
    handle: JoinHandle<BackgroundSummary>,
}

impl Background {
    /// Starts `writer` on a new thread; it runs until `stop_and_join` or a signal.
    pub(crate) fn start(mut writer: Box<dyn Writer>, clock: RunClock, stop: &Stop) -> Result<Background> {
        let stop = stop.child();
        let thread_stop = stop.clone();
        let kind = writer.kind();
        let handle = std::thread::Builder::new()
            .name(format!("{}-writer", writer.kind()))
            .spawn(move || run_writer(writer.as_mut(), clock, &thread_stop))
            .context("cannot start the background writer thread")?;
        Ok(Background { kind, stop, handle })
    }

    pub(crate) fn stop_and_join(self) -> BackgroundSummary {
        self.stop.set();
        let kind = self.kind;
        self.handle.join().unwrap_or_else(|_| BackgroundSummary {
            errors: 1,
            ..BackgroundSummary::empty(kind)
        })
    }
}

/// The writer loop: one timed call at a time until stopped or failed.
pub(crate) fn run_writer(writer: &mut dyn Writer, clock: RunClock, stop: &Stop) -> BackgroundSummary {
    let mut latency = LatencyHistogram::new();
    let mut per_second = PerSecond::new();
    let (mut bytes, mut ops, mut error, mut error_at_ns) = (0u64, 0u64, None, None);
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
                error = Some(Errno::of(&e));
                error_at_ns = Some(start_ns);
                break;
            }
        }
    }
    let seconds = (clock.now_ns() - started_ns) as f64 / 1e9;
    let rate = |x: f64| if seconds > 0.0 { x / seconds } else { 0.0 };
    BackgroundSummary {
        kind: writer.kind(),
        bytes,
        ops,
        errors: u64::from(error.is_some()),
        error,
        error_at_ns,
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
        fn kind(&self) -> WriterKind {
            WriterKind::Random
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
        assert_eq!(r.error, Some(Errno(libc::ENOSPC)));
        // Issue 15, item 3: when, on the run's clock, so that the report puts it on the timeline.
        assert!(r.error_at_ns.is_some());
    }
}
