//! A pool of worker threads for one timed step (fsync-tps' thread counts, rndwr's workers):
//! every worker runs to its own end, while the calling thread reports the step's elapsed
//! time as progress. Each worker returns what it recorded; merging is the caller's.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use crate::observe::{Event, Observer};

/// How often the calling thread reports progress while the workers run.
const POLL: Duration = Duration::from_millis(50);

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
    let results: Vec<Option<T>> = std::thread::scope(|s| {
        let work = &work;
        let handles: Vec<_> = (0..workers).map(|i| s.spawn(move || work(i))).collect();
        while handles.iter().any(|h| !h.is_finished()) {
            std::thread::sleep(POLL);
            observer.event(Event::Progress {
                done: started.elapsed().as_millis() as u64,
            });
        }
        handles.into_iter().map(|h| h.join().ok()).collect()
    });
    if results.iter().any(Option::is_none) {
        bail!("a {what} worker panicked");
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
        assert_eq!(err.to_string(), "a test worker panicked");
    }
}
