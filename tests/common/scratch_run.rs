//! The command line of a run on a scratch filesystem ([`ScratchRun`]), built by name
//! instead of flag by flag, so that the tests do not spell the same run out each time.

use std::time::Duration;

use super::{assert_matches_schema, bin, fsynclab, PrivateState};
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

    /// `fsynclab exec` on a 64 MiB scratch FS over the emulated disk `device`, backed in
    /// `backing` (the command follows: [`ScratchRun::sh`]).
    pub fn exec_on(fs: &str, device: &str, backing: impl AsRef<std::ffi::OsStr>) -> ScratchRun {
        ScratchRun::exec().fs(fs).size("64M").device(device).backing(backing)
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

    /// `--output FILE`: where the result is written.
    pub fn output_to(self, file: impl AsRef<std::ffi::OsStr>) -> ScratchRun {
        self.arg("--output").arg(file)
    }

    /// `-- sh -c SCRIPT`: exec's command, a shell script.
    pub fn sh(self, script: &str) -> ScratchRun {
        self.args(["--", "sh", "-c", script])
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

    /// Runs the command to its end, waiting at most two minutes: its exit status and what it
    /// printed.
    pub fn output(self) -> std::process::Output {
        self.command()
            .timeout(Duration::from_secs(120))
            .output()
            .expect("fsynclab runs")
    }

    /// [`ScratchRun::output`] of a run that must succeed and print its result as JSON (give
    /// [`ScratchRun::json`]): the result, checked against the result schema.
    pub fn json_result(self) -> serde_json::Value {
        let out = self.output();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON result");
        assert_matches_schema(&result);
        result
    }

    /// The command started with the state directory `state` and the store off, its stderr
    /// piped (stdout to /dev/null): a run the test signals.
    pub fn spawn_in(self, state: &PrivateState) -> std::process::Child {
        self.process()
            .env(state.env().0, state.path())
            .env("FSYNCLAB_STORE", "off")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start fsynclab")
    }

    /// The binary with these arguments as a plain `std::process::Command` on [`bin`] and
    /// nothing else: for a run the test signals, or whose stderr it reads as it goes.
    pub fn process(self) -> std::process::Command {
        let mut cmd = std::process::Command::new(bin());
        cmd.args(self.args);
        cmd
    }
}
