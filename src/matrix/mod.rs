//! A matrix as data: one scenario crossed over axes of configurations and repeated
//! ([`plan`], read from the command line or a TOML file, [`file`]), the claims that share
//! its runs between processes ([`claim`]), and seed 002's table of its results ([`table`]).
//! Where its runs are made (here, or by a farm's scheduler) is `farm`; the `fsynclab matrix`
//! command is in `commands::matrix`.

pub(crate) mod claim;
pub(crate) mod file;
pub(crate) mod plan;
pub(crate) mod table;

/// What the ids of `fsynclab reproduce`'s matrices begin with (`reproduce3`).
pub(crate) const REPRODUCTION_ID_PREFIX: &str = "reproduce";
