//! The emulated disks' figures: the named profiles, each figure with where it comes from
//! (`builtin.rs`), the `KEY=VALUE` syntax that builds or adjusts one (`parse.rs`:
//! `--device hdd-5400,cache=0`, `--device flush=20ms,write=80M`), and how they read to a
//! user (`listing.rs`: `fsynclab list-devices`, the device's one-line description).

use super::model::{DiskFigures, Mechanics};

mod builtin;
mod listing;
mod parse;
mod today;

pub(crate) use listing::{describe, listing};
pub(crate) use parse::{fault_rules, parse, ParseError};

/// Every profile `--device NAME` knows, in the order `list-devices` prints them: the seeds'
/// era's ([`builtin`]), then today's drives ([`today`]).
fn named() -> impl Iterator<Item = &'static builtin::NamedProfile> {
    builtin::ERA.iter().chain(today::TODAY.iter())
}

/// The named profiles' names, in listing order.
pub(crate) fn names() -> Vec<&'static str> {
    named().map(|p| p.name).collect()
}

/// The keys `--device` takes (`cache`, `rpm`, ...).
pub(crate) fn key_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = parse::KEYS
        .iter()
        .filter_map(|(k, _)| k.split_once('=').map(|(name, _)| name))
        .collect();
    names.dedup();
    names
}

/// A profile's figures with its name as typed. (`pub` because the public
/// `testbed::request::ScratchOptions` carries one inside its `DeviceProfile`.)
#[derive(Clone, Debug, PartialEq)]
pub struct DiskProfile {
    pub(crate) name: String,
    pub(crate) figures: DiskFigures,
}

impl DiskProfile {
    /// Whether the loop device is marked rotational (schedulers and merging heuristics
    /// take it into account).
    pub(crate) fn rotational(&self) -> bool {
        matches!(self.figures.mechanics, Mechanics::Rotating { .. })
    }
}
