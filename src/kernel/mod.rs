//! What the kernel says in /proc and /sys, read and parsed in one place: one parser per
//! file, each following the kernel document it links and saying which fields it ignores;
//! fixture files in tests/fixtures drive their tests. Nothing here changes the machine
//! (the testbed does that) or decides what a figure means (the environment and the
//! explanation do).
//!
//! - [`meminfo`]: `/proc/meminfo`, memory and the dirty and writeback pages
//! - [`mountinfo`]: `/proc/self/mountinfo`, what is mounted where

pub(crate) mod meminfo;
pub(crate) mod mountinfo;

pub(crate) use meminfo::Meminfo;
pub(crate) use mountinfo::{mount_of, mounts, MountInfo};
