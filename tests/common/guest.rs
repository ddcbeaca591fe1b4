//! What the tests that boot another kernel need: an installed Debian 6.1 kernel, QEMU and
//! virtme-ng, found the same way by every file that boots one.

use std::path::Path;

/// Why a test that boots a guest is skipped: what `scripts/setup.sh` installs for it.
pub const VM: &str =
    "QEMU (qemu-system-x86_64), virtme-ng (vng) and a Debian 6.1 kernel: scripts/setup.sh installs them";

/// The newest Debian 6.1 kernel installed (`6.1.0-NN-amd64`).
pub fn debian_kernel() -> Option<String> {
    let mut releases: Vec<String> = std::fs::read_dir("/boot")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("vmlinuz-").map(str::to_string))
        .filter(|r| r.starts_with("6.1.0-") && r.ends_with("-amd64"))
        .filter(|r| Path::new("/lib/modules").join(r).is_dir())
        .collect();
    releases.sort_by_key(|r| r.split('-').nth(2).and_then(|n| n.parse::<u32>().ok()));
    releases.pop()
}

/// Whether a guest can boot here: QEMU, virtme-ng and a Debian 6.1 kernel.
pub fn vm_ready() -> bool {
    let tool = fsynclab::testbed::command::find_tool;
    tool("qemu-system-x86_64").is_some() && tool("vng").is_some() && debian_kernel().is_some()
}

/// How many guests the tests of a file boot at once. A TCG guest runs its virtual CPUs on
/// one host thread (src/testbed/vm/launch.rs), so two guests keep the project's two cores
/// busy where one left a core idle; more would only share them.
const GUESTS_AT_ONCE: usize = 2;

/// The calling test's turn to boot a guest: at most [`GUESTS_AT_ONCE`] of a file's tests
/// hold one at a time. Each guest is a run of its own (its own backing directory, state
/// directory and store), as two users' runs beside each other are.
pub fn a_guests_turn() -> GuestTurn {
    let (lock, freed) = &SLOTS;
    let mut taken = lock.lock().unwrap_or_else(|p| p.into_inner());
    while *taken >= GUESTS_AT_ONCE {
        taken = freed.wait(taken).unwrap_or_else(|p| p.into_inner());
    }
    *taken += 1;
    GuestTurn
}

static SLOTS: (std::sync::Mutex<usize>, std::sync::Condvar) = (std::sync::Mutex::new(0), std::sync::Condvar::new());

/// A turn [`a_guests_turn`] gave: the slot is freed when it is dropped, also when the test
/// panics.
pub struct GuestTurn;

impl Drop for GuestTurn {
    fn drop(&mut self) {
        let (lock, freed) = &SLOTS;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
        freed.notify_one();
    }
}
