//! The `background` parameter every fsync-tester scenario takes (`none`, `stream`,
//! `random`), the writers' own parameters, and the glue that sets the chosen writer up,
//! starts it and stops it.

use std::fmt;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::Context;
use crate::error::Usage;
use crate::measure::RunClock;
use crate::params::{Choice, Param, ParamError, ParamReader, ParamSpec, ScenarioParams};
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

/// The `background` parameter; its default is each scenario's.
pub(crate) const BACKGROUND: Param<BackgroundKind> = Param::choice(
    "background",
    "none",
    "what loads writeback while the prober runs: none, stream (sequential overwrite) or random (4 KiB random writes)",
);
pub(crate) const FILE_SIZE: Param<Bytes> = Param::size(
    "file_size",
    "4G",
    "stream writer: size of the file it overwrites sequentially, looping (overwrite.c's size is not known)",
);
pub(crate) const CHUNK: Param<Bytes> = Param::size(
    "chunk",
    "1M",
    "stream writer: bytes per write (overwrite.c's chunk is not known)",
);
pub(crate) const RANDOM_FILE_SIZE: Param<Bytes> = Param::size(
    "random_file_size",
    "512M",
    "random writer: size of the preallocated file it writes 4 KiB blocks into",
)
.seed("8G");
pub(crate) const SEED: Param<u64> = Param::count(
    "seed",
    "1",
    "random writer: seed of the offset generator (fixed, so runs are repeatable)",
);

/// The stream writer's parameters.
pub(crate) fn stream_params() -> [ParamSpec; 2] {
    [FILE_SIZE.spec, CHUNK.spec]
}

/// The random writer's parameters.
pub(crate) fn random_params() -> [ParamSpec; 2] {
    [RANDOM_FILE_SIZE.spec, SEED.spec]
}

/// The `background` parameter and the parameters of both writers.
pub(crate) fn params(default: &'static str) -> Vec<ParamSpec> {
    let mut specs = vec![BACKGROUND.default(default).spec];
    specs.extend(stream_params());
    specs.extend(random_params());
    specs
}

/// The stream writer's parameters, as read.
pub(crate) fn read_stream(r: &mut ParamReader<'_>) -> Result<StreamConfig, ParamError> {
    Ok(StreamConfig {
        file_size: r.get(&FILE_SIZE)?.get(),
        chunk: r.get(&CHUNK)?.get(),
    })
}

/// The random writer's parameters, as read.
pub(crate) fn read_random(r: &mut ParamReader<'_>) -> Result<RandomConfig, ParamError> {
    Ok(RandomConfig {
        file_size: r.get(&RANDOM_FILE_SIZE)?.get(),
        seed: r.get(&SEED)?,
    })
}

/// The `background` parameter and both writers' parameters, as read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BackgroundParams {
    pub(crate) kind: BackgroundKind,
    pub(crate) stream: StreamConfig,
    pub(crate) random: RandomConfig,
}

impl ScenarioParams for BackgroundParams {
    fn read(r: &mut ParamReader<'_>) -> Result<Self, ParamError> {
        Ok(BackgroundParams {
            kind: r.get(&BACKGROUND)?,
            stream: read_stream(r)?,
            random: read_random(r)?,
        })
    }
}

/// The background writer of a run, decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BackgroundConfig {
    None,
    Stream(StreamConfig),
    Random(RandomConfig),
}

impl BackgroundConfig {
    /// The chosen writer, its parameters checked.
    pub(crate) fn from_params(p: &BackgroundParams) -> Result<BackgroundConfig> {
        match p.kind {
            BackgroundKind::None => Ok(BackgroundConfig::None),
            BackgroundKind::Stream => Self::stream(p.stream),
            BackgroundKind::Random => Self::random(p.random),
        }
    }

    /// The stream writer, its parameters checked.
    pub(crate) fn stream(config: StreamConfig) -> Result<BackgroundConfig> {
        if config.chunk == 0 || config.file_size == 0 {
            return Err(Usage("--set chunk and file_size must be larger than 0 for background=stream".into()).into());
        }
        crate::environment::check_fits_in_memory(CHUNK.name(), config.chunk)?;
        Ok(BackgroundConfig::Stream(config))
    }

    /// The random writer, its parameters checked.
    pub(crate) fn random(config: RandomConfig) -> Result<BackgroundConfig> {
        if config.file_size < 2 * 4 * Bytes::KIB {
            return Err(Usage("--set random_file_size must be at least 8k for background=random".into()).into());
        }
        Ok(BackgroundConfig::Random(config))
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
