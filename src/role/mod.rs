//! The moving parts scenarios compose: the foreground [`prober::Prober`] that times sync
//! calls, the background [`writer`]s that load writeback, the [`pool`] of worker threads
//! that many-thread scenarios run, [`group_commit`] (one sync shared by many
//! transactions), [`fill`] (writing files out before measuring). They all end together when
//! the run's [`crate::stop::Stop`] is set (work done, Ctrl-C or SIGTERM).

pub(crate) mod fill;
pub(crate) mod group_commit;
pub(crate) mod pool;
pub(crate) mod prober;
pub(crate) mod writer;
