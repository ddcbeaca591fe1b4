//! fsynclab reproduces, measures and explains fsync latency on Linux.
//!
//! A run composes *roles* — a foreground [`role::prober`] timing every write and sync
//! call, a background [`role::writer`] loading writeback — into a named [`scenario`] that
//! reproduces one of the seed experiments. The [`engine`] runs it in a private work
//! directory ([`testbed`]), [`measure`] turns calls into HDR-histogram percentiles and
//! per-second throughput, [`environment`] fingerprints where it ran, and a [`report`]
//! exporter prints the [`result`].
//!
//! Modules, from the outside in:
//! - [`cli`], [`app`]: the command line and what each subcommand does
//! - [`engine`]: one run, phase by phase; [`result`]: its versioned JSON shape
//! - [`suite`]: every scenario in one go, with a summary
//! - [`scenario`]: one file per experiment; [`params`]: their typed `--set` parameters
//! - [`role`]: prober, writers, the stop signal; [`sync`]: the sync methods
//! - [`measure`]: clock, samples, histograms, throughput; [`observe`]: live events
//! - [`testbed`], [`environment`], [`sys`]: where I/O goes, what it is, the system calls
//! - [`report`]: text, seed and json exporters; [`units`], [`error`]: shared vocabulary
//! - [`compare`]: run-level figures, statistics, verdicts and the matrix table
//! - [`store`]: the results store (SQLite), with the compact sample codec; `record`: runs
//!   recorded in it as they finish
//! - [`html`]: the self-contained HTML report (timelines, CDFs, the matrix table)
//! - `matrix`: configurations crossed and repeated, with seed 002's table; `review`: the
//!   `runs`, `show`, `export`, `compare` and `report` commands over stored results

mod app;
pub mod cli;
pub mod compare;
mod engine;
pub mod environment;
pub mod error;
pub mod html;
mod matrix;
pub mod measure;
mod observe;
mod params;
mod record;
mod report;
mod result;
mod review;
mod role;
mod scenario;
pub mod store;
mod suite;
mod sync;
pub mod sys;
pub mod testbed;
mod units;

pub use app::run;
pub use error::exit_status;
