//! External programs fsynclab starts and waits for (`mkfs`, `mount`, `losetup`, a checker,
//! `sbatch`, `squeue`, a power cut's `--check`): each runs in a process group of its own,
//! under a stated time limit, and ends with fsynclab.
//!
//! - Its own process group: a signal sent to fsynclab's group (GNU `timeout`, a terminal's
//!   Ctrl-C) does not reach it behind fsynclab's back; fsynclab decides what it gets.
//! - A limit ([`Bounded::limit`]): past it the group gets SIGTERM, then SIGKILL after
//!   [`GRACE`], and the caller hears [`Outcome::TimedOut`].
//! - A signal to fsynclab while it waits: with [`OnSignal::Stop`] (setting up, a check) the
//!   group is ended the same way and the caller hears [`Outcome::Interrupted`], so that the
//!   undo starts instead of waiting; with [`OnSignal::Finish`] (an undo step: `umount`,
//!   `losetup -d`) the program is left to finish within its limit.
//! - Ending with fsynclab: whatever the program left in its group when it ended (`sh -c
//!   'server &'`) is killed; PR_SET_PDEATHSIG kills the program if fsynclab dies; and a second
//!   Ctrl-C, which exits at once, kills every group still waited for
//!   ([`crate::signals::end_with_us`]).

use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::{waitid, waitpid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use crate::units::format_duration;

/// How long a program has between SIGTERM and SIGKILL once fsynclab ends it.
pub(crate) const GRACE: Duration = Duration::from_secs(2);

/// How often the wait looks at the program, the clock and the signals.
const POLL: Duration = Duration::from_millis(10);

/// What a signal to fsynclab does to the program it waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnSignal {
    /// The program is ended (setting up, a check): the undo starts at once.
    Stop,
    /// The program finishes within its limit (an undo step must not be cut short).
    Finish,
}

/// How a program fsynclab waited for ended.
#[derive(Debug)]
pub(crate) enum Outcome {
    Exited(ExitStatus),
    /// It ran past its limit and was ended.
    TimedOut,
    /// A signal to fsynclab (its number) ended it.
    Interrupted(i32),
}

/// A program run to its end or its limit, with what it printed when that was piped.
#[derive(Debug)]
pub(crate) struct Finished {
    pub outcome: Outcome,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// The rules one program runs under.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bounded {
    /// How long it may run.
    pub limit: Duration,
    pub on_signal: OnSignal,
    /// After this long, fsynclab says once that it still waits, and for how long at most
    /// (a program that may sit silent, as `sbatch` retrying an unreachable controller).
    pub say_after: Option<Duration>,
}

impl Bounded {
    /// Starts `cmd` in a process group of its own and waits for it as the rules say. The
    /// error is only for a program that could not be started (`NotFound` when it is not there).
    pub(crate) fn run(self, cmd: &mut Command) -> std::io::Result<Finished> {
        self.run_then(cmd, || {})
    }

    /// As [`Bounded::run`], calling `started` once the program runs.
    pub(crate) fn run_then(self, cmd: &mut Command, started: impl FnOnce()) -> std::io::Result<Finished> {
        cmd.process_group(0);
        dies_with_us(cmd);
        let mut child = cmd.spawn()?;
        let group = Registered::new(child.id() as i32);
        let stdout = child.stdout.take().map(drain);
        let stderr = child.stderr.take().map(drain);
        started();
        let program = cmd.get_program().to_string_lossy().into_owned();
        let outcome = self.wait(&mut child, &group, &program)?;
        let collect = |h: Option<std::thread::JoinHandle<Vec<u8>>>| h.and_then(|h| h.join().ok()).unwrap_or_default();
        Ok(Finished {
            outcome,
            stdout: collect(stdout),
            stderr: collect(stderr),
        })
    }

    /// As [`Bounded::run`], with what the program prints to stdout relayed to fsynclab's own
    /// as it comes, through a pipe (a program that reopens `/proc/self/fd/1`, as QEMU does,
    /// would truncate a file fsynclab's output is redirected to), and each line of its stderr
    /// (without its newline) given to `line`, which says where it goes.
    pub(crate) fn run_relayed_lines(
        self,
        cmd: &mut Command,
        mut line: impl FnMut(&[u8]) + Send + 'static,
    ) -> std::io::Result<Outcome> {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd.process_group(0);
        dies_with_us(cmd);
        let mut child = cmd.spawn()?;
        let group = Registered::new(child.id() as i32);
        let out = child.stdout.take().map(|p| relay(p, std::io::stdout));
        let err = child.stderr.take().map(|pipe| {
            std::thread::spawn(move || {
                use std::io::BufRead as _;
                for l in std::io::BufReader::new(pipe).split(b'\n').map_while(Result::ok) {
                    line(&l);
                }
            })
        });
        let program = cmd.get_program().to_string_lossy().into_owned();
        let outcome = self.wait(&mut child, &group, &program)?;
        // The group is gone with its leader: the pipes' write ends are closed.
        for relay in [out, err].into_iter().flatten() {
            let _ = relay.join();
        }
        Ok(outcome)
    }

    fn wait(&self, child: &mut Child, group: &Registered, program: &str) -> std::io::Result<Outcome> {
        let started = Instant::now();
        let mut said = false;
        loop {
            if exited_unreaped(child.id())? {
                // The group's other members (what it started in the background) end with it;
                // the leader, not yet reaped, keeps the group's id from being reused.
                group.signal(Signal::SIGKILL);
                return Ok(Outcome::Exited(child.wait()?));
            }
            let interrupted = match self.on_signal {
                OnSignal::Stop => crate::signals::received(),
                OnSignal::Finish => None,
            };
            if let Some(sig) = interrupted {
                end(child, group)?;
                return Ok(Outcome::Interrupted(sig));
            }
            if started.elapsed() >= self.limit {
                end(child, group)?;
                return Ok(Outcome::TimedOut);
            }
            if let Some(after) = self.say_after.filter(|a| !said && started.elapsed() >= *a) {
                said = true;
                note!(
                    "fsynclab: still waiting for {program} after {}; it is stopped after {}{}",
                    format_duration(after),
                    format_duration(self.limit),
                    match self.on_signal {
                        OnSignal::Stop => " (Ctrl-C stops it now)",
                        OnSignal::Finish => "",
                    }
                );
            }
            std::thread::sleep(POLL);
        }
    }
}

/// The program `cmd` starts gets SIGKILL when fsynclab dies (PR_SET_PDEATHSIG), and does
/// not start if fsynclab died before that was set: nobody would end it.
pub(crate) fn dies_with_us(cmd: &mut Command) {
    let parent = nix::unistd::getpid();
    // SAFETY: the closure runs in the child between fork and exec and calls only
    // async-signal-safe functions (prctl, getppid, _exit), on nothing but `parent`, a copy.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
            if nix::unistd::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

/// SIGTERM to the group, SIGKILL after [`GRACE`], and the leader reaped.
fn end(child: &mut Child, group: &Registered) -> std::io::Result<()> {
    group.signal(Signal::SIGTERM);
    let deadline = Instant::now() + GRACE;
    while Instant::now() < deadline {
        if exited_unreaped(child.id())? {
            break;
        }
        std::thread::sleep(POLL);
    }
    group.signal(Signal::SIGKILL);
    child.wait().map(|_| ())
}

/// Whether `pid` (our child) has exited, without reaping it.
fn exited_unreaped(pid: u32) -> std::io::Result<bool> {
    waitid_unreaped(pid, WaitPidFlag::WNOHANG)
}

/// Waits until our child `pid` has exited, leaving it a zombie so that its pid (and its
/// process group's id) cannot be reused while fsynclab may still signal it.
pub(crate) fn wait_unreaped(pid: u32) -> std::io::Result<()> {
    waitid_unreaped(pid, WaitPidFlag::empty()).map(|_| ())
}

/// waitid(2) for our child `pid` with WEXITED | WNOWAIT and `flags`: whether it has exited.
fn waitid_unreaped(pid: u32, flags: WaitPidFlag) -> std::io::Result<bool> {
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT | flags;
    loop {
        match waitid(Id::Pid(pid_of(pid)), flags) {
            Ok(WaitStatus::StillAlive) => return Ok(false),
            // EINVAL, which these flags cannot get from the kernel, is nix saying that the
            // call succeeded for a child ended by a signal it has no name for (a real-time
            // one): it has exited all the same.
            Ok(_) | Err(Errno::EINVAL) => return Ok(true),
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Reaps our child `pid` if it has exited (waitpid(2) with WNOHANG); whether it had.
pub(crate) fn reap_if_exited(pid: u32) -> bool {
    match waitpid(pid_of(pid), Some(WaitPidFlag::WNOHANG)) {
        Ok(WaitStatus::StillAlive) => false,
        // Reaped, ended by a real-time signal (see `waitid_unreaped`).
        Ok(_) | Err(Errno::EINVAL) => true,
        Err(_) => false,
    }
}

/// `pid` as the system calls name a process.
fn pid_of(pid: u32) -> Pid {
    Pid::from_raw(pid as i32)
}

/// Copies a pipe to `to()` (fsynclab's stdout or stderr) as it comes, on a thread of its own,
/// to its end; a reader of ours that went away does not stop the draining.
fn relay<W: std::io::Write + 'static>(
    mut pipe: impl std::io::Read + Send + 'static,
    to: fn() -> W,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut out = to();
        let mut buf = [0u8; 8192];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let _ = out.write_all(&buf[..n]).and_then(|_| out.flush());
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    })
}

/// Reads a pipe to its end on a thread of its own, so that a chatty program never blocks.
fn drain(mut pipe: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}

/// A program's process group, killed by a second Ctrl-C while it is waited for
/// ([`crate::signals::end_with_us`]).
struct Registered {
    group: i32,
    _held: crate::signals::EndsWithUs,
}

impl Registered {
    fn new(group: i32) -> Registered {
        Registered {
            group,
            _held: crate::signals::end_with_us(group),
        }
    }

    /// The group's leader is our child, not yet reaped, so the id names its group and no
    /// other.
    fn signal(&self, sig: Signal) {
        let _ = killpg(Pid::from_raw(self.group), sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    #[test]
    fn a_program_that_ends_gives_its_status_and_output() {
        let rules = Bounded {
            limit: Duration::from_secs(10),
            on_signal: OnSignal::Stop,
            say_after: None,
        };
        let done = rules.run(&mut sh("echo out; echo err >&2; exit 3")).expect("sh runs");
        match done.outcome {
            Outcome::Exited(s) => assert_eq!(s.code(), Some(3)),
            other => panic!("expected an exit, got {other:?}"),
        }
        assert_eq!(done.stdout, b"out\n");
        assert_eq!(done.stderr, b"err\n");
    }

    #[test]
    fn a_program_past_its_limit_is_ended_with_what_it_started() {
        let dir = tempfile::tempdir().expect("temp dir");
        let pidfile = dir.path().join("pid");
        let script = format!("sleep 1000 & echo $! > {}; wait", pidfile.display());
        let rules = Bounded {
            limit: Duration::from_millis(300),
            on_signal: OnSignal::Finish,
            say_after: None,
        };
        let t0 = Instant::now();
        let done = rules.run(&mut sh(&script)).expect("sh runs");
        assert!(matches!(done.outcome, Outcome::TimedOut), "{:?}", done.outcome);
        assert!(t0.elapsed() < Duration::from_secs(5), "took {:?}", t0.elapsed());
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .expect("pid")
            .trim()
            .parse()
            .expect("a pid");
        // Killed, it may stay a zombie for a moment until init reaps it.
        let gone = (0..100).any(|_| {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let gone = state.is_empty() || state.contains(") Z ");
            if !gone {
                std::thread::sleep(Duration::from_millis(20));
            }
            gone
        });
        assert!(gone, "the background sleep {pid} outlived its group");
    }
}
