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
//! Modules, from the outside in (the tiers `tests/layers.rs` checks: a module imports its
//! own tier or lower, never higher, and no two modules import each other in a cycle):
//! - `app`: the dispatch; `cli`: the command line as typed; `commands`: one home per
//!   subcommand (`run`/`load`/`probe`, `list`, `list-devices`, `suite`, `exec`, `matrix` with
//!   its farm schedulers, `reproduce`, `runs`, `show`, `export`, `compare`, `report`,
//!   `explain`, `store copy`, `cleanup`)
//! - `run`: the one way to run: the session (signals watched, testbed opened and undone),
//!   the engine (a measurement, phase by phase), the one recorded cell
//! - `recording`: runs stored as they finish; `named_file`: files users name (`-o`), written
//!   as `cp` and `tee` would, never over the store
//! - `html`, `report`: the HTML page `fsynclab report` writes; text, seed and json
//!   exporters, live progress
//! - `matrix`: configurations crossed and repeated, with seed 002's table, and the claims
//!   that share its runs; `store`: the results store (SQLite or PostgreSQL, with the compact
//!   sample codec); `compare`: statistics and verdicts
//! - `result`: the versioned JSON shape; `scenario`: a file or folder per experiment;
//!   `explain`: a kernel trace of the measured threads, slow calls split into causes, the
//!   writeback timeline
//! - `role`: prober, writers, worker pool, group commit, file filling; `sync`: the sync
//!   methods; `observe`: the events a run emits while it goes
//! - `testbed`, `environment`: where I/O goes, and what it is; `signals`: the signals that
//!   stop a run; `stop`: the stop they set, which every role checks
//! - `measure`: clock, operation kinds, samples, histograms, throughput, small statistics;
//!   `params`: `--set` as declared and parsed
//! - `kernel`: /proc and /sys parsed, one parser per file; `sys`: the checked system calls;
//!   `units`, `error`, `rng`: shared vocabulary, the one random generator

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
