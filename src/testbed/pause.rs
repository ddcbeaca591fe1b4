//! A hook for the fault-injection test (tests/safety.rs), and nothing else: with
//! `FSYNCLAB_TEST_PAUSE=POINT` (or `POINT@N`, the N-th time), fsynclab stops when it passes
//! POINT, prints `fsynclab: test pause at POINT` on stderr, and waits to be killed. The test
//! then sends SIGKILL and checks that `fsynclab cleanup` leaves the machine as it was.
//!
//! The points: `recorded:KIND` once a step is in the state file but not yet done, `done:KIND`
//! once it is done, `undo:KIND` and `undone:KIND` around undoing it (KIND is `directory`,
//! `tmpfs`, `fuse`, `loop`, `mount`, `scheduler`, `rotational`, `sysctl`), `run:TOOL` while
//! an external tool (`mkfs.ext4`, `losetup`, `mount`, `umount`) runs, and `prepared` when
//! the target is ready and measurement is about to start. Without the variable a point
//! costs one comparison.
//!
//! With `FSYNCLAB_TEST_PAUSE_UNTIL=signal` as well, the pause ends once a signal has asked
//! the run to stop, and the run goes on from there: how the tests send a signal at a known
//! phase (issue 14: a signal at any phase gives 128 + N and a clean machine).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// The environment variable naming the point to pause at.
pub const VARIABLE: &str = "FSYNCLAB_TEST_PAUSE";

/// The environment variable that, set to `signal`, ends the pause at the first signal.
pub const UNTIL: &str = "FSYNCLAB_TEST_PAUSE_UNTIL";

/// Pauses for good if `name` is the point (and hit) the environment asks for.
pub fn point(name: &str) {
    static WANTED: OnceLock<Option<(String, u32)>> = OnceLock::new();
    static HITS: AtomicU32 = AtomicU32::new(0);
    let wanted = WANTED.get_or_init(|| {
        let text = std::env::var(VARIABLE).ok()?;
        Some(match text.split_once('@') {
            Some((point, n)) => (point.to_string(), n.parse().unwrap_or(1)),
            None => (text, 1),
        })
    });
    let Some((point, nth)) = wanted else { return };
    if point != name || HITS.fetch_add(1, Ordering::SeqCst) + 1 != *nth {
        return;
    }
    note!("fsynclab: test pause at {name}");
    let until_signal = std::env::var(UNTIL).is_ok_and(|v| v == "signal");
    loop {
        if until_signal && crate::signals::received().is_some() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(if until_signal {
            20
        } else {
            3_600_000
        }));
    }
}
