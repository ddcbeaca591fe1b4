//! What the tests that boot another kernel need: an installed Debian 6.1 kernel, QEMU and
//! virtme-ng, found the same way by every file that boots one; a turn to boot one; and a run
//! in a guest with its own directories, which must leave nothing behind ([`GuestRun`]).

use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::{backing, fsynclab, leftovers, wait_at_most, PrivateState, ScratchRun, StderrLines};

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

/// One test's run in a guest booting the Debian 6.1 kernel: its turn among the file's guests
/// ([`a_guests_turn`]), the directory backing its disk (the run's TMPDIR too, where
/// virtme-ng leaves its exit-status file when it is killed), its state directory and a
/// store of its own; and the check that the run left nothing of any of them.
pub struct GuestRun {
    // Dropped in this order: a state file left is undone while the backing is still there.
    store_dir: tempfile::TempDir,
    pub state: PrivateState,
    pub backing: tempfile::TempDir,
    // Dropped last: the next guest boots once this one's directories are gone.
    _turn: GuestTurn,
}

impl GuestRun {
    /// Waits for the test's turn to boot a guest.
    pub fn new() -> GuestRun {
        let turn = a_guests_turn();
        GuestRun {
            backing: backing(),
            state: PrivateState::new(),
            store_dir: backing(),
            _turn: turn,
        }
    }

    /// The results store of the test's own (not in the backing directory, which must be left
    /// empty).
    pub fn store(&self) -> PathBuf {
        self.store_dir.path().join("store.sqlite")
    }

    /// fsynclab with the run's state directory and TMPDIR.
    pub fn fsynclab(&self) -> assert_cmd::Command {
        let mut cmd = fsynclab();
        cmd.env(self.state.env().0, self.state.env().1)
            .env("TMPDIR", self.backing.path());
        cmd
    }

    /// `fsynclab exec --kernel K --kernel-timeout LIMIT` on a scratch ext4 over hdd-7200,
    /// running `script` in the guest, as a process the test signals (its stderr piped).
    pub fn exec(&self, limit: &str, script: &str) -> std::process::Command {
        let mut cmd = ScratchRun::exec()
            .kernel(debian_kernel().unwrap())
            .kernel_timeout(limit)
            .fs("ext4")
            .device("hdd-7200")
            .backing(self.backing.path())
            .args(["--", "sh", "-c", script])
            .process();
        let (k, v) = self.state.env();
        cmd.env(k, v)
            .env("TMPDIR", self.backing.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        cmd
    }

    /// [`GuestRun::exec`] started, its stderr read as it comes.
    pub fn start(&self, limit: &str, script: &str) -> (Child, StderrLines) {
        let mut child = self.exec(limit, script).spawn().unwrap();
        let lines = StderrLines::of(&mut child);
        (child, lines)
    }

    /// [`GuestRun::exec`] run to its end, waited for at most `wait`: its exit status and
    /// stderr.
    pub fn exec_to_end(&self, limit: &str, script: &str, wait: Duration) -> (ExitStatus, String) {
        let (mut child, lines) = self.start(limit, script);
        let status = wait_at_most(&mut child, wait);
        (status, lines.all())
    }

    /// `command` (`fsynclab run SCENARIO`, `exec`) in the guest, on a scratch ext4 over
    /// hdd-7200, then `tail` (exec's `-- COMMAND` last), run to its end with a guest time limit
    /// of 5 minutes (waited for at most 6): its exit status and stderr.
    pub fn run(&self, command: ScratchRun, tail: &[&str]) -> (Option<i32>, String) {
        self.run_within(command.kernel_timeout("5m"), tail)
    }

    /// [`GuestRun::run`], with the guest's time limit `command`'s (`--kernel-timeout`, or the
    /// one fsynclab derives).
    pub fn run_within(&self, command: ScratchRun, tail: &[&str]) -> (Option<i32>, String) {
        let out = command
            .kernel(debian_kernel().unwrap())
            .fs("ext4")
            .device("hdd-7200")
            .backing(self.backing.path())
            .args(tail)
            .command()
            .env(self.state.env().0, self.state.env().1)
            .env("TMPDIR", self.backing.path())
            .timeout(Duration::from_secs(360))
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    }

    /// Nothing of the run is left: no QEMU serving its disk, nothing in the backing directory
    /// (no scratch directory, nothing of virtme-ng's), no state file.
    pub fn assert_nothing_left(&self) {
        let backing = self.backing.path();
        // A QEMU that has just been killed may still be going away.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !guests_under(backing).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(guests_under(backing), Vec::<u32>::new(), "QEMU left running");
        assert_eq!(
            leftovers(backing),
            Vec::<String>::new(),
            "left in the backing directory"
        );
        assert_eq!(leftovers(self.state.path()), Vec::<String>::new(), "state files left");
    }
}

/// QEMU processes serving a disk under `dir`: the guests of runs backed there.
pub fn guests_under(dir: &Path) -> Vec<u32> {
    let needle = dir.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            (cmdline.starts_with("/usr/bin/qemu-system") || cmdline.starts_with("qemu-system"))
                .then_some(())
                .filter(|_| cmdline.contains(&needle))
                .map(|_| pid)
        })
        .collect()
}
