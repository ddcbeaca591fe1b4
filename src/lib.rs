//! fsynclab reproduces, measures and explains fsync latency on Linux.
//!
//! A `scenario` reproduces one seed experiment: it reads its `--set` parameters once into
//! a typed plan, composes *roles* (a foreground prober timing every write and sync call,
//! background writers loading writeback, pools of worker threads), and returns samples plus
//! typed details. The engine (`run`) runs a plan on a `testbed` (a directory, or a scratch
//! filesystem on an emulated disk) in a private work directory; `measure` turns calls into
//! HDR-histogram percentiles; `environment` fingerprints where it ran; the `result` keeps
//! it all; a `report` exporter prints it, now or later (`fsynclab show`).
//!
//! The modules, tier by tier from the top (`tests/layers.rs` holds the same list: a module
//! imports its own tier or lower, and no two modules, nor two files of a folder, import
//! each other in a cycle; docs/layout.md names every one):
//! - dispatch: `app`, each subcommand to its home
//! - commands: `commands`, one home per subcommand (run, load and probe, list,
//!   list-devices, suite, exec, matrix, reproduce, runs, show, export, compare, report,
//!   explain, store copy, cleanup): each reads its arguments and prints
//! - command line: `cli`, the clap definitions
//! - domain: the work commands ask for, one module each, below the command line: `farm`,
//!   where a matrix's runs are made (here, or by a scheduler behind the `Farm` trait: Slurm
//!   with its client, Kubernetes, each with its own options)
//! - run: `run`, the one way to run: the session (signals watched, testbed opened and
//!   undone), the engine (a measurement, phase by phase), the one recorded cell and its
//!   progress
//! - output: `html`, the page `fsynclab report` writes; `report`, the text, seed and json
//!   exporters and live progress; `recording`, runs stored as they finish
//! - results: `matrix`, configurations crossed and repeated, the claims that share its runs,
//!   seed 002's table; `store`, the results store (SQLite or PostgreSQL, with the compact
//!   sample codec); `compare`, statistics and verdicts; `result`, the versioned JSON shape
//! - experiments: `scenario`, a file or folder per experiment; `explain`, a kernel trace of
//!   the measured threads, slow calls split into causes, the writeback timeline; `role`,
//!   prober, writers, worker pool, group commit, file filling; `sync`, the sync methods;
//!   `observe`, the events a run emits while it goes; `testbed` and `environment`, where I/O
//!   goes and what it is; `signals`, the signals that stop a run, and `stop`, the stop they
//!   set, which every role checks; `child`, the external programs fsynclab waits for, each
//!   in its own process group under a stated limit
//! - vocabulary: `measure` (clock, operation kinds, samples, histograms, throughput, small
//!   statistics), `params` (`--set` as declared and parsed), `error`, `rng` (the one random
//!   generator), `named_file` (files users name with `-o`, written as `cp` and `tee` would,
//!   never over the store)
//! - system: `kernel`, /proc and /sys parsed, one parser per file; `sys`, the checked system
//!   calls; `units`

// Output goes through the commands (what a user asked to see) and `report` (exporters,
// `report::print`); a line on stderr through `note!`. Nothing below prints by itself.
#![deny(clippy::print_stdout, clippy::print_stderr)]

/// A line on stderr that cannot panic: `eprintln!` panics when stderr is gone (a closed
/// terminal, a dropped ssh session), which would skip the teardown that must follow.
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        // One write for the whole line: stderr is unbuffered, and `writeln!` on it writes
        // each piece of the format apart, between which another writer on the same stream
        // (a guest's kernel console, which QEMU merges with the command's stderr) can put
        // its own line, cutting ours in two.
        let mut line = format!($($arg)*);
        line.push('\n');
        let _ = std::io::stderr().write_all(line.as_bytes());
    }};
}

#[allow(clippy::print_stdout)] // the dispatch and the commands print what they were asked for
mod app;
mod child;
pub mod cli;
#[allow(clippy::print_stdout)]
mod commands;
pub mod compare;
pub mod environment;
pub mod error;
mod explain;
mod farm;
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
