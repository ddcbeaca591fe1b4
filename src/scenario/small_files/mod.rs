//! Seed 001 (Moyer/Goyal, "ext3/4: enhance fsync performance when using cfq", April 2010):
//! small files written and fsynced, the workload where the I/O scheduler decides the rate.
//! Deadline beat CFQ by ~5x on 64 KB files and ~10% on 8 MB ones, because the fsyncing
//! process held its time slice while the journal thread waited to commit.
//!
//! Two modes, each the benchmark of the cover letters:
//! - `iozone`: `iozone -s 64 -e -f FILE -i 0` — for each file size, write a new file in
//!   `record`-sized writes and then rewrite it, each pass timed *with* its fsync (`-e`) but
//!   not its open or close (iozone's `-c` would add the close); KB/s averaged over `runs`.
//! - `fs_mark`: `fs_mark -S 1 -D 100 -N 1000 -d DIR -s 65536 -t 1 -w 4096` — create `files`
//!   files of `file_size` in `record`-sized writes, fsync each before close, `files_per_dir`
//!   per subdirectory across `dirs` subdirectories; files/s and the fsync distribution.
//!
//! `--format seed` prints the two programs' own shapes:
//! ```text
//!               KB  reclen   write rewrite
//!               64       4    1452    1788
//! FSUse%        Count         Size    Files/sec     App Overhead
//!     14         1000        65536         85.1            23519
//! ```
//! (iozone: one row per file size and run, KB/s; fs_mark: one row per run, App Overhead in
//! microseconds spent outside the create/write/fsync/close calls.)
//!
//! The figures belong to the device's I/O scheduler as much as to the filesystem, so the
//! report names the scheduler it ran under.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use super::{Context, Outcome, Plan, Scenario};
use crate::environment::check_fits_in_memory;
use crate::error::Usage;
use crate::measure::Recorder;
use crate::params::{scenario_params, Choice, Params, ScenarioParams};
use crate::units::{format_size, Bytes};

mod details;
mod fs_mark;
mod iozone;

pub(crate) use details::Details;

scenario_params! {
    /// The scenario's parameters, as read.
    struct SmallFilesParams {
        /// iozone (write+rewrite KB/s per file size), fs_mark (files/s), or both
        mode: Mode = choice("both"),
        /// iozone: file sizes, each written then rewritten
        sizes: Vec<Bytes> = size_list("4k,64k,1M,8M,16M").seed("64k"),
        /// iozone: passes per file size, averaged
        runs: u64 = count("5").seed("5"),
        /// bytes per write(2): iozone's -r, fs_mark's -w
        record: Bytes = size("4k").seed("4k"),
        /// fs_mark: files created (-n)
        files: u64 = count("300").seed("1000"),
        /// fs_mark: size of each file (-s)
        file_size: Bytes = size("64k").seed("64k"),
        /// fs_mark: subdirectories (-D)
        dirs: u64 = count("10").seed("100"),
        /// fs_mark: files in a subdirectory before moving to the next (-N)
        files_per_dir: u64 = count("30").seed("1000"),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Iozone,
    FsMark,
    Both,
}

impl Choice for Mode {
    const NAMES: &'static [&'static str] = &["iozone", "fs_mark", "both"];
    const ALL: &'static [Mode] = &[Mode::Iozone, Mode::FsMark, Mode::Both];
}

pub(crate) static SMALL_FILES: Scenario = Scenario {
    name: "small-files",
    purpose: "write+fsync rate of small files (iozone -e -i 0, fs_mark -S 1), the figure an I/O scheduler changes",
    seed: "001 (Moyer/Goyal, CFQ yield for fsync, 2010)",
    params: SmallFilesParams::specs,
    plan: |p| Ok(Box::new(Config::from_params(p)?)),
};

/// The validated parameters.
#[derive(Clone, Debug)]
struct Config {
    iozone: bool,
    fs_mark: bool,
    sizes: Vec<u64>,
    runs: u64,
    record: u64,
    files: u64,
    file_size: u64,
    dirs: u64,
    files_per_dir: u64,
}

impl Config {
    fn from_params(p: &Params) -> Result<Config> {
        let p = SmallFilesParams::from_params(p)?;
        check_fits_in_memory(SmallFilesParams::record.name(), p.record.get())?;
        let c = Config {
            iozone: p.mode != Mode::FsMark,
            fs_mark: p.mode != Mode::Iozone,
            sizes: p.sizes.iter().map(|b| b.get()).collect(),
            runs: p.runs,
            record: p.record.get(),
            files: p.files,
            file_size: p.file_size.get(),
            dirs: p.dirs,
            files_per_dir: p.files_per_dir,
        };
        let usage = |m: String| -> Result<Config> { Err(Usage(m).into()) };
        if c.record == 0 {
            return usage("--set record=0: each write must be at least one byte, e.g. record=4k".into());
        }
        if c.iozone {
            if c.runs == 0 {
                return usage("--set runs=0: iozone mode needs at least one run, e.g. runs=5".into());
            }
            if let Some(small) = c.sizes.iter().find(|s| **s < c.record) {
                return usage(format!(
                    "--set record={}: larger than the file size {}; lower record or drop that size from sizes",
                    format_size(Bytes(c.record)),
                    format_size(Bytes(*small))
                ));
            }
        }
        if c.fs_mark {
            if c.files == 0 {
                return usage("--set files=0: fs_mark mode needs at least one file, e.g. files=300".into());
            }
            if c.file_size == 0 {
                return usage("--set file_size=0: fs_mark files must hold at least one byte".into());
            }
            if c.record > c.file_size {
                return usage(format!(
                    "--set record={}: larger than file_size={}; lower record or raise file_size",
                    format_size(Bytes(c.record)),
                    format_size(Bytes(c.file_size))
                ));
            }
            if c.dirs == 0 || c.files_per_dir == 0 {
                return usage("--set dirs and files_per_dir must be at least 1".into());
            }
        }
        Ok(c)
    }
}

impl Plan for Config {
    fn space_needed(&self) -> u64 {
        let iozone = if self.iozone {
            self.sizes.iter().copied().max().unwrap_or(0)
        } else {
            0
        };
        // Blocks round each small file up; count a 4 KiB block per file on top.
        let fs_mark = if self.fs_mark {
            self.files.saturating_mul(self.file_size + 4096)
        } else {
            0
        };
        iozone.max(fs_mark)
    }

    fn space_hint(&self) -> &'static str {
        "lower --set sizes, files or file_size"
    }

    fn expected_duration(&self) -> Option<Duration> {
        None
    }

    fn run(&self, ctx: &mut Context<'_>) -> Result<Outcome> {
        let mut recorder = Recorder::new();
        let mut details = Details {
            scheduler: scheduler_of(ctx.dir),
            runs: self.runs,
            iozone: Vec::new(),
            fs_mark: None,
        };
        if self.iozone {
            details.iozone = iozone::run(ctx, self, &mut recorder)?;
        }
        if self.fs_mark && !ctx.stop.is_set() {
            details.fs_mark = Some(fs_mark::run(ctx, self, &mut recorder)?);
        }
        Ok(Outcome {
            recorder,
            background: None,
            details: super::Details::SmallFiles(details),
        })
    }
}

/// The scheduler of the device under `dir`, as the report names it (`mq-deadline on vda`).
fn scheduler_of(dir: &Path) -> String {
    match crate::environment::fingerprint(dir).device {
        Some(d) => format!("{} on {}", d.scheduler.as_deref().unwrap_or("unknown"), d.name),
        None => "unknown (no block device)".to_string(),
    }
}

#[cfg(test)]
mod params_tests {
    use super::*;

    #[test]
    fn every_parameter_declared_is_read_and_every_one_read_is_declared() {
        crate::params::assert_declared_and_read::<SmallFilesParams>(&SMALL_FILES.params());
    }
}
