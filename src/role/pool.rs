//! A pool of worker threads for one timed step (fsync-tps' thread counts, rndwr's workers):
//! every worker runs to its own end, while the calling thread reports the step's elapsed
//! time as progress. Each worker returns what it recorded; merging is the caller's.
//!
//! The workers are named [`worker_thread_name`], one name for every worker of this
//! process, so that `--explain` can follow threads made after its tracer started by their
//! name alone (the kernel's `comm`), and no other process's.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use crate::observe::{Event, Observer};

/// How often the calling thread reports progress while the workers run.
const POLL: Duration = Duration::from_millis(50);

/// The name of every worker thread of this process: `fsl-PID-w` (15 bytes at most, as the
/// kernel keeps a thread's name).
pub(crate) fn worker_thread_name() -> String {
    format!("fsl-{}-w", std::process::id())
}

/// Runs `work(0..workers)` on `workers` scoped threads and returns their results in order.
/// Progress events carry the milliseconds since `started`. A worker that panicked fails
/// the step, named by `what`.
pub(crate) fn run_workers<T: Send>(
    what: &str,
    workers: usize,
    started: Instant,
    observer: &mut dyn Observer,
    work: impl Fn(usize) -> T + Sync,
) -> Result<Vec<T>> {
    let name = worker_thread_name();
    let results: Vec<Option<T>> = std::thread::scope(|s| {
        let work = &work;
        let mut handles = Vec::with_capacity(workers);
        for i in 0..workers {
            match std::thread::Builder::new()
                .name(name.clone())
                .spawn_scoped(s, move || work(i))
            {
                Ok(h) => handles.push(Some(h)),
                Err(e) => {
                    note!("fsynclab: cannot start {what} worker {i}: {e}");
                    handles.push(None);
                }
            }
        }
        let running = || handles.iter().flatten().any(|h| !h.is_finished());
        while running() {
            std::thread::sleep(POLL);
            observer.event(Event::Progress {
                done: started.elapsed().as_millis() as u64,
            });
        }
        handles.into_iter().map(|h| h.and_then(|h| h.join().ok())).collect()
    });
    if results.iter().any(Option::is_none) {
        bail!("a {what} worker panicked or could not start");
    }
    Ok(results.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Silent;
    impl Observer for Silent {
        fn event(&mut self, _: Event<'_>) {}
    }

    #[test]
    fn results_come_back_in_worker_order() {
        let out = run_workers("test", 4, Instant::now(), &mut Silent, |i| i * 10).unwrap();
        assert_eq!(out, vec![0, 10, 20, 30]);
    }

    #[test]
    fn a_panicking_worker_fails_the_step() {
        let err = run_workers("test", 2, Instant::now(), &mut Silent, |i| {
            if i == 1 {
                panic!("worker 1");
            }
            i
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "a test worker panicked or could not start");
    }

    /// `--explain` follows the workers by this name: it is theirs, and fits the kernel's 15.
    #[test]
    fn workers_carry_the_pools_name() {
        let names = run_workers("test", 2, Instant::now(), &mut Silent, |_| {
            std::thread::current().name().map(str::to_string)
        })
        .unwrap();
        let name = worker_thread_name();
        assert_eq!(names, [Some(name.clone()), Some(name.clone())]);
        assert!(name.len() <= 15 && name.contains(&std::process::id().to_string()));
    }
}
