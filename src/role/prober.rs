//! The foreground prober: the fsync-tester of seeds 000 and 003.
//!
//! Each iteration writes `write_size` bytes (at offset 0, or appended) and then makes them
//! durable with the chosen [`SyncMethod`]. The write and the sync are timed separately, on
//! CLOCK_MONOTONIC, because a stall can sit in either: seed 003's worst call was 128 s spent
//! in write(), throttled in balance_dirty_pages, not in fsync.

use std::fs::File;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use crate::measure::{Recorder, RunClock, Sample};
use crate::observe::{Event, Observer, Unit};
use crate::params::Choice;
use crate::stop::Stop;
use crate::sync::SyncMethod;
use crate::sys::AlignedBuf;

/// Where each iteration writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Always at offset 0: after the first iteration, an overwrite of allocated blocks.
    Overwrite,
    /// At the end of the file: every iteration allocates and grows the file.
    Append,
}

impl Choice for Placement {
    const NAMES: &'static [&'static str] = &["overwrite", "append"];
    const ALL: &'static [Placement] = &[Placement::Overwrite, Placement::Append];
}

/// What the prober does, decided before it starts.
#[derive(Clone, Debug)]
pub(crate) struct ProberConfig {
    pub(crate) write_size: u64,
    pub(crate) method: SyncMethod,
    pub(crate) placement: Placement,
    pub(crate) sleep: Duration,
    pub(crate) iterations: u64,
    pub(crate) duration: Duration,
}

impl ProberConfig {
    /// The bytes the prober's file can grow to (for the free-space preflight). An appending
    /// prober with neither limit is bounded by the space check during the run instead.
    pub(crate) fn space_needed(&self) -> u64 {
        match self.placement {
            Placement::Overwrite => self.write_size,
            Placement::Append => {
                let by_duration = if self.duration.is_zero() || self.sleep.is_zero() {
                    u64::MAX
                } else {
                    (self.duration.as_nanos() / self.sleep.as_nanos()) as u64 + 1
                };
                let n = match (self.iterations, by_duration) {
                    (0, u64::MAX) => 1,
                    (0, d) => d,
                    (i, d) => i.min(d),
                };
                self.write_size.saturating_mul(n)
            }
        }
    }
}

/// One iteration as it happened.
#[derive(Debug)]
pub(crate) struct Iteration<'a> {
    pub(crate) write: &'a Sample,
    pub(crate) sync: Option<&'a Sample>,
}

pub(crate) struct Prober {
    config: ProberConfig,
    file: File,
    buf: AlignedBuf,
}

impl Prober {
    pub(crate) const FILE: &'static str = "fsync-tester.tst-file";

    pub(crate) fn open(dir: &Path, config: ProberConfig) -> Result<Prober> {
        let path = dir.join(Self::FILE);
        let file = config.method.open_in(&path, dir, "sync=direct")?;
        let buf = AlignedBuf::filled(config.write_size as usize, b'a');
        Ok(Prober { config, file, buf })
    }

    /// Runs iterations until `iterations` or `duration` is reached or `stop` is set, recording
    /// every call in `recorder` and calling `each` after every iteration. Returns how many
    /// iterations ran.
    pub(crate) fn run(
        &mut self,
        clock: &RunClock,
        stop: &Stop,
        recorder: &mut Recorder,
        observer: &mut dyn Observer,
        mut each: impl FnMut(&Iteration<'_>, &mut dyn Observer),
    ) -> u64 {
        let c = self.config.clone();
        let started = clock.elapsed();
        let (total, unit) = if c.iterations > 0 {
            (Some(c.iterations), Unit::Items)
        } else if !c.duration.is_zero() {
            (Some(c.duration.as_millis() as u64), Unit::Millis)
        } else {
            (None, Unit::Items)
        };
        observer.event(Event::Phase {
            name: "probing",
            total,
            unit,
        });
        let mut offset = 0u64;
        let mut done = 0u64;
        loop {
            if stop.is_set() {
                break;
            }
            // The write, then the sync, each timed on its own.
            let buf = self.buf.as_slice();
            let (written, t_w, lat_w) = clock.time(|| c.method.write(&self.file, buf, offset));
            let write = recorder.record(c.method.write_op(), t_w, lat_w, c.write_size, &written);
            observer.event(Event::Sample(&write));
            let sync = c.method.sync_op().and_then(|op| {
                let (synced, t_s, lat_s) = clock.time(|| c.method.sync(&self.file, offset, c.write_size));
                let synced = synced?;
                let bytes = if c.method == SyncMethod::SyncFileRange {
                    c.write_size
                } else {
                    0
                };
                Some(recorder.record(op, t_s, lat_s, bytes, &synced))
            });
            if let Some(s) = &sync {
                observer.event(Event::Sample(s));
            }
            each(
                &Iteration {
                    write: &write,
                    sync: sync.as_ref(),
                },
                observer,
            );
            done += 1;
            if c.placement == Placement::Append && written.is_ok() {
                offset += c.write_size;
            }

            // Stop conditions, checked after the sync as the seed does, then the pause.
            let elapsed = clock.elapsed() - started;
            observer.event(Event::Progress {
                done: if unit == Unit::Millis {
                    elapsed.as_millis() as u64
                } else {
                    done
                },
            });
            let out_of_time = !c.duration.is_zero() && elapsed >= c.duration;
            if (c.iterations > 0 && done >= c.iterations) || out_of_time {
                break;
            }
            let pause = if c.duration.is_zero() {
                c.sleep
            } else {
                c.sleep.min(c.duration - elapsed)
            };
            if !pause.is_zero() && !stop.sleep(pause) {
                break;
            }
            if !c.duration.is_zero() && clock.elapsed() - started >= c.duration {
                break;
            }
        }
        done
    }
}
