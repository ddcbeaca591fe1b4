//! The `background` parameter every prober scenario takes (`none`, `stream`, `random`) and
//! the glue that sets the chosen writer up, starts it, and stops it.

use anyhow::Result;

use super::Context;
use crate::measure::RunClock;
use crate::params::{Kind, ParamSpec, Params};
use crate::role::prober::ProberConfig;
use crate::role::stop::Stop;
use crate::role::writer::{
    Background, BackgroundReport, RandomWriter, StreamWriter, Writer, RANDOM_PARAMS, STREAM_PARAMS,
};
use crate::units::{human_size, Bytes};

pub const KINDS: &[&str] = &["none", "stream", "random"];

/// The `background` parameter and the parameters of both writers.
pub fn params(default: &'static str) -> Vec<ParamSpec> {
    let mut specs = vec![ParamSpec::new(
        "background",
        Kind::Choice(KINDS),
        default,
        "what loads writeback while the prober runs: none, stream (sequential overwrite) or random (4 KiB random writes)",
    )];
    specs.extend(STREAM_PARAMS);
    specs.extend(RANDOM_PARAMS);
    specs
}

/// Bytes of the background writer's file.
pub fn space_needed(params: &Params) -> u64 {
    match params.text("background") {
        "stream" => params.size("file_size").get(),
        "random" => params.size("random_file_size").get(),
        _ => 0,
    }
}

/// Checks the writer's sizes.
pub fn validate(params: &Params) -> Result<()> {
    use crate::error::Usage;
    if params.text("background") == "stream" {
        crate::environment::check_fits_in_memory("chunk", params.size("chunk").get())?;
    }
    match params.text("background") {
        "stream" if params.size("chunk").get() == 0 || params.size("file_size").get() == 0 => {
            Err(Usage("--set chunk and file_size must be larger than 0 for background=stream".into()).into())
        }
        "random" if params.size("random_file_size").get() < 2 * Bytes::KIB * 4 => {
            Err(Usage("--set random_file_size must be at least 8k for background=random".into()).into())
        }
        _ => Ok(()),
    }
}

/// Checks of a scenario that runs the prober against this background.
pub fn validate_with_prober(params: &Params) -> Result<()> {
    ProberConfig::from_params(params)?;
    validate(params)
}

/// Bytes of the prober's file and the background writer's file.
pub fn space_with_prober(params: &Params) -> u64 {
    let prober = ProberConfig::from_params(params).map(|c| c.space_needed()).unwrap_or(0);
    prober + space_needed(params)
}

/// Opens the chosen writer and, for `random`, writes its file out first (printing the
/// seed's setup lines). `None` for `background=none`, or when stopped during setup.
pub fn prepare(ctx: &mut Context<'_>, params: &Params) -> Result<Option<Box<dyn Writer>>> {
    Ok(match params.text("background") {
        "stream" => Some(Box::new(StreamWriter::open(ctx.dir, params)?)),
        "random" => {
            let mut w = RandomWriter::open(ctx.dir, params)?;
            if !w.set_up(ctx.stop, ctx.observer)? {
                return Ok(None);
            }
            Some(Box::new(w))
        }
        _ => None,
    })
}

/// A note for the result when the writer's file is smaller than the dirty background
/// threshold: then the kernel starts writeback only when data expires
/// (`dirty_expire_centisecs`), and a short run barely loads the disk. Computed from this
/// machine's memory and sysctls, so the reader knows what the figures do and do not show.
pub fn pressure_note(params: &Params) -> Option<String> {
    let (what, param, size) = match params.text("background") {
        "stream" => ("stream writer's file", "file_size", params.size("file_size").get()),
        "random" => (
            "random writer's file",
            "random_file_size",
            params.size("random_file_size").get(),
        ),
        _ => return None,
    };
    let threshold = crate::environment::current_dirty_background_threshold()?;
    (size < threshold).then(|| {
        format!(
            "note: the {what} ({}) is smaller than the dirty background threshold (about {}), so writeback starts \
             only as dirty data expires and this run loads the disk lightly; for the seed's pressure raise --set {param} \
             above it, or lower vm.dirty_background_ratio",
            human_size(size),
            human_size(threshold)
        )
    })
}

/// A started background writer, or none.
pub struct Running(Option<Background>);

impl Running {
    pub fn start(writer: Option<Box<dyn Writer>>, clock: RunClock, stop: &Stop) -> Result<Running> {
        Ok(Running(writer.map(|w| Background::start(w, clock, stop)).transpose()?))
    }

    pub fn stop(self) -> Option<BackgroundReport> {
        self.0.map(Background::stop_and_join)
    }
}

/// overwrite.c's final report: `1.984 GB written in 82.75 (24 MB/s)`. Its source is lost;
/// binary units with the rate truncated reproduce both posted lines (1.984 GB in 82.75 s →
/// 24 MB/s, in 93.77 s → 21 MB/s).
pub fn seed_stream_line(r: &BackgroundReport) -> String {
    let gb = r.bytes as f64 / Bytes::GIB as f64;
    format!("{:.3} GB written in {:.2} ({} MB/s)", gb, r.seconds, r.mb_per_s as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_line_reproduces_the_posted_figures() {
        let bytes = (1.984 * Bytes::GIB as f64) as u64;
        let mut r = BackgroundReport {
            bytes,
            seconds: 82.75,
            ..Default::default()
        };
        r.mb_per_s = bytes as f64 / Bytes::MIB as f64 / r.seconds;
        assert_eq!(seed_stream_line(&r), "1.984 GB written in 82.75 (24 MB/s)");
        r.seconds = 93.77;
        r.mb_per_s = bytes as f64 / Bytes::MIB as f64 / r.seconds;
        assert_eq!(seed_stream_line(&r), "1.984 GB written in 93.77 (21 MB/s)");
    }
}
