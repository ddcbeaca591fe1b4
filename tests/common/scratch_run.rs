//! The command line of a run on a scratch filesystem ([`ScratchRun`]), built by name
//! instead of flag by flag, so that the tests do not spell the same run out each time.

use super::{bin, fsynclab};
use assert_cmd::Command;

/// The command line of a run on a scratch filesystem, built by name instead of flag by flag:
///
/// ```ignore
/// common::ScratchRun::run("overwrite-fsync")
///     .quiet()
///     .set("duration", "60s")
///     .fs("ext4")
///     .size("256M")
///     .device("hdd-5400")
///     .backing(dir.path())
///     .command()
/// ```
///
/// is `fsynclab run overwrite-fsync -q --set duration=60s --scratch ext4 --scratch-size 256M
/// --device hdd-5400 --backing DIR`. Each call appends its arguments in the order it is
/// made, so that a test says its command line in the order it always did; what the builder
/// does not name goes in with [`ScratchRun::arg`] and [`ScratchRun::args`].
#[derive(Clone, Debug, Default)]
pub struct ScratchRun {
    args: Vec<std::ffi::OsString>,
}

impl ScratchRun {
    /// `fsynclab run SCENARIO`.
    pub fn run(scenario: &str) -> ScratchRun {
        ScratchRun::default().arg("run").arg(scenario)
    }

    /// `fsynclab probe`.
    pub fn probe() -> ScratchRun {
        ScratchRun::default().arg("probe")
    }

    /// `fsynclab exec` (the command follows with `.arg("--").args(...)`).
    pub fn exec() -> ScratchRun {
        ScratchRun::default().arg("exec")
    }

    /// No subcommand: the scratch flags alone, for a helper that puts its own in front.
    pub fn flags() -> ScratchRun {
        ScratchRun::default()
    }

    /// `-q`.
    pub fn quiet(self) -> ScratchRun {
        self.arg("-q")
    }

    /// `-f json`.
    pub fn json(self) -> ScratchRun {
        self.args(["-f", "json"])
    }

    /// `--set KEY=VALUE`.
    pub fn set(self, key: &str, value: &str) -> ScratchRun {
        self.arg("--set").arg(format!("{key}={value}"))
    }

    /// `--scratch FS`: the filesystem made on the scratch device.
    pub fn fs(self, fs: &str) -> ScratchRun {
        self.args(["--scratch", fs])
    }

    /// `--scratch-size SIZE`.
    pub fn size(self, size: &str) -> ScratchRun {
        self.args(["--scratch-size", size])
    }

    /// `--device PROFILE`: the emulated disk under the scratch filesystem.
    pub fn device(self, profile: &str) -> ScratchRun {
        self.args(["--device", profile])
    }

    /// `--backing DIR`: where the image and the work directory are made.
    pub fn backing(self, dir: impl AsRef<std::ffi::OsStr>) -> ScratchRun {
        self.arg("--backing").arg(dir)
    }

    /// `--kernel K`: the run made in a guest booting K (`host`: no VM).
    pub fn kernel(self, kernel: impl AsRef<std::ffi::OsStr>) -> ScratchRun {
        self.arg("--kernel").arg(kernel)
    }

    /// `--kernel-timeout LIMIT`: how long the guest may take, boot included.
    pub fn kernel_timeout(self, limit: &str) -> ScratchRun {
        self.args(["--kernel-timeout", limit])
    }

    /// One more argument, as given.
    pub fn arg(mut self, arg: impl AsRef<std::ffi::OsStr>) -> ScratchRun {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    /// More arguments, as given.
    pub fn args<I>(mut self, args: I) -> ScratchRun
    where
        I: IntoIterator,
        I::Item: AsRef<std::ffi::OsStr>,
    {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// The arguments, in order, without the program.
    pub fn into_args(self) -> Vec<std::ffi::OsString> {
        self.args
    }

    /// The binary with these arguments, as [`fsynclab`] makes it (store off): for a run the
    /// test runs to its end.
    pub fn command(self) -> Command {
        let mut cmd = fsynclab();
        cmd.args(self.args);
        cmd
    }

    /// The binary with these arguments as a plain `std::process::Command` on [`bin`] and
    /// nothing else: for a run the test signals, or whose stderr it reads as it goes.
    pub fn process(self) -> std::process::Command {
        let mut cmd = std::process::Command::new(bin());
        cmd.args(self.args);
        cmd
    }
}
