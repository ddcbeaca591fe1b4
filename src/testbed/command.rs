//! External commands (`losetup`, `mkfs.*`, `mount`): run them, check the exit status and
//! turn a failure into one line with the command and its stderr.

use std::path::{Path, PathBuf};
use std::process::Command;

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
    let path = find_tool(tool).ok_or_else(|| anyhow::anyhow!("{tool} not found"))?;
    let out = Command::new(&path)
        .args(args)
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run {tool}: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let line = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
        anyhow::bail!("`{tool} {}` failed ({}): {line}", args.join(" "), out.status);
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
