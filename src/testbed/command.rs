//! External commands (`losetup`, `mkfs.*`, `mount`): run them, check the exit status and
//! turn a failure into one line with the command and its stderr.
//!
//! A tool dies with fsynclab (PR_SET_PDEATHSIG): a `mount` or `losetup` left running after
//! a SIGKILL could otherwise finish after `fsynclab cleanup` has looked, and leave a mount
//! or a loop device nothing records.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Result;

/// Directories searched for system tools besides `PATH` (root's tools live in sbin).
const SBIN: [&str; 4] = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"];

/// The full path of tool `name`, if it is installed.
pub fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(SBIN.iter().map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs `tool args...` and returns its stdout, or an error with its stderr on one line.
pub fn run(tool: &str, args: &[&str]) -> Result<String> {
    let out = output(tool, args)?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let line = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
        anyhow::bail!("`{tool} {}` failed ({}): {line}", args.join(" "), out.status);
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `tool args...` to its end, whatever its exit status says (a checker's verdict), and
/// returns what it printed; an error only when it could not be run.
pub fn output(tool: &str, args: &[&str]) -> Result<std::process::Output> {
    let path = find_tool(tool).ok_or_else(|| anyhow::anyhow!("{tool} not found"))?;
    let parent = std::process::id();
    let mut command = Command::new(&path);
    command
        .args(args)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: the closure runs in the child between fork and exec and calls only
    // async-signal-safe functions (prctl, getppid, _exit).
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // fsynclab died before the prctl: nobody would clean up after this tool.
            if libc::getppid() as u32 != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let child = command.spawn().map_err(|e| anyhow::anyhow!("cannot run {tool}: {e}"))?;
    super::pause::point(&format!("run:{tool}"));
    let out = child
        .wait_with_output()
        .map_err(|e| anyhow::anyhow!("cannot wait for {tool}: {e}"))?;
    Ok(out)
}
