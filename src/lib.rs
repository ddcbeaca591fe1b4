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
//! - [`explain`]: kernel trace, per-call attribution of slow calls, writeback timeline
//! - [`report`]: text, seed and json exporters; [`units`], [`error`]: shared vocabulary

pub mod app;
pub mod cli;
pub mod engine;
pub mod environment;
pub mod error;
pub mod explain;
pub mod measure;
pub mod observe;
pub mod params;
pub mod report;
pub mod result;
pub mod role;
pub mod scenario;
pub mod suite;
pub mod sync;
pub mod sys;
pub mod testbed;
pub mod units;
