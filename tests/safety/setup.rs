//! What the tests of this file share: the running test's turn and state directory (the tests
//! run one at a time), a sysctl put back when the test ends, and the runs they stop: a long
//! run in a directory, and a long run on a scratch filesystem over an emulated disk that sets
//! a sysctl, waited for until it measures.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, bin, ScratchRun};

/// The running test's turn and its state directory, named to every fsynclab it starts
/// (the variable is set in this process while the guard lives: the tests run one at a time),
/// with the results store off.
pub struct Serial {
    _state: common::PrivateState,
    // Dropped last: the next test's turn begins once this one's state directory is gone.
    _turn: std::sync::MutexGuard<'static, ()>,
}

impl Drop for Serial {
    fn drop(&mut self) {
        std::env::remove_var(common::STATE_DIR_ENV);
    }
}

pub fn serial() -> Serial {
    let turn = common::one_at_a_time();
    let state = common::PrivateState::new();
    std::env::set_var(common::STATE_DIR_ENV, state.path());
    // As common::fsynclab(): never the user's results store.
    std::env::set_var("FSYNCLAB_STORE", "off");
    Serial {
        _state: state,
        _turn: turn,
    }
}

/// The running test's state directory.
pub fn state_dir() -> PathBuf {
    PathBuf::from(std::env::var_os(common::STATE_DIR_ENV).expect("serial() sets the state directory"))
}

/// The state file of the run with `pid`.
pub fn state_file(pid: u32) -> PathBuf {
    state_dir().join(format!("{pid}.json"))
}

/// Puts a sysctl back when dropped.
pub struct SysctlGuard(&'static str, String);

impl SysctlGuard {
    pub fn new(name: &'static str) -> SysctlGuard {
        SysctlGuard(name, sysctl(name))
    }
}

impl Drop for SysctlGuard {
    fn drop(&mut self) {
        let _ = std::fs::write(format!("/proc/sys/vm/{}", self.0), &self.1);
    }
}

pub fn sysctl(name: &str) -> String {
    std::fs::read_to_string(format!("/proc/sys/vm/{name}"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// A long scratch run on an emulated disk with a sysctl set; returns once it is measuring.
pub fn start_scratch_run(backing: &Path) -> (Child, PathBuf) {
    let mut child = scratch_run(backing)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start fsynclab");
    let state = state_file(child.id());
    wait_until_measuring_on_scratch(backing, &mut child);
    (child, state)
}

/// Waits until the scratch run `child` on `backing` is measuring: prepared, and probing in
/// its scratch filesystem.
pub fn wait_until_measuring_on_scratch(backing: &Path, child: &mut Child) {
    let scratch = backing.join(format!("fsynclab-scratch-{}-", child.id()));
    let deadline = Instant::now() + Duration::from_secs(60);
    let mnt = loop {
        let found = std::fs::read_dir(backing)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().starts_with(&*scratch.to_string_lossy()));
        if let Some(dir) = found {
            break dir.join("mnt");
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("fsynclab ended ({status}) before it made its scratch directory");
        }
        assert!(
            Instant::now() < deadline,
            "no scratch directory in {}",
            backing.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    common::wait_until_measuring(&mnt, common::PROBE_FILE, child);
}

/// A long scratch run on an emulated disk with a sysctl set.
pub fn scratch_run(backing: &Path) -> Command {
    let mut cmd = ScratchRun::run("overwrite-fsync")
        .quiet()
        .set("duration", "60s")
        .set("file_size", "32M")
        .fs("ext4")
        .size("256M")
        .device("hdd-5400")
        .args(["--dirty-ratio", "13"])
        .backing(backing)
        .process();
    common::with_default_signals(&mut cmd);
    cmd
}

/// `fsynclab run overwrite-fsync --dir DIR` for about `duration`, with `extra` arguments.
pub fn dir_run(dir: &Path, duration: &str, extra: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    common::with_default_signals(&mut cmd);
    cmd.args(["run", "overwrite-fsync", "-q", "-f", "json", "--dir"])
        .arg(dir)
        .args(["--set", &format!("duration={duration}"), "--set", "sleep=100ms"])
        .args(["--set", "file_size=16M"])
        .args(extra);
    cmd
}
