#![allow(dead_code)] // wired into a scenario in the next step
//! `powercut`: what an fsync buys. An application pattern writes records and acknowledges
//! each once it is durable by the chosen sync method ([`pattern`]); the emulated disk loses
//! power at a chosen moment, the filesystem recovers from the media as the drive left it,
//! and every acknowledged record is judged intact, lost or torn ([`verdict`]).

pub(crate) mod pattern;
pub(crate) mod record;
pub(crate) mod verdict;
