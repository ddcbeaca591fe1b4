//! The `background` parameter every fsync-tester scenario takes (`none`, `stream`,
//! `random`), the writers' own parameters, and the glue that sets the chosen writer up,
//! starts it and stops it.

use std::fmt;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::Context;
use crate::error::Usage;
use crate::measure::RunClock;
use crate::params::{Choice, Kind, ParamSpec, Params};
use crate::role::writer::{
    Background, BackgroundSummary, RandomConfig, RandomWriter, Setup, StreamConfig, StreamWriter, Writer, WriterKind,
};
use crate::stop::Stop;
use crate::units::{human_size, Bytes};

/// The `background` parameter's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BackgroundKind {
    None,
    Stream,
    Random,
}

impl Choice for BackgroundKind {
    const NAMES: &'static [&'static str] = &["none", "stream", "random"];
    const ALL: &'static [BackgroundKind] = &[BackgroundKind::None, BackgroundKind::Stream, BackgroundKind::Random];
}

/// The stream writer's parameters.
pub(crate) fn stream_params() -> [ParamSpec; 2] {
    [
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
    ]
}

/// The random writer's parameters.
pub(crate) fn random_params() -> [ParamSpec; 2] {
    [
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
    ]
}

/// The `background` parameter and the parameters of both writers.
pub(crate) fn params(default: &'static str) -> Vec<ParamSpec> {
    let mut specs = vec![ParamSpec::new(
        "background",
        Kind::Choice(BackgroundKind::NAMES),
        default,
        "what loads writeback while the prober runs: none, stream (sequential overwrite) or random (4 KiB random writes)",
    )];
    specs.extend(stream_params());
    specs.extend(random_params());
    specs
}

/// The background writer of a run, decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BackgroundConfig {
    None,
    Stream(StreamConfig),
    Random(RandomConfig),
}

impl BackgroundConfig {
    /// Reads `background` and the chosen writer's parameters.
    pub(crate) fn from_params(p: &Params) -> Result<BackgroundConfig> {
        Self::of_kind(p.choice(BackgroundKind::NAME)?, p)
    }

    /// Reads the parameters of the writer `kind` (the `load` subcommand names it itself).
    pub(crate) fn of_kind(kind: BackgroundKind, p: &Params) -> Result<BackgroundConfig> {
        Ok(match kind {
            BackgroundKind::None => BackgroundConfig::None,
            BackgroundKind::Stream => {
                let config = StreamConfig {
                    file_size: p.size("file_size").get(),
                    chunk: p.size("chunk").get(),
                };
                if config.chunk == 0 || config.file_size == 0 {
                    return Err(
                        Usage("--set chunk and file_size must be larger than 0 for background=stream".into()).into(),
                    );
                }
                crate::environment::check_fits_in_memory("chunk", config.chunk)?;
                BackgroundConfig::Stream(config)
            }
            BackgroundKind::Random => {
                let config = RandomConfig {
                    file_size: p.size("random_file_size").get(),
                    seed: p.count("seed"),
                };
                if config.file_size < 2 * 4 * Bytes::KIB {
                    return Err(
                        Usage("--set random_file_size must be at least 8k for background=random".into()).into(),
                    );
                }
                BackgroundConfig::Random(config)
            }
        })
    }

    pub(crate) fn kind(&self) -> Option<WriterKind> {
        match self {
            BackgroundConfig::None => None,
            BackgroundConfig::Stream(_) => Some(WriterKind::Stream),
            BackgroundConfig::Random(_) => Some(WriterKind::Random),
        }
    }

    /// Bytes of the writer's file.
    pub(crate) fn space_needed(&self) -> u64 {
        match self {
            BackgroundConfig::None => 0,
            BackgroundConfig::Stream(s) => s.file_size,
            BackgroundConfig::Random(r) => r.file_size,
        }
    }

    /// Opens the chosen writer and, for `random`, writes its file out first (printing the
    /// seed's setup lines). No writer for `none`, or when stopped during setup.
    pub(crate) fn prepare(&self, ctx: &mut Context<'_>) -> Result<(Option<Box<dyn Writer>>, Setup)> {
        Ok(match self {
            BackgroundConfig::None => (None, Setup::NotNeeded),
            BackgroundConfig::Stream(c) => (Some(Box::new(StreamWriter::open(ctx.dir, *c)?)), Setup::NotNeeded),
            BackgroundConfig::Random(c) => {
                let mut w = RandomWriter::open(ctx.dir, *c)?;
                match w.set_up(ctx.stop, ctx.observer)? {
                    Setup::Interrupted => (None, Setup::Interrupted),
                    setup => (Some(Box::new(w)), setup),
                }
            }
        })
    }

    /// A note for the result when the writer's file is smaller than the dirty background
    /// threshold, computed from this machine's memory and sysctls.
    pub(crate) fn pressure_note(&self) -> Option<PressureNote> {
        let (writer, file_size) = match self {
            BackgroundConfig::None => return None,
            BackgroundConfig::Stream(s) => (WriterKind::Stream, s.file_size),
            BackgroundConfig::Random(r) => (WriterKind::Random, r.file_size),
        };
        let threshold = crate::environment::current_dirty_background_threshold()?;
        (file_size < threshold).then_some(PressureNote {
            writer,
            file_size,
            threshold,
        })
    }
}

impl BackgroundKind {
    const NAME: &'static str = "background";
}

/// The background writer's file is smaller than the dirty background threshold: then the
/// kernel starts writeback only when data expires (`dirty_expire_centisecs`), and a short
/// run barely loads the disk. The reader must know what the figures do and do not show.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PressureNote {
    pub(crate) writer: WriterKind,
    pub(crate) file_size: u64,
    /// The dirty background threshold in bytes when the run started.
    pub(crate) threshold: u64,
}

impl fmt::Display for PressureNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let param = match self.writer {
            WriterKind::Stream => "file_size",
            WriterKind::Random => "random_file_size",
        };
        write!(
            f,
            "note: the {} writer's file ({}) is smaller than the dirty background threshold (about {}), so writeback starts \
             only as dirty data expires and this run loads the disk lightly; for the seed's pressure raise --set {param} \
             above it, or lower vm.dirty_background_ratio",
            self.writer,
            human_size(self.file_size),
            human_size(self.threshold)
        )
    }
}

/// A started background writer, or none.
pub(crate) struct Running(Option<Background>);

impl Running {
    pub(crate) fn start(writer: Option<Box<dyn Writer>>, clock: RunClock, stop: &Stop) -> Result<Running> {
        Ok(Running(writer.map(|w| Background::start(w, clock, stop)).transpose()?))
    }

    pub(crate) fn stop(self) -> Option<BackgroundSummary> {
        self.0.map(Background::stop_and_join)
    }
}

/// overwrite.c's final report: `1.984 GB written in 82.75 (24 MB/s)`. Its source is lost;
/// binary units with the rate truncated reproduce both posted lines (1.984 GB in 82.75 s →
/// 24 MB/s, in 93.77 s → 21 MB/s).
pub(crate) fn seed_stream_line(r: &BackgroundSummary) -> String {
    let gb = r.bytes as f64 / Bytes::GIB as f64;
    format!("{:.3} GB written in {:.2} ({} MB/s)", gb, r.seconds, r.mb_per_s as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_line_reproduces_the_posted_figures() {
        let bytes = (1.984 * Bytes::GIB as f64) as u64;
        let mut r = BackgroundSummary {
            bytes,
            seconds: 82.75,
            ..BackgroundSummary::empty(WriterKind::Stream)
        };
        r.mb_per_s = bytes as f64 / Bytes::MIB as f64 / r.seconds;
        assert_eq!(seed_stream_line(&r), "1.984 GB written in 82.75 (24 MB/s)");
        r.seconds = 93.77;
        r.mb_per_s = bytes as f64 / Bytes::MIB as f64 / r.seconds;
        assert_eq!(seed_stream_line(&r), "1.984 GB written in 93.77 (21 MB/s)");
    }

    #[test]
    fn the_pressure_note_reads_as_before() {
        let note = PressureNote {
            writer: WriterKind::Random,
            file_size: 512 << 20,
            threshold: 2 << 30,
        };
        assert!(note.to_string().starts_with(
            "note: the random writer's file (512.0 MiB) is smaller than the dirty background threshold (about 2.0 GiB)"
        ));
        assert!(note
            .to_string()
            .ends_with("raise --set random_file_size above it, or lower vm.dirty_background_ratio"));
    }
}
