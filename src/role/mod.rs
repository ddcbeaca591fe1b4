//! The moving parts scenarios compose: the foreground [`prober::Prober`] that times sync
//! calls, the background [`writer`]s that load writeback, and the [`stop::Stop`] signal that
//! ends them all together (prober done, Ctrl-C or SIGTERM).

pub mod prober;
pub mod stop;
pub mod writer;
