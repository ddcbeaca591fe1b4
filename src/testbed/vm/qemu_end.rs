//! How QEMU ended when something other than fsynclab ended it. virtme-ng exits 255 both for
//! a guest whose kernel panicked and for a QEMU killed from outside (it keeps QEMU's wait
//! status to itself), and a killed QEMU was reported as "its kernel panicked or QEMU
//! failed" with an unrelated console line as last words. So QEMU is started through a
//! wrapper of ours, found first on virtme-ng's PATH, which waits for it and writes the
//! signal that killed it (SIGKILL included) to a file; and QEMU's own line for the signals it
//! catches ("terminating on signal 15 from pid 812"), after which it exits 0, is heard on
//! its stderr.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use super::script::quote;

/// What QEMU's wrapper and its stderr tell of how it ended.
pub(super) struct QemuEnd {
    /// The directory holding the wrapper, put first on virtme-ng's PATH.
    bin: PathBuf,
    /// Where the wrapper writes QEMU's exit status when a signal ended it.
    status_file: PathBuf,
    /// The signal QEMU said it terminated on (0: none heard).
    heard: Arc<AtomicI32>,
}

impl QemuEnd {
    /// Writes the wrapper of `qemu` (the real binary's path) into `dir`.
    pub(super) fn prepare(dir: &Path, qemu: &Path) -> std::io::Result<QemuEnd> {
        let bin = dir.join("bin");
        std::fs::create_dir(&bin)?;
        let status_file = dir.join("qemu-signal");
        let name = qemu.file_name().unwrap_or(qemu.as_os_str());
        let wrapper = bin.join(name);
        let (qemu, status) = (
            quote(qemu.as_os_str().as_encoded_bytes()),
            quote(status_file.as_os_str().as_encoded_bytes()),
        );
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\n# fsynclab's: runs QEMU and notes the signal that ends it. The shell's own\n# stderr goes nowhere (it would say \"Killed\"); QEMU's is the one it was given.\nexec 3>&2 2>/dev/null\n(exec 2>&3 3>&-; exec {qemu} \"$@\")\nstatus=$?\n[ \"$status\" -gt 128 ] && echo $((status - 128)) > {status}\nexit \"$status\"\n"
            ),
        )?;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))?;
        Ok(QemuEnd {
            bin,
            status_file,
            heard: Arc::default(),
        })
    }

    /// virtme-ng's PATH: the wrapper's directory first.
    pub(super) fn path(&self) -> OsString {
        let mut path = self.bin.clone().into_os_string();
        if let Some(rest) = std::env::var_os("PATH") {
            path.push(":");
            path.push(rest);
        }
        path
    }

    /// A listener of QEMU's stderr lines, which hears the signal it says it ended on.
    pub(super) fn ear(&self) -> impl Fn(&[u8]) + Send + 'static {
        let heard = Arc::clone(&self.heard);
        move |line: &[u8]| {
            if let Some(sig) = terminated_on(line) {
                heard.store(sig, Ordering::Relaxed);
            }
        }
    }

    /// The signal that ended QEMU, if one did.
    pub(super) fn signal(&self) -> Option<i32> {
        let written = std::fs::read_to_string(&self.status_file)
            .ok()
            .and_then(|s| s.trim().parse().ok());
        written.or(match self.heard.load(Ordering::Relaxed) {
            0 => None,
            sig => Some(sig),
        })
    }
}

/// The signal in QEMU's `qemu-system-x86_64: terminating on signal 15 from pid 812 (kill)`.
fn terminated_on(line: &[u8]) -> Option<i32> {
    let text = std::str::from_utf8(line).ok()?;
    let (_, rest) = text.split_once("terminating on signal ")?;
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qemus_line_for_a_signal_it_caught_names_the_signal() {
        assert_eq!(
            terminated_on(b"qemu-system-x86_64: terminating on signal 15 from pid 812 (kill)"),
            Some(15)
        );
        assert_eq!(terminated_on(b"qemu-system-x86_64: terminating on signal 2"), Some(2));
        assert_eq!(terminated_on(b"[    5.1] Kernel panic - not syncing"), None);
    }

    #[test]
    fn the_wrapper_notes_the_signal_that_killed_qemu() {
        let dir = tempfile::tempdir().unwrap();
        // A stand-in for QEMU that kills itself as `kill -9` from outside would.
        let fake = dir.path().join("fake-qemu");
        std::fs::write(&fake, "#!/bin/sh\necho its-own-line >&2; kill -9 $$\n").unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let end = QemuEnd::prepare(dir.path(), &fake).unwrap();
        let out = std::process::Command::new("fake-qemu")
            .env("PATH", end.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(137));
        // QEMU's stderr passes; the shell adds nothing of its own ("Killed").
        assert_eq!(String::from_utf8_lossy(&out.stderr), "its-own-line\n");
        assert_eq!(end.signal(), Some(9));
        // One that exits by itself leaves nothing said.
        std::fs::write(&fake, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::remove_file(dir.path().join("qemu-signal")).unwrap();
        assert!(std::process::Command::new("fake-qemu")
            .env("PATH", end.path())
            .status()
            .unwrap()
            .success());
        assert_eq!(end.signal(), None);
    }
}
