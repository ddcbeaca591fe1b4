//! fsynclab reproduces, measures and explains fsync latency on Linux.
//!
//! A `scenario` reproduces one seed experiment: it reads its `--set` parameters once into
//! a typed plan, composes *roles* (a foreground prober timing every write and sync call,
//! background writers loading writeback, pools of worker threads), and returns samples plus
//! typed details. The `engine` runs a plan on a `testbed` (a directory, or a scratch
//! filesystem on an emulated disk) in a private work directory; `measure` turns calls into
//! HDR-histogram percentiles; `environment` fingerprints where it ran; the `result` keeps
//! it all; a `report` exporter prints it, now or later (`fsynclab show`).
//!
//! Modules, from the outside in:
//! - `cli` (the command line as typed), `app` (what each subcommand does)
//! - `session`: the one way to run (signals watched, testbed opened, the `engine` run on
//!   it, the testbed undone); `engine`: a measurement, phase by phase; `suite`: every
//!   scenario in one go; `exec`: any program on the testbed
//! - `signals`: the signals that stop a run; `stop`: the stop they set, which every role
//!   checks
//! - `scenario`: a file or folder per experiment; `params`: `--set` as declared and parsed
//! - `role`: prober, writers, worker pool, group commit, file filling
//! - `sync`: the sync methods; `sys`: the checked system calls
//! - `measure`: clock, operation kinds, samples, histograms, throughput, small statistics
//! - `testbed`, `environment`: where I/O goes, and what it is; `kernel`: /proc and /sys
//!   parsed, one parser per file
//! - `result`: the versioned JSON shape; `report`: text, seed and json exporters, live
//!   progress; `observe`: the events a run emits while it goes
//! - `compare`, `store`, `html`: statistics and verdicts, the results store (SQLite or
//!   PostgreSQL, with the compact sample codec), the HTML page `fsynclab report` writes;
//!   `record`: runs stored as they finish; `stores`: `store copy` between stores
//! - `matrix`: configurations crossed and repeated, with seed 002's table, on this host or a
//!   farm's scheduler (Slurm, Kubernetes); `review`: the
//!   `runs`, `show`, `export`, `compare` and `report` commands over stored results
//! - `reproduce`: every seed's finding run again on the configuration of its era, the
//!   published figure beside the measured one, and a verdict with why
//! - `explain`: a kernel trace of the measured threads, slow calls split into causes, the
//!   writeback timeline
//! - `output`: files users name (`-o`), written as `cp` and `tee` would, never over the store
//! - `units`, `error`, `rng`: shared vocabulary, the one random generator

/// A line on stderr that cannot panic: `eprintln!` panics when stderr is gone (a closed
/// terminal, a dropped ssh session), which would skip the teardown that must follow.
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod app;
pub mod cli;
mod commands;
pub mod compare;
pub mod environment;
pub mod error;
mod explain;
pub mod html;
mod kernel;
mod matrix;
pub mod measure;
mod named_file;
mod observe;
mod params;
mod recording;
mod report;
mod result;
mod rng;
mod role;
mod run;
mod scenario;
mod signals;
mod stop;
pub mod store;
mod sync;
pub mod sys;
pub mod testbed;
mod units;

pub use app::run;
pub use error::exit_status;
