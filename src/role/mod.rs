//! The moving parts scenarios compose: the foreground [`prober::Prober`] that times sync
//! calls, the background [`writer`]s that load writeback, the [`pool`] of worker threads
//! that many-thread scenarios run, [`group_commit`] (one sync shared by many
//! transactions), [`fill`] (writing files out before measuring), and the [`stop::Stop`]
//! signal that ends them all together (work done, Ctrl-C or SIGTERM).

pub mod fill;
pub mod group_commit;
pub mod pool;
pub mod prober;
pub mod stop;
pub mod writer;
