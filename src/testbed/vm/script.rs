//! The shell script the guest runs: the directories whose paths are not plain bound at their
//! own paths ([`super::share`]), the working directory entered, then the command with the
//! facts it needs in its environment. It travels in a file of the results directory, not on
//! the kernel's command line, where virtme-ng puts `--exec`'s script in base64: x86 keeps
//! 2048 bytes of it (COMMAND_LINE_SIZE) and cuts the rest, virtme-ng's `init=` last among
//! them, and a guest whose line was cut hung at boot until its time limit.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use super::GUEST_RESULTS_ENV;
use crate::environment::{VmInfo, HOST_ENV, VM_ENV};

/// The file in the results directory that holds the script.
pub(super) const FILE: &str = "command.sh";

/// What the guest's script does.
pub(super) struct Script<'a> {
    pub vm: &'a VmInfo,
    /// Where the command writes the results it would record (its path on the host, which is
    /// its path in the guest once the binds are made).
    pub results: &'a Path,
    /// (guest path, own path) of each directory shared under another name.
    pub binds: &'a [(PathBuf, PathBuf)],
    /// The directory the command runs in (the host's current directory): the guest starts
    /// in it when it can see it, else in /.
    pub cwd: &'a Path,
    /// The command: the binary's path in the guest, then its arguments.
    pub argv: &'a [OsString],
    /// Whether the command's stdout is shown.
    pub stdout_shown: bool,
}

impl Script<'_> {
    /// The script's text: the binds, the working directory, then the command, with the facts
    /// and the results directory in the environment and the host's `FSYNCLAB_*` variables
    /// passed on (but its state directory).
    pub(super) fn text(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (guest, own) in self.binds {
            let (guest, own) = (quote(guest.as_os_str().as_bytes()), quote(own.as_os_str().as_bytes()));
            out.extend_from_slice(
                format!(
                    "mkdir -p {own} 2>/dev/null; mount --bind {guest} {own} || {{ echo \"fsynclab: the guest cannot see \"{own}\" (shared as \"{guest}\")\" >&2; exit 1; }}\n"
                )
                .as_bytes(),
            );
        }
        out.extend_from_slice(
            format!("cd {} 2>/dev/null || cd /\n", quote(self.cwd.as_os_str().as_bytes())).as_bytes(),
        );
        out.extend_from_slice(self.command().as_bytes());
        out.push(b'\n');
        out
    }

    fn command(&self) -> String {
        let mut words = vec!["exec".to_string(), "env".to_string()];
        words.push(quote(format!("{VM_ENV}={}", self.vm.to_env()).as_bytes()));
        let mut results = format!("{GUEST_RESULTS_ENV}=").into_bytes();
        results.extend_from_slice(self.results.as_os_str().as_bytes());
        words.push(quote(&results));
        // The run is this machine's, made in a VM: named as the host's runs are (the guest's
        // hostname is virtme-ng's), unless the farm names the host already (passed on below).
        if std::env::var_os(HOST_ENV).is_none() {
            words.push(quote(
                format!("{HOST_ENV}={}", crate::environment::this_host().name).as_bytes(),
            ));
        }
        for (k, v) in std::env::vars_os() {
            let name = k.to_string_lossy();
            // Not the state directory: the guest's steps are undone with the guest, and the
            // host's state files would be leftovers of dead runs to a guest that cannot see
            // their processes.
            if name.starts_with("FSYNCLAB_") && ![VM_ENV, GUEST_RESULTS_ENV, "FSYNCLAB_STATE_DIR"].contains(&&*name) {
                let mut kv = k.as_bytes().to_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                words.push(quote(&kv));
            }
        }
        words.extend(self.argv.iter().map(|a| quote(a.as_bytes())));
        if !self.stdout_shown {
            words.push(">/dev/null".into());
        }
        words.join(" ")
    }
}

/// `word` for a POSIX shell: in single quotes, each single quote closed, escaped, reopened.
pub(super) fn quote(word: &[u8]) -> String {
    let text = String::from_utf8_lossy(word);
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_with_quotes_and_spaces_is_one_shell_word() {
        assert_eq!(quote(b"it's a b"), r"'it'\''s a b'");
    }

    #[test]
    fn a_directory_shared_under_another_name_is_bound_before_the_command_runs_in_its_own() {
        let vm = VmInfo::default();
        let binds = [(PathBuf::from("/run/fsynclab-share-0"), PathBuf::from("/work/my runs,1"))];
        let argv = [OsString::from("/run/fsynclab-bin/fsynclab"), OsString::from("probe")];
        let script = Script {
            vm: &vm,
            results: Path::new("/work/my runs,1/fsynclab-scratch-1/results"),
            binds: &binds,
            cwd: Path::new("/work/my runs,1"),
            argv: &argv,
            stdout_shown: true,
        };
        let text = String::from_utf8(script.text()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with(
                "mkdir -p '/work/my runs,1' 2>/dev/null; mount --bind '/run/fsynclab-share-0' '/work/my runs,1' || "
            ),
            "{text}"
        );
        assert_eq!(lines[1], "cd '/work/my runs,1' 2>/dev/null || cd /");
        assert!(lines[2].starts_with("exec env "), "{text}");
        assert!(
            lines[2].contains("'FSYNCLAB_GUEST_RESULTS=/work/my runs,1/fsynclab-scratch-1/results'"),
            "{text}"
        );
        assert!(lines[2].ends_with(" '/run/fsynclab-bin/fsynclab' 'probe'"), "{text}");
        assert_eq!(lines.len(), 3);
    }
}
